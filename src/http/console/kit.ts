/**
 * What every console page is built with: who the operator is and whether they may (the
 * access check before each route), the frame of a page, the operations' dependencies with
 * the operator's authority, and the small readers and writers every noun's pages share.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { ACCOUNT_PATH, CONSOLE_PATHS, SIGN_IN_PATH } from '../../core/endpoints.ts';
import type { AuditEvent } from '../../core/events.ts';
import { GRANT_DEVICE_CODE, GRANT_JWT_BEARER, GRANT_TOKEN_EXCHANGE, type RawParams } from '../../core/protocol.ts';
import { OPERATOR_ROLES, ROLE_SCOPES, type OperatorRole } from '../../core/scopes.ts';
import { sendLogoutTokens } from '../../flows/logout/backchannel.ts';
import { roleAllows, type AdminArea } from '../../flows/manage/admin-token.ts';
import { mayAssignRole } from '../../flows/manage/authority.ts';
import type { ManageDeps } from '../../flows/manage/deps.ts';
import type { ManageError } from '../../flows/manage/errors.ts';
import { sameValue, type FormValue, type FormValues } from '../../flows/manage/fields/field.ts';
import { operatorRefusal } from '../../flows/second-factor/policy.ts';
import type { SessionRecord, UserRecord } from '../../store/types.ts';
import { forbiddenPage, type ConsoleFrame, type ConsoleSection, type EventView, type OtherChange } from '../../ui/console.ts';
import { html, type SafeHtml } from '../../ui/html.ts';
import { isMessageKey, type MessageKey } from '../../ui/i18n.ts';
import type { Ui } from '../../ui/pages.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { forRequest } from '../deps.ts';
import { rawForm } from '../form.ts';
import { csrfToken, safeReturnTo, signedInUser } from '../session.ts';

/** A signed-in person the console let through: their role, and the admin scopes it stands for. */
export interface Operator {
  readonly session: SessionRecord;
  readonly user: UserRecord;
  readonly role: OperatorRole;
}

/** The operators the access check let through, by request: every noun's pages and the error handler read it. */
const operators = new WeakMap<FastifyRequest, Operator>();

/** The operator of a request that passed the access check. */
export function operatorOf(request: FastifyRequest): Operator {
  const operator = operators.get(request);
  if (!operator) throw new Error(`${request.url}: the route needs the console's access check`);
  return operator;
}

/** The operator of a request, when it passed the access check. */
export const knownOperator = (request: FastifyRequest): Operator | undefined => operators.get(request);

/** A grant as people write it: a URN by its last part (`device_code`, `token-exchange`). */
export const grantName = (grant: string): string =>
  grant === GRANT_DEVICE_CODE ? 'device_code' : grant === GRANT_TOKEN_EXCHANGE ? 'token-exchange' : grant === GRANT_JWT_BEARER ? 'jwt-bearer' : grant;

export const userPath = (username: string) => `${CONSOLE_PATHS.users}/${encodeURIComponent(username)}`;
export const appPath = (clientId: string) => `${CONSOLE_PATHS.apps}/${encodeURIComponent(clientId)}`;
export const apiPath = (identifier: string) => `${CONSOLE_PATHS.apis}/${encodeURIComponent(identifier)}`;

export function single(params: RawParams, name: string, max = 4096): string {
  const value = params[name];
  return typeof value === 'string' ? value.slice(0, max) : '';
}

export const lines = (value: string) =>
  value
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);

/**
 * The operations' refusals in the reader's language: the common ones (an unknown user, app or
 * API, a scope taken or still in use) whole, the rest by their kind and the field they name,
 * with the operation's own English words in small print (they carry the protocol's detail).
 */
const REASONS: readonly { readonly pattern: RegExp; readonly key: MessageKey; readonly names: readonly string[] }[] = [
  { pattern: /^no user named (.+)$/s, key: 'console.reason.noUser', names: ['username'] },
  { pattern: /^no client with id (.+)$/s, key: 'console.reason.noApp', names: ['id'] },
  { pattern: /^no API with identifier (.+)$/s, key: 'console.reason.noApi', names: ['identifier'] },
  { pattern: /^an API with identifier (.+) is already registered$/s, key: 'console.reason.apiExists', names: ['identifier'] },
  { pattern: /^no identity provider (.+)$/s, key: 'console.reason.noProvider', names: ['id'] },
  { pattern: /^no webhook with id (.+)$/s, key: 'console.reason.noWebhook', names: ['id'] },
  { pattern: /^no SAML service provider (.+)$/s, key: 'console.reason.noSamlSp', names: ['id'] },
  { pattern: /^no organization (.+)$/s, key: 'console.reason.noOrganization', names: ['id'] },
  { pattern: /^no trusted issuer (.+)$/s, key: 'console.reason.noTrustedIssuer', names: ['issuer'] },
  { pattern: /^email (.+): another account has this e-mail address$/s, key: 'console.reason.emailTaken', names: ['email'] },
  { pattern: /^scope (\S+) already belongs to /, key: 'console.reason.scopeTaken', names: ['scope'] },
  { pattern: /^scope (\S+) is in the registration of client (\S+) \((.*)\): /s, key: 'console.reason.scopeInUse', names: ['scope', 'id', 'app'] },
];

