/**
 * The operator console (issue 27): pages for the people who look after the server, calling
 * the operations the `tessera` command and the admin API call (src/flows/manage), with the
 * admin API's permission check over the scopes a person's role stands for (core/scopes.ts
 * ROLE_SCOPES). Who may enter is the session flow's signed-in person with a role, whose
 * sign-in had a second factor, and for a change a recent one (flows/second-factor/policy.ts
 * `operatorRefusal`); every change is an event naming the operator.
 */
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { ACCOUNT_PATH, CONSOLE_PATHS, SIGN_IN_PATH } from '../core/endpoints.ts';
import { EVENT_TYPES, type AuditEvent, type EventType } from '../core/events.ts';
import { GRANT_DEVICE_CODE, type RawParams } from '../core/protocol.ts';
import { OPERATOR_ROLES, ROLE_SCOPES, SCOPE_DESCRIPTIONS, type OperatorRole } from '../core/scopes.ts';
import { sendLogoutTokens } from '../flows/logout/backchannel.ts';
import { roleAllows, type AdminArea } from '../flows/manage/admin-token.ts';
import { mayAssignRole } from '../flows/manage/authority.ts';
import { clientJson, createClient, DEFAULT_GRACE_SECONDS, getClient, listClients, removeClient, rotateClientSecret, updateClient, type ClientMetadata } from '../flows/manage/clients.ts';
import type { ManageDeps } from '../flows/manage/deps.ts';
import { MANAGE_STATUS, ManageError } from '../flows/manage/errors.ts';
import { eventCounts, eventCursor, listEvents, parseSince } from '../flows/manage/events.ts';
import { listUserGrants } from '../flows/manage/grants.ts';
import { listKeys, rotateKeys } from '../flows/manage/keys.ts';
import { clearLockouts, listLockouts } from '../flows/manage/lockouts.ts';
import { ACCESS_TOKEN_TTL_RANGE, addResource, API_SIGNING_ALGORITHMS, getResource, listResources, removeResource, updateResource } from '../flows/manage/resources.ts';
import { endUserSessions, findUser, listUsers, listUserSessions, resetLink, resetUserSecondFactor, setDisabled, updateUser, userDetails } from '../flows/manage/users.ts';
import { operatorRefusal } from '../flows/second-factor/policy.ts';
import type { ClientRecord, ResourceRecord, ResourceScope, SessionRecord, UserRecord } from '../store/types.ts';
import {
  apiFormPage,
  apisPage,
  appOrigin,
  appFormPage,
  appPage,
  appsPage,
  confirmPage,
  dashboardPage,
  eventsPage,
  fieldLabel,
  forbiddenPage,
  keysPage,
  linkButton,
  shownOncePage,
  userPage,
  usersPage,
  type ApiFormValues,
  type AppFormValues,
  type ConsoleFrame,
  type ConsoleSection,
  type EventView,
  type KeyView,
} from '../ui/console.ts';
import { html, type SafeHtml } from '../ui/html.ts';
import { isMessageKey, type MessageKey } from '../ui/i18n.ts';
import type { Ui } from '../ui/pages.ts';
import { CLIENT_FIELDS } from '../flows/manage/fields/clients.ts';
import { formValues, FormValueError, inputOf, postedValues, sameValue } from '../flows/manage/fields/field.ts';
import type { BrowserRoutesOptions } from './browser-kit.ts';
import { forRequest } from './deps.ts';
import { rawForm } from './form.ts';
import { csrfToken, safeReturnTo, signedInUser } from './session.ts';

/** A signed-in person the console let through: their role, and the admin scopes it stands for. */
interface Operator {
  readonly session: SessionRecord;
  readonly user: UserRecord;
  readonly role: OperatorRole;
}

/** How many users a search lists, and events a page. */
const USERS_SHOWN = 50;
const EVENTS_SHOWN = 50;
const USER_EVENTS_SHOWN = 10;

const SINCE_CHOICES: readonly { readonly value: string; readonly label: MessageKey }[] = [
  { value: '1h', label: 'console.events.hour' },
  { value: '24h', label: 'console.events.day' },
  { value: '7d', label: 'console.events.week' },
];

/** Grace periods offered for a rotated-out secret, seconds. */
const GRACE_CHOICES: readonly { readonly seconds: number; readonly label: MessageKey }[] = [
  { seconds: 0, label: 'console.app.rotate.none' },
  { seconds: 3600, label: 'console.app.rotate.hour' },
  { seconds: DEFAULT_GRACE_SECONDS, label: 'console.app.rotate.day' },
  { seconds: 7 * 86400, label: 'console.app.rotate.week' },
];

/** A grant as people write it: the device grant's URN as `device_code`. */
const grantName = (grant: string): string => (grant === GRANT_DEVICE_CODE ? 'device_code' : grant);

const userPath = (username: string) => `${CONSOLE_PATHS.users}/${encodeURIComponent(username)}`;
const appPath = (clientId: string) => `${CONSOLE_PATHS.apps}/${encodeURIComponent(clientId)}`;
const apiPath = (identifier: string) => `${CONSOLE_PATHS.apis}/${encodeURIComponent(identifier)}`;

/** An API's form of a stored registration: its scopes one a line, as `resource add --scope NAME=DESCRIPTION`. */
function apiFormOf(resource: ResourceRecord): ApiFormValues {
  return {
    identifier: resource.identifier,
    name: resource.name,
    scopes: resource.scopes.map((scope) => `${scope.name}=${scope.description}`).join('\n'),
    access_token_ttl: resource.accessTokenTtl === null ? '' : String(resource.accessTokenTtl),
    signing_alg: resource.signingAlg,
    introspection_secret: resource.introspectionSecretHash !== null,
  };
}

