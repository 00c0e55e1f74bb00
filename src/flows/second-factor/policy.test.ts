/**
 * Who may act in the operator console: a role's permissions are the admin API's
 * scope check over the scopes it stands for; a sign-in needs a second factor, and a change a
 * recent one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../../config/index.ts';
import { upstreamMethods, withOneTimeCode, type AuthMethod } from '../../core/auth-methods.ts';
import { ADMIN_SCOPES, OPERATOR_ROLES, ROLE_SCOPES } from '../../core/scopes.ts';
import type { ClientRecord, SessionRecord } from '../../store/types.ts';
import { roleAllows, scopesAllow, type AdminArea } from '../manage/admin-token.ts';
import { mayAssignRole } from '../manage/authority.ts';
import { ManualClock } from '../../core/clock.ts';
import type { FlowDeps } from '../types.ts';
import { approvalRefusal, operatorRefusal, secondFactorChangeRefusal } from './policy.ts';

const T0 = Date.UTC(2026, 0, 1);
const config = loadConfig({ TESSERA_CONSOLE_REAUTHENTICATE: '900' });

function session(amr: readonly AuthMethod[] | null, authTime = T0): SessionRecord {
  return {
    idHash: 'h',
    sid: 's',
    userId: 'u',
    authTime,
    createdAt: authTime,
    expiresAt: authTime + 86_400_000,
    amr,
    ip: '192.0.2.1',
    userAgent: null,
  } as SessionRecord;
}

describe('the operator console policy', () => {
  it('asks a password-alone sign-in (or a presence-only passkey, or one from before amr was kept) for a second factor, to read as to change', () => {
    for (const amr of [['pwd'], ['hwk', 'user'], null] as const) {
      assert.equal(operatorRefusal(config, session(amr), T0, false), 'second-factor-required', String(amr));
      assert.equal(operatorRefusal(config, session(amr), T0, true), 'second-factor-required', String(amr));
    }
  });

  it('lets a passkey or password-and-code sign-in read at any age, and change for 15 minutes, then asks again', () => {
    for (const amr of [
      ['hwk', 'mfa'],
      ['pwd', 'otp', 'mfa'],
    ] as const) {
      assert.equal(operatorRefusal(config, session(amr), T0 + 900_000, true), null, 'at 15 minutes exactly');
      assert.equal(operatorRefusal(config, session(amr), T0 + 900_001, true), 'sign-in-again');
      assert.equal(operatorRefusal(config, session(amr), T0 + 3_600_000, false), null, 'reading needs no fresh sign-in');
    }
  });

  it('counts the 15 minutes from the sign-in, not from one-time codes turned on later in the same session', () => {
    // Turning codes on gives the session a new cookie and record, with the sign-in's auth_time kept (flows/session/sign-in.ts gainOneTimeCode).
    const gained = { ...session(withOneTimeCode(['pwd'])), createdAt: T0 + 20 * 60_000 };
    assert.equal(operatorRefusal(config, gained, T0 + 21 * 60_000, false), null, 'reading needs no fresh sign-in');
    assert.equal(operatorRefusal(config, gained, T0 + 21 * 60_000, true), 'sign-in-again', 'setting up a code is not signing in again');
  });

  it('gives each role what the issue says: admin everything, support users and reads, viewer reads', () => {
    const areas: AdminArea[] = ['clients', 'users', 'resources', 'events', 'keys'];
    for (const area of areas) {
      assert.equal(roleAllows('admin', area, true), true, area);
      assert.equal(roleAllows('viewer', area, false), true, area);
      assert.equal(roleAllows('viewer', area, true), false, area);
      assert.equal(roleAllows('support', area, false), true, area);
      assert.equal(roleAllows('support', area, true), area === 'users', area);
      assert.equal(roleAllows(null, area, false), false, area);
    }
    for (const role of OPERATOR_ROLES)
      assert.ok(
        ROLE_SCOPES[role].every((scope) => ADMIN_SCOPES.includes(scope)),
        role,
      );
  });

  it('lets a caller give or take away only a role that allows no more than its own scopes', () => {
    assert.equal(mayAssignRole(ROLE_SCOPES.admin, 'admin'), true);
    assert.equal(mayAssignRole(ROLE_SCOPES.support, 'viewer'), true);
    assert.equal(mayAssignRole(ROLE_SCOPES.support, 'support'), true);
    assert.equal(mayAssignRole(ROLE_SCOPES.support, 'admin'), false);
    assert.equal(mayAssignRole(['admin:users'], 'viewer'), false, 'viewer reads apps too');
    assert.equal(mayAssignRole([], null), true, 'no role is nothing to hold');
    assert.equal(scopesAllow(['admin:users:read'], 'users', true), false);
  });
});

describe('who may add or remove a passkey or one-time codes', () => {
  /** The policy's deps over an account with `passkeys` passkeys and codes on or off, at `now`. */
  const deps = (passkeys: number, codes: boolean, now: number) =>
    ({
      config: loadConfig({ TESSERA_ACCOUNT_REAUTHENTICATE: '900' }),
      clock: new ManualClock(now),
      store: {
        passkeys: { listForUser: async () => Array.from({ length: passkeys }, (_, i) => ({ id: `pk${i}` })) },
        totp: { get: async () => (codes ? { confirmedAt: T0 } : null) },
      },
    }) as unknown as Pick<FlowDeps, 'store' | 'config' | 'clock'>;

  it('lets a sign-in of at most 15 minutes set up the first one, then asks a sign-in older than that to sign in again', async () => {
    assert.equal(await secondFactorChangeRefusal(deps(0, false, T0 + 900_000), session(['pwd'])), null, 'at 15 minutes exactly');
    assert.equal(await secondFactorChangeRefusal(deps(0, false, T0 + 900_001), session(['pwd'])), 'sign-in-again');
    assert.equal(await secondFactorChangeRefusal(deps(1, true, T0 + 3_600_000), session(['hwk', 'mfa'])), 'sign-in-again', 'a passkey sign-in too');
  });

  it('asks a password-alone sign-in to prove the passkey or codes the account has, however recent', async () => {
    assert.equal(await secondFactorChangeRefusal(deps(1, false, T0), session(['pwd'])), 'prove-first');
    assert.equal(await secondFactorChangeRefusal(deps(0, true, T0), session(['pwd'])), 'prove-first');
    assert.equal(await secondFactorChangeRefusal(deps(1, true, T0), session(['pwd', 'otp', 'mfa'])), null);
  });
});

