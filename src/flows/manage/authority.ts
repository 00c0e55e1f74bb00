/**
 * Who asks for a management operation, and what that lets them do: the one place
 * where a narrow admin credential is kept from growing into a wider one. Every door passes
 * its caller in `ManageDeps.caller`: the `tessera` command the owner of the server (every
 * scope), the admin API the scopes its token holds and still has, the console the scopes of
 * the operator's role, dynamic registration none.
 *
 * The rules, each written once here and called by the operation it guards:
 * - a caller gives a client only admin scopes it holds itself, and never widens its own scope;
 * - a caller changes, rotates the secret of, revokes the tokens of or removes a client only if
 *   it holds every admin scope that client has (a client's credentials are its scopes);
 * - a caller changes the credentials, second factors, claims, state or organization memberships
 *   of a person who holds a console role only if it holds every scope that role allows (the
 *   rule for giving the role; a membership can require a passkey of the person's approvals),
 *   and so changes the sign-in policy of, or removes, an organization such a person is in;
 * - a caller lets an upstream provider link accounts or vouch for a second factor, changes
 *   where such a provider's word comes from, or repoints a provider people already sign in
 *   through, only if it holds every role's scopes: such a provider can sign in as them,
 *   console operators included;
 * - a caller trusts another server's ID-JAGs only on the provider rule above: a trusted issuer
 *   signs in as anyone with a verified e-mail address here, console operators included;
 * - a caller gives a client `ssf:manage`, or adds a webhook, or sends its dead letters again,
 *   only if it may read the audit trail: a webhook sends the trail's user and client events (people's ids and usernames) to
 *   a URL of the caller's choosing, which is reading it by another door;
 * - a caller gives an organization a verified domain or an upstream provider, or changes
 *   either, only if it also manages upstream providers (admin:providers): the domain then sends
 *   its people's sign-in to that provider, which is choosing where they sign in;
 * - a caller reads the Shared Signals pushes' or mail's deliveries only if it may read the audit
 *   trail, and sends their dead letters again only if it may change it (and, for mail, people);
 * - only the server's owner points a webhook at loopback, link-local or private addresses,
 *   unless TESSERA_ALLOW_PRIVATE_NETWORK_URLS allows them (flows/manage/webhooks.ts): a
 *   delegate would otherwise have the server post into its own network.
 */
import { ADMIN_SCOPES, ROLE_SCOPES, OPERATOR_ROLES, SSF_SCOPE, type OperatorRole } from '../../core/scopes.ts';
import type { ClientRecord, UserRecord } from '../../store/types.ts';
import { scopesAllow, type AdminArea } from './admin-token.ts';
import { field, forbidden } from './errors.ts';

export interface Caller {
  /** The admin scopes the caller holds (core/scopes.ts ADMIN_SCOPES). */
  readonly scopes: readonly string[];
  /** The client the caller is, for the admin API: a client never widens its own scope. */
  readonly clientId?: string;
  /**
   * The server's owner (the `tessera` command on its database), not someone it delegated to:
   * the URLs it gives a webhook are requested wherever they point.
   */
  readonly owner?: true;
}

/** The `tessera` command: whoever runs it on the server's database owns the server. */
export const OWNER: Caller = { scopes: ADMIN_SCOPES, owner: true };

/** A caller that holds no admin scope: an app registering itself (RFC 7591, RFC 7592). */
export const NO_ADMIN: Caller = { scopes: [] };

/**
 * Whether `held` covers an admin scope: `admin:AREA` needs `admin:AREA`, and
 * `admin:AREA:read` needs that or `admin:AREA`. A scope that is not an admin scope is
 * nobody's to hold: it is covered.
 */
function covers(held: readonly string[], scope: string): boolean {
  // A Shared Signals receiver is sent every person's account and session events: reading the
  // audit trail by another door, as a webhook is (checkMayExportEvents).
  if (scope === SSF_SCOPE) return covers(held, 'admin:events:read');
  if (!ADMIN_SCOPES.includes(scope)) return true;
  // `scim` names no area: only holding it covers it.
  if (!scope.startsWith('admin:')) return held.includes(scope);
  // The admin API's own permission check, over the area and access the scope names.
  const [, area, read] = scope.split(':') as [string, AdminArea, string | undefined];
  return scopesAllow(held, area, read === undefined);
}

/** Whether `held` covers every admin scope of `scopes`. */
export function holdsAll(held: readonly string[], scopes: readonly string[]): boolean {
  return scopes.every((scope) => covers(held, scope));
}