/** What an API's edit compares: the identifier is fixed, the introspection secret is the command's. */
const API_FORM_KEYS = ['name', 'scopes', 'access_token_ttl', 'signing_alg'] as const;

function postedApi(form: RawParams): ApiFormValues {
  return {
    identifier: single(form, 'identifier', 1100),
    name: single(form, 'name', 200),
    // Lines trimmed and blank ones dropped, so that retyping the same scopes is no change.
    scopes: lines(single(form, 'scopes', 64 * 1024)).join('\n'),
    access_token_ttl: single(form, 'access_token_ttl', 12).trim(),
    signing_alg: single(form, 'signing_alg', 10),
    introspection_secret: form['introspection_secret'] === 'on',
  };
}

/** Scopes typed one a line as NAME=DESCRIPTION; a line without `=` is a name without a description, which the operation refuses by its line. */
const scopesOf = (text: string): ResourceScope[] =>
  lines(text).map((line) => {
    const at = line.indexOf('=');
    return at === -1 ? { name: line, description: '' } : { name: line.slice(0, at).trim(), description: line.slice(at + 1).trim() };
  });

/** An empty lifetime is the server's default; anything else the operation checks as seconds. */
const ttlOf = (text: string): number | null => (text === '' ? null : Number(text));

const encodeApi = (values: ApiFormValues) => Buffer.from(JSON.stringify(values)).toString('base64url');

function decodeApi(text: string): ApiFormValues | null {
  try {
    const parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Record<string, unknown>;
    return API_FORM_KEYS.every((key) => typeof parsed[key] === 'string') ? (parsed as unknown as ApiFormValues) : null;
  } catch {
    return null;
  }
}

function single(params: RawParams, name: string, max = 4096): string {
  const value = params[name];
  return typeof value === 'string' ? value.slice(0, max) : '';
}


const lines = (value: string) => value.split(/\r?\n/).map((line) => line.trim()).filter(Boolean);

/** The registration form of a stored client: its admin API JSON, through the table (fields/clients.ts). */
const formOf = (client: ClientRecord): AppFormValues => formValues(CLIENT_FIELDS, clientJson(client, client.createdAt));

/** What a new registration's form starts with: `tessera client add`'s defaults. */
const NEW_APP: AppFormValues = formValues(CLIENT_FIELDS, { token_endpoint_auth_method: 'client_secret_basic', scope: 'openid profile email', grant_types: ['authorization_code'], pkce: 'required' });

/** The form as posted. */
const postedForm = (form: RawParams): AppFormValues => postedValues(CLIENT_FIELDS, form);

/** Form values as the operation's input (RFC 7591 §2 names), only the fields in `names`. */
function metadataOf(values: AppFormValues, names: readonly string[]): ClientMetadata {
  try {
    return inputOf(CLIENT_FIELDS, values, names) as ClientMetadata;
  } catch (error) {
    if (error instanceof FormValueError) throw new ManageError('invalid', [{ field: error.field }, `: ${error.message}`]);
    throw error;
  }
}

const FORM_KEYS: readonly string[] = CLIENT_FIELDS.filter((field) => field.form !== null).map((field) => field.name);

const same = sameValue;

/** The form's values as read, carried through the edit form to find what changed meanwhile. */
const encodeOriginal = (values: AppFormValues) => Buffer.from(JSON.stringify(values)).toString('base64url');

function decodeOriginal(text: string): AppFormValues | null {
  try {
    const parsed = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Record<string, unknown>;
    return FORM_KEYS.every((key) => key in parsed) ? (parsed as AppFormValues) : null;
  } catch {
    return null;
  }
}

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
  { pattern: /^scope (\S+) already belongs to /, key: 'console.reason.scopeTaken', names: ['scope'] },
  { pattern: /^scope (\S+) is in the registration of client (\S+) \((.*)\): /s, key: 'console.reason.scopeInUse', names: ['scope', 'id', 'app'] },
];

function reasonOf(ui: Ui, error: ManageError): SafeHtml {
  const { t } = ui;
  for (const { pattern, key, names } of REASONS) {
    const found = pattern.exec(error.message);
    if (found) return t.html('console.failed', { reason: t.text(key, Object.fromEntries(names.map((name, i) => [name, found[i + 1]!]))) });
  }
  const fieldKey = error.field === null ? null : `console.field.${error.field}`;
  const reason = fieldKey !== null && isMessageKey(fieldKey) && error.kind === 'invalid'
    ? t.text('console.reason.field', { field: t.text(fieldKey) })
    : t.text(`console.reason.${error.kind}`);
  return html`${t.html('console.failed', { reason })} <small class="detail" lang="en" dir="ltr">${error.message}</small>`;
}

const shown = (ui: Ui, value: AppFormValues[keyof AppFormValues]) =>
  Array.isArray(value) ? value.join(', ') : typeof value === 'boolean' ? ui.t.text(value ? 'console.yes' : 'console.no') : String(value).replace(/\n/g, ', ');