describe('what an upstream sign-in counts for', () => {
  const client = { id: 'app', name: 'App', requirePhishingResistant: false } as unknown as ClientRecord;
  const required = loadConfig({ TESSERA_REQUIRE_SECOND_FACTOR: 'true' });

  it('keeps only the RFC 8176 values Tessera knows, and the upstream mfa only when trusted', () => {
    assert.deepEqual(upstreamMethods(['pwd', 'otp', 'mfa', 'face', 'kba'], false), ['pwd']);
    assert.deepEqual(upstreamMethods(['hwk', 'user', 'mfa'], false), ['user'], 'an untrusted key is not a factor proved here');
    assert.deepEqual(upstreamMethods(['pwd', 'otp', 'mfa'], true), ['pwd', 'otp', 'mfa']);
    assert.deepEqual(upstreamMethods(undefined, true), []);
    assert.deepEqual(upstreamMethods('pwd', true), [], 'not a list: nothing');
  });

  it('never counts a sign-in that named nothing, or an untrusted mfa, as a second factor', () => {
    assert.equal(approvalRefusal(required, client, session([])), 'second-factor-required');
    assert.equal(approvalRefusal(required, client, session(upstreamMethods(['pwd', 'otp', 'mfa'], false))), 'second-factor-required');
    assert.equal(approvalRefusal(required, client, session(withOneTimeCode([]))), 'second-factor-required', 'a code after nothing named is one factor');
    assert.equal(approvalRefusal(required, client, session(upstreamMethods(['pwd', 'otp', 'mfa'], true))), null);
    assert.equal(approvalRefusal(config, client, session([]), ['urn:tessera:acr:mfa']), 'second-factor-required');
    assert.equal(operatorRefusal(config, session([]), T0, false), 'second-factor-required');
  });
});