export function reasonOf(ui: Ui, error: ManageError): SafeHtml {
  const { t } = ui;
  for (const { pattern, key, names } of REASONS) {
    const found = pattern.exec(error.message);
    if (found) return t.html('console.failed', { reason: t.text(key, Object.fromEntries(names.map((name, i) => [name, found[i + 1]!]))) });
  }
  const fieldKey = error.field === null ? null : `console.field.${error.field}`;
  const reason =
    fieldKey !== null && isMessageKey(fieldKey) && error.kind === 'invalid'
      ? t.text('console.reason.field', { field: t.text(fieldKey) })
      : t.text(`console.reason.${error.kind}`);
  return html`${t.html('console.failed', { reason })} <small class="detail" lang="en" dir="ltr">${error.message}</small>`;
}

export const shown = (ui: Ui, value: FormValue) =>
  Array.isArray(value) ? value.join(', ') : typeof value === 'boolean' ? ui.t.text(value ? 'console.yes' : 'console.no') : String(value).replace(/\n/g, ', ');

/**
 * An edit form's values as it was opened with them, carried back as its hidden `original`:
 * what the operator changed is what they post otherwise than these, not otherwise than what
 * is stored by then, which would undo a change someone else made meanwhile.
 */
export const encodeOriginal = (values: FormValues): string => Buffer.from(JSON.stringify(values)).toString('base64url');

/** The `original` an edit form posted back (encodeOriginal), or null when it is not one with every field of `keys`. */
export function postedOriginal(form: RawParams, keys: readonly string[]): FormValues | null {
  try {
    const parsed = JSON.parse(Buffer.from(single(form, 'original', 64 * 1024), 'base64url').toString('utf8')) as unknown;
    return parsed !== null && typeof parsed === 'object' && keys.every((key) => key in parsed) ? (parsed as FormValues) : null;
  } catch {
    return null;
  }
}

/** The fields of `keys` someone else changed after the form was opened with `original`, as a stale edit's warning shows them (ui/console.ts staleChange). */
export const otherChanges = (ui: Ui, keys: readonly string[], original: FormValues, now: FormValues): OtherChange[] =>
  keys
    .filter((key) => !sameValue(now[key], original[key]))
    .map((key) => ({ field: key, before: shown(ui, original[key] ?? ''), after: shown(ui, now[key] ?? '') }));

/** A refused stale edit's form: the values as stored now, with the fields this operator changed as they posted them. */
export const overNow = (now: FormValues, values: FormValues, changed: readonly string[]): FormValues => ({
  ...now,
  ...Object.fromEntries(changed.map((key) => [key, values[key]!])),
});

/**
 * An edit of a noun that carries no version (an API, a provider, an organization, a SAML
 * service provider): the values the form was opened with stand for one (RFC 9110 §13.1.1).
 * `changed`: the fields the operator changed; `otherChange`: those someone else changed
 * meanwhile, which refuse the edit with 409, the form shown again as `merged`.
 */
export function editOverOriginal(
  ui: Ui,
  keys: readonly string[],
  original: FormValues,
  now: FormValues,
  values: FormValues,
): { readonly changed: string[]; readonly otherChange: OtherChange[]; readonly merged: FormValues } {
  const changed = keys.filter((key) => !sameValue(values[key], original[key]));
  return { changed, otherChange: otherChanges(ui, keys, original, now), merged: overNow(now, values, changed) };
}

