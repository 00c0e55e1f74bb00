/** The console's people: search, a person's page, and the changes an operator may make to them. */
import { inviteUser } from '../../flows/manage/invitations.ts';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { CONSOLE_PATHS } from '../../core/endpoints.ts';
import type { RawParams } from '../../core/protocol.ts';
import { ROLE_SCOPES } from '../../core/scopes.ts';
import { mayAssignRole } from '../../flows/manage/authority.ts';
import { listEvents } from '../../flows/manage/events.ts';
import { listUserGrants } from '../../flows/manage/grants.ts';
import { clearLockouts, listLockouts } from '../../flows/manage/lockouts.ts';
import { MANAGE_STATUS, ManageError } from '../../flows/manage/errors.ts';
import type { FormValues } from '../../flows/manage/fields/field.ts';
import {
  endUserSessions,
  findUser,
  listUsers,
  listUserSessions,
  resetLink,
  resetUserSecondFactor,
  setDisabled,
  updateUser,
  userDetails,
  userEtag,
} from '../../flows/manage/users.ts';
import type { UserRecord } from '../../store/types.ts';
import { confirmPage, shownOncePage, userFormPage, userPage, usersPage } from '../../ui/console.ts';
import { html, type SafeHtml } from '../../ui/html.ts';
import type { MessageKey } from '../../ui/i18n.ts';
import type { BrowserRoutesOptions } from '../browser-kit.ts';
import { rawForm } from '../form.ts';
import { appPath, consoleKit, encodeOriginal, operatorOf, overNow, postedOriginal, reasonOf, single, userPath } from './kit.ts';
import { changedKeys, changesOf, PROFILE_KEYS, postedProfile, profileOf } from './user-form.ts';

/** How many users a search lists, and events a page. */
const USERS_SHOWN = 50;
const USER_EVENTS_SHOWN = 10;