/** Every scope of every console role: what an operator needs to hold to act over all of them. */
const EVERY_ROLE_SCOPE: readonly string[] = [...new Set(OPERATOR_ROLES.flatMap((role) => ROLE_SCOPES[role]))];

/**
 * Whether a caller holding `held` may give a role or take it away: only one that already
 * holds everything the role allows, so no one hands out more than they have.
 */
export function mayAssignRole(held: readonly string[], role: OperatorRole | null): boolean {
  return role === null || holdsAll(held, ROLE_SCOPES[role]);
}

/** A client's scope as it would be given: every admin scope in it held by the caller, and no wider than the caller's own. */
export function checkScopesGiven(caller: Caller, clientId: string | null, current: readonly string[] | null, next: readonly string[]): void {
  const beyond = next.filter((scope) => !covers(caller.scopes, scope));
  if (beyond.length > 0) throw forbidden`${field('scope')} ${beyond.join(' ')}: a caller gives only admin scopes it holds itself`;
  if (clientId !== null && clientId === caller.clientId) {
    const wider = next.filter((scope) => !(current ?? []).includes(scope));
    if (wider.length > 0) throw forbidden`${field('scope')} ${wider.join(' ')}: a client cannot widen its own scope; an operator holding it may`;
  }
}

/** A change to a client (its registration, secret, tokens or existence): only by a caller holding every admin scope it has. */
export function checkMayChangeClient(caller: Caller, client: ClientRecord): void {
  if (!holdsAll(caller.scopes, client.scopes)) {
    throw forbidden`client ${client.id} holds admin scopes the caller does not (${client.scopes.filter((scope) => !covers(caller.scopes, scope)).join(' ')}): only a caller holding every one of them may change it, its secret or its tokens`;
  }
}

/** A change to a person who holds a console role: only by a caller holding everything that role allows. */
export function checkMayChangeUser(caller: Caller, user: Pick<UserRecord, 'username' | 'role'>): void {
  if (!mayAssignRole(caller.scopes, user.role)) {
    throw forbidden`${user.username} is a console ${user.role ?? ''}: only a caller holding every scope that role allows may change their account, credentials or second factors`;
  }
}

/**
 * Linking accounts by e-mail, trusting a provider's second factor, or repointing a provider
 * people sign in through: only by a caller holding every role's scopes.
 */
export function checkMayTrustProvider(caller: Caller, what: string): void {
  if (!holdsAll(caller.scopes, EVERY_ROLE_SCOPE)) {
    throw forbidden`${field(what)}: a provider that links accounts, vouches for a second factor or already signs people in can, set up or pointed elsewhere, sign in as them, console operators included; only a caller holding every admin scope may do this`;
  }
}

/**
 * The Shared Signals pushes' and mail's deliveries: a SET carries the audit trail's events, and
 * a message's row says who asked for what when, so reading them is reading the trail
 * (admin:events:read) and sending them again is a change to it (admin:events); a message sent
 * again goes to a person, which only a caller that may change people (admin:users) does.
 */
export function checkMayHandleDeadLetters(caller: Caller, kind: 'ssf' | 'mail', write: boolean): void {
  const needs = write ? (kind === 'mail' ? ['admin:events', 'admin:users'] : ['admin:events']) : ['admin:events:read'];
  if (!holdsAll(caller.scopes, needs)) {
    throw forbidden`${kind === 'ssf' ? 'Shared Signals deliveries' : 'mail deliveries'}: only a caller holding ${needs.join(' and ')} may ${write ? 'send them again' : 'read them'}`;
  }
}

/** Adding a webhook or replaying its deliveries: only by a caller that may read the audit trail it sends out. */
export function checkMayExportEvents(caller: Caller): void {
  if (!holdsAll(caller.scopes, ['admin:events:read'])) {
    throw forbidden`a webhook sends the audit trail's user and client events to its URL: only a caller that may read the audit trail (admin:events or admin:events:read) may add one or send its deliveries again`;
  }
}

/**
 * An organization's verified domain or its provider, given or changed: only by a caller that
 * also manages upstream providers, since the domain then sends its people's sign-in there.
 */
export function checkMayRouteSignIn(caller: Caller, what: string): void {
  if (!holdsAll(caller.scopes, ['admin:providers'])) {
    throw forbidden`${field(what)}: a verified domain sends its people's sign-in to the organization's upstream provider; only a caller that also manages providers (admin:providers) may set it`;
  }
}
