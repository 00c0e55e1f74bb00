/**
 * Who may do what, without HTTP: each rule of authority.ts over a table of callers (the
 * owner, an admin client, narrower clients, the console roles, an app registering itself)
 * and what they ask. The doors' own tests (test/admin-authority.test.ts, the console's) show
 * that each door passes its caller; these show what a caller then may do.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ADMIN_SCOPES, ROLE_SCOPES, type OperatorRole } from '../../core/scopes.ts';
import { newUserRecord, type ClientRecord, type UserRecord } from '../../store/types.ts';
import {
  checkMayChangeClient,
  checkMayChangeUser,
  checkMayExportEvents,
  checkMayRouteSignIn,
  checkMayTrustProvider,
  checkScopesGiven,
  holdsAll,
  mayAssignRole,
  NO_ADMIN,
  OWNER,
  type Caller,
} from './authority.ts';
import { ManageError } from './errors.ts';

const FULL = ROLE_SCOPES.admin;
const CALLERS: Readonly<Record<string, Caller>> = {
  owner: OWNER,
  'admin client': { scopes: FULL, clientId: 'ops' },
  'clients-only client': { scopes: ['admin:clients'], clientId: 'ci' },
  'users reader': { scopes: ['admin:users:read'], clientId: 'hr' },
  support: { scopes: ROLE_SCOPES.support },
  viewer: { scopes: ROLE_SCOPES.viewer },
  'an app registering itself': NO_ADMIN,
};

/** Whether `act` was allowed; a refusal must be the operation's 403, never another error. */
function allowed(act: () => void): boolean {
  try {
    act();
    return true;
  } catch (error) {
    assert.ok(error instanceof ManageError && error.kind === 'forbidden', `a refusal is forbidden: ${String(error)}`);
    return false;
  }
}

const client = (scopes: readonly string[], id = 'target'): ClientRecord => ({ id, scopes }) as unknown as ClientRecord;
const person = (role: OperatorRole | null): UserRecord => ({
  ...newUserRecord({ id: `p-${role ?? 'none'}`, username: `p-${role ?? 'none'}`, passwordHash: 'x', createdAt: 0 }),
  role,
});