export const userPages: FastifyPluginAsync<BrowserRoutesOptions> = async (app, options) => {
  const { deps, pages, page, change, confirm, frame, manage, may, assignableRoles, eventViews } = consoleKit(app, options);

  // Users
  app.get(CONSOLE_PATHS.users, page('users'), async (request, reply) => {
    const q = single(request.query as RawParams, 'q', 200).trim();
    const found = await listUsers(deps, { ...(q === '' ? {} : { q }), limit: USERS_SHOWN + 1 });
    return pages.send(
      reply,
      200,
      usersPage(frame(request, reply, 'users'), {
        q,
        action: CONSOLE_PATHS.users,
        users: found
          .slice(0, USERS_SHOWN)
          .map((user) => ({ username: user.username, name: user.name, email: user.email, disabled: user.disabled, href: userPath(user.username) })),
        more: found.length > USERS_SHOWN ? USERS_SHOWN : null,
        invite: may(request, 'users', true) ? { action: `${CONSOLE_PATHS.users}/invite` } : null,
      }),
    );
  });

  // Invite someone by e-mail (flows/manage/invitations.ts): the link shown once, and mailed when there is a mail server.
  app.post(`${CONSOLE_PATHS.users}/invite`, change('users'), async (request, reply) => {
    const email = single(rawForm(request), 'email', 320);
    const f = frame(request, reply, 'users');
    const { t } = f.ui;
    let invitation;
    try {
      invitation = await inviteUser(manage(request), { email });
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      return pages.send(
        reply,
        MANAGE_STATUS[error.kind],
        usersPage(f, {
          q: '',
          action: CONSOLE_PATHS.users,
          users: [],
          more: null,
          invite: { action: `${CONSOLE_PATHS.users}/invite`, email, error: reasonOf(f.ui, error) },
        }),
      );
    }
    return pages.send(
      reply,
      200,
      shownOncePage(f, {
        title: t.text('console.invite.title', { email: invitation.email }),
        lines: [{ label: 'URL', value: invitation.url }],
        text: t.text(invitation.mailed ? 'console.invite.mailed' : 'console.invite.text', { email: invitation.email, time: t.date(invitation.expiresAt) }),
        back: CONSOLE_PATHS.users,
      }),
    );
  });

  const USER_NOTICES: Readonly<Record<string, MessageKey>> = {
    disabled: 'console.user.done.disabled',
    enabled: 'console.user.done.enabled',
    unchanged: 'console.user.done.unchanged',
    sessions: 'console.user.done.sessions',
    'second-factor': 'console.user.done.secondFactor',
    role: 'console.user.done.role',
    profile: 'console.user.done.profile',
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
    return pages.send(
      reply,
      200,
      userPage(f, {
        username: user.username,
        sub: user.id,
        profile: profileOf(user),
        disabled: user.disabled,
        role: user.role,
        createdAt: user.createdAt,
        lastSignIn: details.lastSignIn === null ? null : { at: details.lastSignIn.at, ip: details.lastSignIn.ip },
        apps: grants.map(({ grant, clientName }) => ({
          name: clientName,
          href: knownApps.has(grant.clientId) ? appPath(grant.clientId) : null,
          approvedAt: grant.createdAt,
          device: grant.device !== null,
        })),
        sessions: sessions.map((session) => ({ at: session.authTime, ip: session.ip, userAgent: session.userAgent })),
        passkeys: details.passkeys.map((passkey) => ({ name: passkey.name, createdAt: passkey.createdAt })),
        totp: details.totp,
        lockedUntil: lockouts.length === 0 ? null : Math.max(...lockouts.map((lockout) => lockout.until)),
        events: await eventViews(events),
        eventsHref: `${CONSOLE_PATHS.events}?${new URLSearchParams({ user: user.username }).toString()}`,
        // Only an operator who may change this person is offered the changes (flows/manage/authority.ts).
        actions:
          may(request, 'users', true) && mayAssignRole(ROLE_SCOPES[operatorOf(request).role], user.role)
            ? { base: userPath(user.username), roles: assignableRoles(operatorOf(request).role, user.role) }
            : null,
        notice: done === undefined ? undefined : f.ui.t.text(done, { username: user.username, count }),
      }),
    );
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
      return pages.send(
        reply,
        200,
        confirmPage(
          f,
          t.text(words.title),
          t.text(words.question, { username: user.username }),
          `${path}/${action}`,
          path,
          html`<input type="hidden" name="return_to" value="${path}/${action}">`,
        ),
      );
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
  // As `tessera user update` with the table's options: the profile form (flows/manage/fields/users.ts).
  const profileForm = (
    request: FastifyRequest,
    reply: FastifyReply,
    status: number,
    user: UserRecord,
    values: FormValues,
    error?: SafeHtml,
    invalidField: string | null = null,
  ) =>
    pages.send(
      reply,
      status,
      userFormPage(frame(request, reply, 'users'), {
        username: user.username,
        action: `${userPath(user.username)}/profile`,
        values,
        version: userEtag(user),
        original: encodeOriginal(profileOf(user)),
        error,
        invalidField,
      }),
    );
  app.get(`${CONSOLE_PATHS.users}/:username/profile`, confirm('users'), async (request, reply) => {
    const user = await findUser(deps, named(request));
    return profileForm(request, reply, 200, user, profileOf(user));
  });
  app.post(`${CONSOLE_PATHS.users}/:username/profile`, change('users'), async (request, reply) => {
    const form = rawForm(request);
    const user = await findUser(deps, named(request));
    const values = postedProfile(form);
    const original = postedOriginal(form, PROFILE_KEYS) ?? profileOf(user);
    // Only what the operator changed is sent; the version read refuses it all if someone changed the person meanwhile.
    const changed = changedKeys(values, original);
    if (changed.length === 0) return backToUser(reply, user.username, 'profile');
    try {
      await updateUser(manage(request), user.username, changesOf(values, changed, original), single(form, 'version', 20));
    } catch (error) {
      if (!(error instanceof ManageError)) throw error;
      const ui = frame(request, reply, 'users').ui;
      if (error.kind === 'stale') {
        // RFC 9110 §13.1.1: refused; the form again at the current version, this operator's changes over it.
        const current = await findUser(deps, user.username);
        const merged = overNow(profileOf(current), values, changed);
        return profileForm(request, reply, 409, current, merged, ui.t.html('console.user.stale'));
      }
      return profileForm(request, reply, MANAGE_STATUS[error.kind], user, values, reasonOf(ui, error), error.field);
    }
    return backToUser(reply, user.username, 'profile');
  });
  app.post(`${CONSOLE_PATHS.users}/:username/reset-link`, change('users'), async (request, reply) => {
    const user = await findUser(deps, named(request));
    const link = await resetLink(manage(request), user.username);
    const f = frame(request, reply, 'users');
    const { t } = f.ui;
    return pages.send(
      reply,
      200,
      shownOncePage(f, {
        title: t.text('console.user.resetLink.title', { username: user.username }),
        lines: [{ label: 'URL', value: link.url }],
        text: t.text('console.user.resetLink.text', { username: user.username, time: t.date(link.expiresAt) }),
        back: userPath(user.username),
      }),
    );
  });
};