/** The access check and page helpers of a noun's plugin (`app`: where its routes are registered). */
export function consoleKit(app: FastifyInstance, { deps, pages, formPost }: BrowserRoutesOptions) {
  const uiOf = (request: FastifyRequest, user: UserRecord): Ui => pages.ui(request, { user: user.locale });

  /**
   * Where to come back to after signing in again: this page; for a form, the page it names, or
   * the page at its address (an app's edit form), or the one its action belongs to (a user's).
   */
  const returnPath = (request: FastifyRequest): string => {
    if (request.method === 'GET') return safeReturnTo(request.url);
    const named = single(rawForm(request), 'return_to');
    if (named) return safeReturnTo(named);
    const path = request.url.split('?')[0]!;
    return safeReturnTo(app.hasRoute({ method: 'GET', url: request.routeOptions.url ?? '' }) ? path : path.slice(0, path.lastIndexOf('/')));
  };

  /**
   * preHandler of a console route: the person is signed in (else sent to sign in), has a
   * role (else 403), one that allows this (else 403), signed in with a second factor, and
   * for a change recently (else asked to sign in again, and brought back).
   */
  const access =
    (area: AdminArea, write: boolean): preHandlerAsyncHookHandler =>
    async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      const signedIn = await signedInUser(deps, request);
      if (!signedIn) return reply.redirect(`${SIGN_IN_PATH}?return_to=${encodeURIComponent(returnPath(request))}`, 303);
      const { user, session } = signedIn;
      const ui = uiOf(request, user);
      const { t } = ui;
      if (user.role === null) {
        return pages.send(
          reply,
          403,
          forbiddenPage(ui, t.text('console.forbidden.text', { username: user.username, site: ui.site.name }), {
            href: ACCOUNT_PATH,
            label: t.text('home.account'),
          }),
        );
      }
      if (!roleAllows(user.role, area, write)) {
        return pages.send(
          reply,
          403,
          forbiddenPage(ui, t.text('console.forbidden.action', { role: t.text(`console.role.${user.role}`) }), {
            href: CONSOLE_PATHS.dashboard,
            label: t.text('console.title'),
          }),
        );
      }
      const refusal = operatorRefusal(deps.config, session, deps.clock.now(), write);
      if (refusal !== null) {
        const notice =
          refusal === 'second-factor-required'
            ? t.text('console.notice.secondFactor')
            : t.text('console.notice.signInAgain', { minutes: Math.round(deps.config.secondFactor.consoleReauthenticate / 60) });
        return pages.signIn(
          request,
          reply,
          401,
          {
            returnTo: returnPath(request),
            notice,
            setUp: refusal === 'second-factor-required',
            username: user.username,
            ...(refusal === 'sign-in-again' ? { maxAge: 0 } : {}),
          },
          { user: user.locale },
        );
      }
      operators.set(request, { user, session, role: user.role });
    };

  const page = (area: AdminArea) => ({ config: { page: true }, preHandler: access(area, false) });
  const change = (area: AdminArea) => ({ config: { page: true }, preHandler: [formPost, access(area, true)] });
  /** A confirmation page: it leads to a change, so it asks for a recent sign-in before it is shown. */
  const confirm = (area: AdminArea) => ({ config: { page: true }, preHandler: access(area, true) });

  function frame(request: FastifyRequest, reply: FastifyReply, section: ConsoleSection): ConsoleFrame {
    const operator = operatorOf(request);
    return {
      ui: uiOf(request, operator.user),
      csrf: csrfToken(deps.config, request, reply),
      operator: { name: operator.user.name ?? operator.user.username, role: operator.role },
      section,
      paths: CONSOLE_PATHS,
    };
  }

  /** The operations' dependencies, every event naming the operator who acted. */
  function manage(request: FastifyRequest): ManageDeps {
    const base = forRequest(deps, request);
    return {
      ...base,
      // An operator may do what their role's scopes allow (flows/manage/authority.ts).
      caller: { scopes: ROLE_SCOPES[operatorOf(request).role] },
      events: base.events.withDetail({ operator: operatorOf(request).user.username }),
      tellApps: async (sessions) => (await sendLogoutTokens(deps, sessions, request.log)).clients,
    };
  }

  const may = (request: FastifyRequest, area: AdminArea, write: boolean) => roleAllows(operatorOf(request).role, area, write);

  /** The roles an operator may choose between for someone who has `current` (the admin API's rule: no more than they hold); null: none. */
  const assignableRoles = (operator: OperatorRole, current: OperatorRole | null): readonly (OperatorRole | null)[] | null => {
    const held = ROLE_SCOPES[operator];
    return mayAssignRole(held, current) ? [null, ...OPERATOR_ROLES.filter((role) => mayAssignRole(held, role))] : null;
  };

  /** Events as the console lists them, each linking to its user and app. */
  async function eventViews(events: readonly AuditEvent[]): Promise<EventView[]> {
    const ids = [...new Set(events.map((event) => event.clientId).filter((id) => id !== null))];
    const clients = new Map(await Promise.all(ids.map(async (id) => [id, await deps.store.clients.get(id)] as const)));
    return events.map((event) => {
      const { operator, by: _by, ...rest } = event.detail;
      const client = event.clientId === null ? null : (clients.get(event.clientId) ?? null);
      return {
        at: event.at,
        type: event.type,
        username: event.username,
        userHref: event.username === null ? null : userPath(event.username),
        client: event.clientId === null ? null : { name: client?.name ?? event.clientId, href: client ? appPath(client.id) : null },
        ip: event.ip,
        operator: typeof operator === 'string' ? operator : null,
        detail: Object.entries(rest)
          .map(([key, value]) => `${key}: ${value === null ? '-' : String(value)}`)
          .join(', '),
      };
    });
  }

  return { deps, pages, uiOf, page, change, confirm, frame, manage, may, assignableRoles, eventViews };
}

export type ConsoleKit = ReturnType<typeof consoleKit>;