export const consoleRoutes: FastifyPluginAsync<BrowserRoutesOptions> = async (app, { deps, pages, formPost }) => {
  const operators = new WeakMap<FastifyRequest, Operator>();
  const operatorOf = (request: FastifyRequest): Operator => {
    const operator = operators.get(request);
    if (!operator) throw new Error(`${request.url}: the route needs the console's access check`);
    return operator;
  };

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
  const access = (area: AdminArea, write: boolean): preHandlerAsyncHookHandler => async (request, reply) => {
    reply.header('Cache-Control', 'no-store');
    const signedIn = await signedInUser(deps, request);
    if (!signedIn) return reply.redirect(`${SIGN_IN_PATH}?return_to=${encodeURIComponent(returnPath(request))}`, 303);
    const { user, session } = signedIn;
    const ui = uiOf(request, user);
    const { t } = ui;
    if (user.role === null) {
      return pages.send(reply, 403, forbiddenPage(ui, t.text('console.forbidden.text', { username: user.username, site: ui.site.name }), { href: ACCOUNT_PATH, label: t.text('home.account') }));
    }
    if (!roleAllows(user.role, area, write)) {
      return pages.send(reply, 403, forbiddenPage(ui, t.text('console.forbidden.action', { role: t.text(`console.role.${user.role}`) }), { href: CONSOLE_PATHS.dashboard, label: t.text('console.title') }));
    }
    const refusal = operatorRefusal(deps.config, session, deps.clock.now(), write);
    if (refusal !== null) {
      const notice = refusal === 'second-factor-required'
        ? t.text('console.notice.secondFactor')
        : t.text('console.notice.signInAgain', { minutes: Math.round(deps.config.secondFactor.consoleReauthenticate / 60) });
      return pages.signIn(request, reply, 401, { returnTo: returnPath(request), notice, setUp: refusal === 'second-factor-required', username: user.username }, { user: user.locale });
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

  // An operation's refusal (an unknown user, a taken name) is a page with the status the admin API gives it.
  // Anything else goes on to the server's one error handler (http/errors.ts).
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (!(error instanceof ManageError)) throw error;
    const operator = operators.get(request);
    const ui = operator ? uiOf(request, operator.user) : pages.ui(request);
    return pages.send(reply, MANAGE_STATUS[error.kind], forbiddenPage(ui, reasonOf(ui, error), { href: CONSOLE_PATHS.dashboard, label: ui.t.text('console.title') }, ui.t.text('error.refused')));
  });

  /** Events as the console lists them, each linking to its user and app. */
  async function eventViews(events: readonly AuditEvent[]): Promise<EventView[]> {
    const ids = [...new Set(events.map((event) => event.clientId).filter((id) => id !== null))];
    const clients = new Map(await Promise.all(ids.map(async (id) => [id, await deps.store.clients.get(id)] as const)));
    return events.map((event) => {
      const { operator, by: _by, ...rest } = event.detail;
      const client = event.clientId === null ? null : clients.get(event.clientId) ?? null;
      return {
        at: event.at,
        type: event.type,
        username: event.username,
        userHref: event.username === null ? null : userPath(event.username),
        client: event.clientId === null ? null : { name: client?.name ?? event.clientId, href: client ? appPath(client.id) : null },
        ip: event.ip,
        operator: typeof operator === 'string' ? operator : null,
        detail: Object.entries(rest).map(([key, value]) => `${key}: ${value === null ? '-' : String(value)}`).join(', '),
      };
    });
  }

  // Dashboard: the last hour's and day's sign-ins, failures, device sign-ins and lockouts.
  app.get(CONSOLE_PATHS.dashboard, page('events'), async (request, reply) => {
    const now = deps.clock.now();
    const [counts, locked, pendingDevices] = await Promise.all([eventCounts(deps, now), listLockouts(deps, { lockedOnly: true }), deps.store.devices.countPending(now)]);
    const count = (types: readonly EventType[]) => ({
      hour: types.reduce((sum, type) => sum + (counts.hour.get(type) ?? 0), 0),
      day: types.reduce((sum, type) => sum + (counts.day.get(type) ?? 0), 0),
    });
    return pages.send(reply, 200, dashboardPage(frame(request, reply, 'dashboard'), {
      counts: [
        { label: 'console.dashboard.signIns', ...count(['signin.succeeded']) },
        { label: 'console.dashboard.failures', ...count(['signin.failed']) },
        { label: 'console.dashboard.deviceStarted', ...count(['device.started']) },
        { label: 'console.dashboard.deviceApproved', ...count(['device.approved']) },
        // A limit's refusals are one event per limit and window, stored when the window ends (core/events.ts).
        { label: 'console.dashboard.lockouts', ...count(['signin.locked', 'device.code_entry_locked']) },
      ],
      lockedNow: locked.length,
      pendingDevices,
    }));
  });

  // Users
  app.get(CONSOLE_PATHS.users, page('users'), async (request, reply) => {
    const q = single(request.query as RawParams, 'q', 200).trim();
    const found = await listUsers(deps, { ...(q === '' ? {} : { q }), limit: USERS_SHOWN + 1 });
    return pages.send(reply, 200, usersPage(frame(request, reply, 'users'), {
      q,
      action: CONSOLE_PATHS.users,
      users: found.slice(0, USERS_SHOWN).map((user) => ({ username: user.username, name: user.name, email: user.email, disabled: user.disabled, href: userPath(user.username) })),
      more: found.length > USERS_SHOWN ? USERS_SHOWN : null,
    }));
  });

  const USER_NOTICES: Readonly<Record<string, MessageKey>> = {
    disabled: 'console.user.done.disabled',
    enabled: 'console.user.done.enabled',
    unchanged: 'console.user.done.unchanged',
    sessions: 'console.user.done.sessions',
    'second-factor': 'console.user.done.secondFactor',
    role: 'console.user.done.role',
    unlocked: 'console.user.done.unlocked',
  };

  const named = (request: FastifyRequest) => (request.params as { username: string }).username;

  app.get(`${CONSOLE_PATHS.users}/:username`, page('users'), async (request, reply) => {
    const details = await userDetails(deps, named(request));
    const { user } = details;
    const [grants, sessions, events, lockouts] = await Promise.all([
      listUserGrants(deps, user.username),
      listUserSessions(deps, user.username),
      listEvents(deps, { username: user.username, limit: USER_EVENTS_SHOWN }),
      listLockouts(deps, { username: user.username, lockedOnly: true }),
    ]);
    const f = frame(request, reply, 'users');
    const query = request.query as RawParams;
    const done = USER_NOTICES[single(query, 'done', 40)];
    const count = Math.min(Math.max(Number.parseInt(single(query, 'n', 6), 10) || 0, 0), 100_000);
    const knownApps = new Set((await deps.store.clients.list()).map((client) => client.id));
    return pages.send(reply, 200, userPage(f, {
      username: user.username,
      sub: user.id,
      name: user.name,
      email: user.email,
      disabled: user.disabled,
      role: user.role,
      createdAt: user.createdAt,
      lastSignIn: details.lastSignIn === null ? null : { at: details.lastSignIn.at, ip: details.lastSignIn.ip },
      apps: grants.map(({ grant, clientName }) => ({ name: clientName, href: knownApps.has(grant.clientId) ? appPath(grant.clientId) : null, approvedAt: grant.createdAt, device: grant.device !== null })),
      sessions: sessions.map((session) => ({ at: session.authTime, ip: session.ip, userAgent: session.userAgent })),
      passkeys: details.passkeys.map((passkey) => ({ name: passkey.name, createdAt: passkey.createdAt })),
      totp: details.totp,
      lockedUntil: lockouts.length === 0 ? null : Math.max(...lockouts.map((lockout) => lockout.until)),
      events: await eventViews(events),
      eventsHref: `${CONSOLE_PATHS.events}?${new URLSearchParams({ user: user.username }).toString()}`,
      // Only an operator who may change this person is offered the changes (flows/manage/authority.ts).
      actions: may(request, 'users', true) && mayAssignRole(ROLE_SCOPES[operatorOf(request).role], user.role) ? { base: userPath(user.username), roles: assignableRoles(operatorOf(request).role, user.role) } : null,
      notice: done === undefined ? undefined : f.ui.t.text(done, { username: user.username, count }),
    }));
  });

  /** After a change to a user: back to their page, saying what was done. */
  const backToUser = (reply: FastifyReply, username: string, done: string, count?: number) =>
    reply.redirect(`${userPath(username)}?${new URLSearchParams({ done, ...(count === undefined ? {} : { n: String(count) }) }).toString()}`, 303);

  const USER_CONFIRMATIONS = {
    disable: { title: 'console.user.disable', question: 'console.user.confirm.disable' },
    'end-sessions': { title: 'console.user.endSessions', question: 'console.user.confirm.endSessions' },
    'reset-second-factor': { title: 'console.user.resetSecondFactor', question: 'console.user.confirm.resetSecondFactor' },
  } as const satisfies Record<string, { title: MessageKey; question: MessageKey }>;

  for (const [action, words] of Object.entries(USER_CONFIRMATIONS)) {
    app.get(`${CONSOLE_PATHS.users}/:username/${action}`, confirm('users'), async (request, reply) => {
      const user = await findUser(deps, named(request));
      const f = frame(request, reply, 'users');
      const { t } = f.ui;
      const path = userPath(user.username);
      return pages.send(reply, 200, confirmPage(f, t.text(words.title), t.text(words.question, { username: user.username }), `${path}/${action}`, path, html`<input type="hidden" name="return_to" value="${path}/${action}">`));
    });
  }

  app.post(`${CONSOLE_PATHS.users}/:username/disable`, change('users'), async (request, reply) => {
    const user = await findUser(deps, named(request));
    const told = await setDisabled(manage(request), user.username, true);
    return backToUser(reply, user.username, told === null ? 'unchanged' : 'disabled');
  });
  app.post(`${CONSOLE_PATHS.users}/:username/enable`, change('users'), async (request, reply) => {
    const user = await findUser(deps, named(request));
    const told = await setDisabled(manage(request), user.username, false);
    return backToUser(reply, user.username, told === null ? 'unchanged' : 'enabled');
  });
  app.post(`${CONSOLE_PATHS.users}/:username/end-sessions`, change('users'), async (request, reply) => {
    const user = await findUser(deps, named(request));
    const ended = await endUserSessions(manage(request), user.username);
    return backToUser(reply, user.username, 'sessions', ended.sessions);
  });
  app.post(`${CONSOLE_PATHS.users}/:username/reset-second-factor`, change('users'), async (request, reply) => {
    const user = await findUser(deps, named(request));
    const reset = await resetUserSecondFactor(manage(request), user.username);
    return backToUser(reply, user.username, 'second-factor', reset.passkeys);
  });
  // As `tessera user unlock`: the wrong passwords counted against them from any address, and wrong codes.
  app.post(`${CONSOLE_PATHS.users}/:username/unlock`, change('users'), async (request, reply) => {
    const user = await findUser(deps, named(request));
    const cleared = await clearLockouts(manage(request), { username: user.username });
    return backToUser(reply, user.username, 'unlocked', cleared.length);
  });
  app.post(`${CONSOLE_PATHS.users}/:username/role`, change('users'), async (request, reply) => {
    const user = await findUser(deps, named(request));
    // The operator's role stands for admin scopes: a role allowing more than theirs is refused.
    await updateUser(manage(request), user.username, { role: single(rawForm(request), 'role', 20) });
    return backToUser(reply, user.username, 'role');
  });
  app.post(`${CONSOLE_PATHS.users}/:username/reset-link`, change('users'), async (request, reply) => {
    const user = await findUser(deps, named(request));
    const link = await resetLink(manage(request), user.username);
    const f = frame(request, reply, 'users');
    const { t } = f.ui;
    return pages.send(reply, 200, shownOncePage(f, {
      title: t.text('console.user.resetLink.title', { username: user.username }),
      lines: [{ label: 'URL', value: link.url }],
      text: t.text('console.user.resetLink.text', { username: user.username, time: t.date(link.expiresAt) }),
      back: userPath(user.username),
    }));
  });

  // Apps
  app.get(CONSOLE_PATHS.apps, page('clients'), async (request, reply) => {
    const f = frame(request, reply, 'apps');
    const clients = await listClients(deps);
    return pages.send(reply, 200, appsPage(f, {
      apps: clients.map((client) => ({ name: client.name, clientId: client.id, publicClient: client.authMethod === 'none', grants: client.grantTypes.map(grantName), href: appPath(client.id), unverified: client.registeredBy !== undefined && client.verified !== true })),
      registerHref: may(request, 'clients', true) ? `${CONSOLE_PATHS.apps}/new` : null,
      notice: single(request.query as RawParams, 'done', 20) === 'removed' ? f.ui.t.text('console.apps.removed') : undefined,
    }));
  });

  const newAppForm = (request: FastifyRequest, reply: FastifyReply, status: number, values: AppFormValues, error?: SafeHtml) => {
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    return pages.send(reply, status, appFormPage(f, { title: t.text('console.app.new'), action: CONSOLE_PATHS.apps, submit: t.text('console.app.create'), values, edit: null, error }));
  };

  app.get(`${CONSOLE_PATHS.apps}/new`, confirm('clients'), async (request, reply) => newAppForm(request, reply, 200, NEW_APP));

  app.post(CONSOLE_PATHS.apps, change('clients'), async (request, reply) => {
    const values = postedForm(rawForm(request));
    // As `client add`: a field left empty is not given, so the operation's defaults apply.
    const given = FORM_KEYS.filter((key) => !same(values[key], '') && !same(values[key], []));
    let created;
    try {
      created = await createClient(manage(request), metadataOf(values, given));
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return newAppForm(request, reply, MANAGE_STATUS[error.kind], values, reasonOf(frame(request, reply, 'apps').ui, error));
    }
    const { client, secret } = created;
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    return pages.send(reply, 201, shownOncePage(f, {
      title: t.text('console.app.created', { name: client.name }),
      lines: [{ label: t.text('console.app.clientId'), value: client.id }, ...(secret === null ? [] : [{ label: t.text('console.app.secret'), value: secret }])],
      text: secret === null ? t.text('console.app.noSecret') : t.text('console.app.secretOnce'),
      back: appPath(client.id),
    }));
  });

  const id = (request: FastifyRequest) => (request.params as { client_id: string }).client_id;

  /** Under an app's page: its events, and for one who may change apps, rotate and remove. */
  function appFooter(request: FastifyRequest, ui: Ui, client: ClientRecord) {
    const { t } = ui;
    const writable = may(request, 'clients', true);
    return html`<div class="actions">
${writable && client.secretHash !== null ? linkButton(`${appPath(client.id)}/rotate`, t.text('console.app.rotate')) : null}
${writable ? linkButton(`${appPath(client.id)}/remove`, t.text('console.app.remove')) : null}
</div>
<p class="more"><a href="${CONSOLE_PATHS.events}?${new URLSearchParams({ client: client.id }).toString()}">${t.html('console.app.events')}</a></p>`;
  }

  /** How a self-registered app came, with Verify for an operator who may change apps. */
  const originOf = (request: FastifyRequest, f: ConsoleFrame, client: ClientRecord) =>
    appOrigin(f, { registeredBy: client.registeredBy, verified: client.verified === true, verifyAction: may(request, 'clients', true) ? `${appPath(client.id)}/verify` : null });

  function editForm(request: FastifyRequest, reply: FastifyReply, status: number, client: ClientRecord, values: AppFormValues, extra: { notice?: string; error?: SafeHtml; otherChange?: { field: string; before: string; after: string }[] } = {}) {
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    return pages.send(reply, status, appFormPage(f, {
      title: t.text('console.app.edit', { name: client.name }),
      action: appPath(client.id),
      submit: t.text('console.app.save'),
      values,
      edit: { version: client.version ?? 1, original: encodeOriginal(formOf(client)), clientId: client.id },
      origin: originOf(request, f, client),
      footer: appFooter(request, f.ui, client),
      ...extra,
    }));
  }

  app.get(`${CONSOLE_PATHS.apps}/:client_id`, page('clients'), async (request, reply) => {
    const client = await getClient(deps, id(request));
    const done = single(request.query as RawParams, 'done', 20);
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    if (may(request, 'clients', true)) {
      return editForm(request, reply, 200, client, formOf(client), done === 'saved' ? { notice: t.text('console.app.saved') } : done === 'verified' ? { notice: t.text('console.app.verified') } : {});
    }
    const described = clientJson(client, deps.clock.now());
    const value = (key: string, raw: unknown): string | SafeHtml => {
      if (typeof raw === 'boolean') return t.text(raw ? 'console.yes' : 'console.no');
      if ((key === 'created_at' || key === 'previous_secret_expires_at') && typeof raw === 'string') return t.time(Date.parse(raw));
      if (Array.isArray(raw) && raw.every((item) => typeof item === 'string')) return raw.join(', ');
      return typeof raw === 'string' ? raw : JSON.stringify(raw);
    };
    return pages.send(reply, 200, appPage(f, {
      name: client.name,
      // Shown above as the page's origin notice.
      facts: Object.entries(described).filter(([key]) => key !== 'client_name' && key !== 'verified').map(([key, raw]) => ({ label: fieldLabel(f.ui, key), value: value(key, raw) })),
      origin: originOf(request, f, client),
      footer: appFooter(request, f.ui, client),
    }));
  });

  app.post(`${CONSOLE_PATHS.apps}/:client_id`, change('clients'), async (request, reply) => {
    const form = rawForm(request);
    const client = await getClient(deps, id(request));
    const values = postedForm(form);
    const version = Number.parseInt(single(form, 'version', 12), 10);
    const original = decodeOriginal(single(form, 'original', 64 * 1024)) ?? formOf(client);
    // Only what the operator changed is sent: the event names those fields, and what someone
    // else changed meanwhile in other fields would be kept (but the version refuses it all).
    const changed = FORM_KEYS.filter((key) => !same(values[key], original[key]));
    if (changed.length === 0) return reply.redirect(`${appPath(client.id)}?done=saved`, 303);
    try {
      await updateClient(manage(request), client.id, metadataOf(values, changed), Number.isInteger(version) ? version : 0);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      const ui = frame(request, reply, 'apps').ui;
      if (error.kind === 'stale') {
        // RFC 9110 §13.1.1: refused, and the change that came in between is shown.
        const current = await getClient(deps, client.id);
        const now = formOf(current);
        const otherChange = FORM_KEYS.filter((key) => !same(now[key], original[key])).map((key) => ({ field: key, before: shown(ui, original[key] ?? ''), after: shown(ui, now[key] ?? '') }));
        // The form again at the current version: the other change, and this operator's over it.
        const merged = { ...now, ...Object.fromEntries(changed.map((key) => [key, values[key]])) } as AppFormValues;
        return editForm(request, reply, 409, current, merged, { otherChange });
      }
      return editForm(request, reply, MANAGE_STATUS[error.kind], client, values, { error: reasonOf(ui, error) });
    }
    return reply.redirect(`${appPath(client.id)}?done=saved`, 303);
  });

  // As `tessera client update --verified`: the consent page no longer says "not verified".
  app.post(`${CONSOLE_PATHS.apps}/:client_id/verify`, change('clients'), async (request, reply) => {
    await updateClient(manage(request), id(request), { verified: true });
    return reply.redirect(`${appPath(id(request))}?done=verified`, 303);
  });

  app.get(`${CONSOLE_PATHS.apps}/:client_id/rotate`, confirm('clients'), async (request, reply) => {
    const client = await getClient(deps, id(request));
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    const path = appPath(client.id);
    return pages.send(reply, 200, confirmPage(f, t.text('console.app.rotate'), t.text('console.app.rotate.confirm', { name: client.name }), `${path}/rotate`, path, html`<input type="hidden" name="return_to" value="${path}/rotate">
<label for="grace">${t.html('console.app.rotate.grace')}</label>
<select id="grace" name="grace">${GRACE_CHOICES.map((choice) => html`<option value="${String(choice.seconds)}"${choice.seconds === DEFAULT_GRACE_SECONDS ? html` selected` : null}>${t.html(choice.label)}</option>`)}</select>`));
  });

  app.post(`${CONSOLE_PATHS.apps}/:client_id/rotate`, change('clients'), async (request, reply) => {
    const grace = Number(single(rawForm(request), 'grace', 10));
    const { client, secret } = await rotateClientSecret(manage(request), id(request), GRACE_CHOICES.some((choice) => choice.seconds === grace) ? grace : DEFAULT_GRACE_SECONDS);
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    return pages.send(reply, 200, shownOncePage(f, {
      title: t.text('console.app.rotate.done', { name: client.name }),
      lines: [{ label: t.text('console.app.clientId'), value: client.id }, { label: t.text('console.app.secret'), value: secret }],
      text: `${t.text('console.app.secretOnce')} ${t.text('console.app.rotate.until', { time: t.date(client.previousSecretExpiresAt ?? deps.clock.now()) })}`,
      back: appPath(client.id),
    }));
  });

  app.get(`${CONSOLE_PATHS.apps}/:client_id/remove`, confirm('clients'), async (request, reply) => {
    const client = await getClient(deps, id(request));
    const f = frame(request, reply, 'apps');
    const { t } = f.ui;
    const path = appPath(client.id);
    return pages.send(reply, 200, confirmPage(f, t.text('console.app.remove'), t.text('console.app.remove.confirm', { name: client.name }), `${path}/remove`, path, html`<input type="hidden" name="return_to" value="${path}/remove">`));
  });

  app.post(`${CONSOLE_PATHS.apps}/:client_id/remove`, change('clients'), async (request, reply) => {
    await removeClient(manage(request), id(request));
    return reply.redirect(`${CONSOLE_PATHS.apps}?done=removed`, 303);
  });

  // APIs and their scopes
  app.get(CONSOLE_PATHS.apis, page('resources'), async (request, reply) => {
    const resources = await listResources(deps);
    const writable = may(request, 'resources', true);
    const f = frame(request, reply, 'apis');
    const done = API_NOTICES[single(request.query as RawParams, 'done', 20)];
    return pages.send(reply, 200, apisPage(f, {
      apis: resources.map((resource) => ({
        name: resource.name, identifier: resource.identifier, tokenTtl: resource.accessTokenTtl, signingAlg: resource.signingAlg, scopes: resource.scopes,
        editHref: writable ? apiPath(resource.identifier) : null,
      })),
      openid: Object.entries(SCOPE_DESCRIPTIONS).map(([name, description]) => ({ name, description })),
      registerHref: writable ? `${CONSOLE_PATHS.apis}/new` : null,
      notice: done === undefined ? undefined : f.ui.t.text(done),
    }));
  });

  const API_NOTICES: Readonly<Record<string, MessageKey>> = { added: 'console.apis.added', saved: 'console.apis.saved', removed: 'console.apis.removed' };
  const identifierOf = (request: FastifyRequest) => (request.params as { identifier: string }).identifier;
  const apiAlgorithms: readonly string[] = API_SIGNING_ALGORITHMS;

  const apiForm = (request: FastifyRequest, reply: FastifyReply, status: number, values: ApiFormValues, edit: ResourceRecord | null, extra: { error?: SafeHtml; otherChange?: { field: string; before: string; after: string }[] } = {}) => {
    const f = frame(request, reply, 'apis');
    const { t } = f.ui;
    return pages.send(reply, status, apiFormPage(f, {
      title: edit === null ? t.text('console.api.new') : t.text('console.api.edit', { name: edit.name }),
      action: edit === null ? CONSOLE_PATHS.apis : apiPath(edit.identifier),
      submit: t.text(edit === null ? 'console.api.create' : 'console.app.save'),
      values,
      edit: edit === null ? null : { original: encodeApi(apiFormOf(edit)) },
      algorithms: apiAlgorithms,
      ttlRange: ACCESS_TOKEN_TTL_RANGE,
      cancel: CONSOLE_PATHS.apis,
      ...extra,
    }));
  };

  app.get(`${CONSOLE_PATHS.apis}/new`, confirm('resources'), async (request, reply) =>
    apiForm(request, reply, 200, { identifier: '', name: '', scopes: '', access_token_ttl: '', signing_alg: 'RS256', introspection_secret: false }, null));

  app.post(CONSOLE_PATHS.apis, change('resources'), async (request, reply) => {
    const values = postedApi(rawForm(request));
    let added;
    try {
      const ttl = ttlOf(values.access_token_ttl);
      added = await addResource(manage(request), {
        identifier: values.identifier.trim(),
        name: values.name,
        scopes: scopesOf(values.scopes),
        access_token_ttl: ttl,
        // A form posted without the menu: the operation's default.
        ...(values.signing_alg === '' ? {} : { signing_alg: values.signing_alg }),
        introspection_secret: values.introspection_secret,
      }, (scope) => `${scope.name}=${scope.description}`);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return apiForm(request, reply, MANAGE_STATUS[error.kind], values, null, { error: reasonOf(frame(request, reply, 'apis').ui, error) });
    }
    if (added.introspectionSecret === null) return reply.redirect(`${CONSOLE_PATHS.apis}?done=added`, 303);
    const f = frame(request, reply, 'apis');
    const { t } = f.ui;
    return pages.send(reply, 201, shownOncePage(f, {
      title: t.text('console.api.added', { name: added.resource.name }),
      lines: [{ label: t.text('console.apis.identifier'), value: added.resource.identifier }, { label: t.text('console.api.introspectionSecret'), value: added.introspectionSecret }],
      text: t.text('console.api.secretOnce'),
      back: CONSOLE_PATHS.apis,
    }));
  });

  app.get(`${CONSOLE_PATHS.apis}/:identifier`, confirm('resources'), async (request, reply) => {
    const resource = await getResource(deps, identifierOf(request));
    return apiForm(request, reply, 200, apiFormOf(resource), resource);
  });

  app.post(`${CONSOLE_PATHS.apis}/:identifier`, change('resources'), async (request, reply) => {
    const form = rawForm(request);
    const current = await getResource(deps, identifierOf(request));
    const now = apiFormOf(current);
    const original = decodeApi(single(form, 'original', 64 * 1024)) ?? now;
    const posted = postedApi(form);
    const values = { ...posted, identifier: current.identifier, signing_alg: posted.signing_alg || original.signing_alg, introspection_secret: false };
    // APIs carry no version: the values the form was opened with stand for it. Someone else's
    // change meanwhile refuses the edit with their change shown (as an app's stale edit is).
    const otherChange = API_FORM_KEYS.filter((key) => now[key] !== original[key]).map((key) => ({ field: key, before: String(original[key]).replace(/\n/g, ', '), after: String(now[key]).replace(/\n/g, ', ') }));
    const changed = API_FORM_KEYS.filter((key) => values[key] !== original[key]);
    if (otherChange.length > 0) {
      const merged = { ...now, ...Object.fromEntries(changed.map((key) => [key, values[key]])) } as ApiFormValues;
      return apiForm(request, reply, 409, merged, current, { otherChange });
    }
    if (changed.length === 0) return reply.redirect(`${CONSOLE_PATHS.apis}?done=saved`, 303);
    try {
      await updateResource(manage(request), current.identifier, {
        ...(changed.includes('name') ? { name: values.name } : {}),
        ...(changed.includes('scopes') ? { scopes: scopesOf(values.scopes) } : {}),
        ...(changed.includes('access_token_ttl') ? { access_token_ttl: ttlOf(values.access_token_ttl) } : {}),
        ...(changed.includes('signing_alg') ? { signing_alg: values.signing_alg } : {}),
      }, (scope) => `${scope.name}=${scope.description}`);
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return apiForm(request, reply, MANAGE_STATUS[error.kind], values, current, { error: reasonOf(frame(request, reply, 'apis').ui, error) });
    }
    return reply.redirect(`${CONSOLE_PATHS.apis}?done=saved`, 303);
  });

  app.get(`${CONSOLE_PATHS.apis}/:identifier/remove`, confirm('resources'), async (request, reply) => {
    const resource = await getResource(deps, identifierOf(request));
    const f = frame(request, reply, 'apis');
    const { t } = f.ui;
    const path = apiPath(resource.identifier);
    const title = t.text('console.apis.remove', { name: resource.name });
    return pages.send(reply, 200, confirmPage(f, title, t.text('console.api.remove.confirm', { name: resource.name, identifier: resource.identifier }), `${path}/remove`, CONSOLE_PATHS.apis, html`<input type="hidden" name="return_to" value="${path}/remove">`));
  });

  app.post(`${CONSOLE_PATHS.apis}/:identifier/remove`, change('resources'), async (request, reply) => {
    await removeResource(manage(request), identifierOf(request));
    return reply.redirect(`${CONSOLE_PATHS.apis}?done=removed`, 303);
  });

  // Events: by user, app, type and time, a page at a time.
  app.get(CONSOLE_PATHS.events, page('events'), async (request, reply) => {
    const query = request.query as RawParams;
    const filter = { user: single(query, 'user', 256).trim(), client: single(query, 'client', 200).trim(), type: single(query, 'type', 64), since: single(query, 'since', 10) };
    const after = single(query, 'after', 200);
    const f = frame(request, reply, 'events');
    let events: AuditEvent[] = [];
    let error: SafeHtml | undefined;
    try {
      events = await listEvents(deps, {
        limit: EVENTS_SHOWN,
        ...(filter.user === '' ? {} : { username: filter.user }),
        ...(filter.client === '' ? {} : { clientId: filter.client }),
        ...(filter.type === '' ? {} : { type: filter.type }),
        ...(SINCE_CHOICES.some((choice) => choice.value === filter.since) ? { since: parseSince(filter.since, deps.clock.now()) } : {}),
        ...(after === '' ? {} : { after }),
      });
    } catch (caught) {
      if (!(caught instanceof ManageError)) throw caught;
      error = reasonOf(f.ui, caught);
      reply.status(400);
    }
    const older = events.length === EVENTS_SHOWN ? `${CONSOLE_PATHS.events}?${new URLSearchParams({ ...Object.fromEntries(Object.entries(filter).filter(([, value]) => value !== '')), after: eventCursor(events[events.length - 1]!) }).toString()}` : null;
    return pages.send(reply, error === undefined ? 200 : 400, eventsPage(f, { action: CONSOLE_PATHS.events, filter, types: EVENT_TYPES, sinceChoices: SINCE_CHOICES, events: await eventViews(events), olderHref: older, error }));
  });

  // Signing keys
  app.get(CONSOLE_PATHS.keys, page('keys'), async (request, reply) => {
    const now = deps.clock.now();
    const keys = await listKeys(deps, now);
    const state = (key: (typeof keys)[number]): KeyView['state'] => {
      if (key.expiresAt !== null && key.expiresAt <= now) return { kind: 'withdrawn' };
      if (key.activatesAt > now) return { kind: 'next', at: key.activatesAt };
      if (key.retiresAt !== null && key.retiresAt <= now) return { kind: 'retired', until: key.expiresAt };
      return { kind: 'signing' };
    };
    const f = frame(request, reply, 'keys');
    return pages.send(reply, 200, keysPage(f, {
      keys: keys.map((key) => ({ kid: key.kid, alg: key.alg, createdAt: key.createdAt, state: state(key) })),
      rotateHref: may(request, 'keys', true) ? `${CONSOLE_PATHS.keys}/rotate` : null,
      notice: single(request.query as RawParams, 'done', 20) === 'rotated' ? f.ui.t.text('console.keys.rotated') : undefined,
    }));
  });

  app.get(`${CONSOLE_PATHS.keys}/rotate`, confirm('keys'), async (request, reply) => {
    const f = frame(request, reply, 'keys');
    const { t } = f.ui;
    return pages.send(reply, 200, confirmPage(f, t.text('console.keys.rotate'), t.text('console.keys.rotate.confirm'), `${CONSOLE_PATHS.keys}/rotate`, CONSOLE_PATHS.keys, html`<input type="hidden" name="return_to" value="${CONSOLE_PATHS.keys}/rotate">`));
  });

  app.post(`${CONSOLE_PATHS.keys}/rotate`, change('keys'), async (request, reply) => {
    await rotateKeys({ ...manage(request), keys: deps.keys });
    return reply.redirect(`${CONSOLE_PATHS.keys}?done=rotated`, 303);
  });
};