describe('who may do what (flows/manage/authority.ts)', () => {
  it('covers a read scope with the area scope, never the other way, and anything that is not an admin scope', () => {
    const cases: [readonly string[], readonly string[], boolean][] = [
      [['admin:users'], ['admin:users:read'], true],
      [['admin:users:read'], ['admin:users'], false],
      [['admin:users'], ['admin:clients:read'], false],
      [[], ['openid', 'photos:read'], true],
      [FULL, ADMIN_SCOPES.filter((scope) => scope.startsWith('admin:')), true],
      // SCIM provisioning is no console role's: only whoever holds it gives it.
      [FULL, ['scim'], false],
      [ADMIN_SCOPES, ['scim'], true],
      [ROLE_SCOPES.viewer, ROLE_SCOPES.support, false],
    ];
    for (const [held, asked, expected] of cases) assert.equal(holdsAll(held, asked), expected, `${held.join(' ')} over ${asked.join(' ')}`);
  });

  it('gives a client only admin scopes the caller holds, and never lets a client widen its own', () => {
    const cases: [string, string | null, readonly string[] | null, readonly string[], boolean][] = [
      ['owner', null, null, ADMIN_SCOPES, true],
      ['admin client', null, null, ['admin:keys', 'openid'], true],
      ['clients-only client', null, null, ['admin:clients'], true],
      ['clients-only client', null, null, ['admin:clients:read', 'photos:read'], true],
      ['clients-only client', null, null, ['admin:users'], false],
      ['clients-only client', null, null, ['admin:keys:read'], false],
      ['users reader', null, null, ['admin:users'], false],
      ['an app registering itself', null, null, ['admin:clients:read'], false],
      ['an app registering itself', null, null, ['openid', 'profile'], true],
      // A Shared Signals receiver reads the audit trail by another door.
      ['clients-only client', null, null, ['ssf:manage'], false],
      ['viewer', null, null, ['ssf:manage'], true],
      // Its own registration: the scopes it has stay, a new one is refused even if held.
      ['clients-only client', 'ci', ['admin:clients'], ['admin:clients'], true],
      ['clients-only client', 'ci', ['admin:clients:read'], ['admin:clients'], false],
      ['admin client', 'ops', ['admin:clients'], ['admin:clients', 'admin:users'], false],
      // Another client: the caller's own scope does not matter.
      ['admin client', 'other', ['admin:clients'], ['admin:clients', 'admin:users'], true],
    ];
    for (const [who, clientId, current, next, expected] of cases) {
      assert.equal(
        allowed(() => checkScopesGiven(CALLERS[who]!, clientId, current, next)),
        expected,
        `${who} gives ${next.join(' ')} to ${clientId ?? 'a new client'}`,
      );
    }
  });

  it('changes a client only for a caller holding every admin scope it has', () => {
    const cases: [string, readonly string[], boolean][] = [
      ['owner', ADMIN_SCOPES, true],
      ['admin client', ['admin:users', 'admin:clients:read'], true],
      ['clients-only client', ['openid', 'profile'], true],
      ['clients-only client', ['admin:clients'], true],
      ['clients-only client', ['admin:clients', 'admin:users:read'], false],
      ['users reader', ['admin:users:read'], true],
      ['users reader', ['admin:users'], false],
      ['viewer', ['admin:events'], false],
      ['an app registering itself', ['admin:events:read'], false],
    ];
    for (const [who, scopes, expected] of cases)
      assert.equal(
        allowed(() => checkMayChangeClient(CALLERS[who]!, client(scopes))),
        expected,
        `${who} changes a client of ${scopes.join(' ')}`,
      );
  });

  it('changes a person with a console role only for a caller holding all the role allows, and gives roles by the same rule', () => {
    const cases: [string, OperatorRole | null, boolean][] = [
      ['owner', 'admin', true],
      ['admin client', 'admin', true],
      ['support', null, true],
      ['support', 'viewer', true],
      ['support', 'support', true],
      ['support', 'admin', false],
      ['viewer', 'viewer', true],
      ['viewer', 'support', false],
      ['clients-only client', null, true],
      ['clients-only client', 'viewer', false],
      ['users reader', 'admin', false],
    ];
    for (const [who, role, expected] of cases) {
      const caller = CALLERS[who]!;
      assert.equal(
        allowed(() => checkMayChangeUser(caller, person(role))),
        expected,
        `${who} changes a ${role ?? 'person without a role'}`,
      );
      assert.equal(mayAssignRole(caller.scopes, role), expected, `${who} gives the role ${role ?? 'none'}`);
    }
  });

  it('lets only a caller holding every role scope trust a provider, and only a reader of the audit trail export it', () => {
    const trust: Record<string, boolean> = {
      owner: true,
      'admin client': true,
      support: false,
      viewer: false,
      'clients-only client': false,
      'an app registering itself': false,
    };
    const exports: Record<string, boolean> = {
      owner: true,
      'admin client': true,
      support: true,
      viewer: true,
      'clients-only client': false,
      'users reader': false,
      'an app registering itself': false,
    };
    for (const [who, expected] of Object.entries(trust))
      assert.equal(
        allowed(() => checkMayTrustProvider(CALLERS[who]!, 'allow_linking')),
        expected,
        `${who} trusts a provider`,
      );
    for (const [who, expected] of Object.entries(exports))
      assert.equal(
        allowed(() => checkMayExportEvents(CALLERS[who]!)),
        expected,
        `${who} adds a webhook`,
      );
  });

  it("lets only a caller that manages upstream providers route an organization's verified domain to one: reading them is not enough", () => {
    const cases: [string, Caller, boolean][] = [
      ['owner', OWNER, true],
      ['admin client', CALLERS['admin client']!, true],
      ['organizations and providers client', { scopes: ['admin:orgs', 'admin:providers'] }, true],
      ['organizations client that reads providers', { scopes: ['admin:orgs', 'admin:providers:read'] }, false],
      ['organizations-only client', { scopes: ['admin:orgs'] }, false],
      ['an app registering itself', NO_ADMIN, false],
    ];
    for (const [who, caller, expected] of cases)
      assert.equal(
        allowed(() => checkMayRouteSignIn(caller, 'provider')),
        expected,
        `${who} routes a domain`,
      );
  });
});
