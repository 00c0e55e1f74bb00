/**
 * A SAML sign-in's steps without HTTP: what a request asks becomes the pending sign-in (its
 * RequestedAuthnContext as acr values), sealed into the address the browser comes back to and
 * opened only unchanged and in time; and the next step for a browser's session (SAML Core
 * §3.4.1 ForceAuthn and IsPassive, the sign-in policy and an organization's requirements).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { loadConfig } from '../../config/index.ts';
import type { AuthMethod } from '../../core/auth-methods.ts';
import type { SamlServiceProviderRecord, SessionRecord } from '../../store/types.ts';
import type { MemberPolicy } from '../second-factor/policy.ts';
import { SamlRefusal, type AuthnRequest } from './request.ts';
import { AUTHN_CONTEXT, STATUS } from './response.ts';
import { openPending, pendingOf, samlNextStep, sealPending, unsolicited, type PendingSamlSignIn } from './sso.ts';

const T0 = Date.UTC(2026, 10, 29, 12);
const MINUTE = 60_000;
const LIFETIME = 300;
const SECRET = randomBytes(32);
const CONFIG = loadConfig({ TESSERA_ISSUER: 'https://auth.example.com' });
const NONE: MemberPolicy = { requirePasskey: false, requireSecondFactor: false };

const SP = {
  id: 'sp-1',
  entityId: 'https://sp.example.com/saml',
  acsUrls: ['https://sp.example.com/acs', 'https://sp.example.com/acs-2'],
  idpInitiated: true,
} as unknown as SamlServiceProviderRecord;

function request(fields: Partial<AuthnRequest> = {}): AuthnRequest {
  return { sp: SP, id: '_request', acsUrl: SP.acsUrls[1]!, forceAuthn: false, isPassive: false, nameIdFormat: null, authnContext: [], ...fields };
}

function session(authTime: number, amr: readonly AuthMethod[] = ['pwd']): SessionRecord {
  return { idHash: 'h', sid: 's', userId: 'u', authTime, createdAt: authTime, expiresAt: authTime + 3600_000, amr, ip: null, userAgent: null };
}

describe('a SAML sign-in, pending and its next step', () => {
  it('keeps what the request asks: the ACS URL by its index, the flags, and its authentication contexts as acr values', () => {
    const pending = pendingOf(
      request({
        forceAuthn: true,
        authnContext: ['urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport', AUTHN_CONTEXT.mfa, 'urn:example:unknown-class'],
      }),
      'relay',
      T0,
    );
    assert.deepEqual(pending, {
      sp: SP.id,
      acs: 1,
      request: '_request',
      relayState: 'relay',
      forceAuthn: true,
      isPassive: false,
      nameIdFormat: null,
      acr: ['urn:tessera:acr:pwd', 'urn:tessera:acr:mfa'],
      at: T0,
    });
    assert.equal(pendingOf(request({ authnContext: ['urn:example:unknown-class'] }), null, T0).acr, null, 'none known: none asked');
    assert.deepEqual(unsolicited(SP, 'r', T0), { ...pendingOf(request({ acsUrl: SP.acsUrls[0]! }), 'r', T0), request: null });
  });

  it('starts an unsolicited sign-in (SAML Profiles §4.1.5) only for an SP registered to take one', () => {
    assert.throws(
      () => unsolicited({ ...SP, idpInitiated: false }, null, T0),
      (error: unknown) => error instanceof SamlRefusal && error.reason === 'unsolicited' && error.entityId === SP.entityId,
    );
  });

  it('opens the sealed sign-in only as it was sealed, with the same secret, within its lifetime', () => {
    const pending = pendingOf(request(), null, T0);
    const sealed = sealPending(SECRET, pending);
    const [payload, tag] = sealed.split('.') as [string, string];
    const changed = Buffer.from(JSON.stringify({ ...pending, acs: 0 })).toString('base64url');
    const cases: [string, string, number, PendingSamlSignIn | null][] = [
      ['as sealed', sealed, T0 + MINUTE, pending],
      ['at the end of its lifetime', sealed, T0 + LIFETIME * 1000, pending],
      ['a millisecond after', sealed, T0 + LIFETIME * 1000 + 1, null],
      ['another ACS URL, the old tag', `${changed}.${tag}`, T0, null],
      ['a tag cut short', `${payload}.${tag.slice(1)}`, T0, null],
      ['a third part', `${sealed}.more`, T0, null],
      ['no tag', payload, T0, null],
      ['sealed with another secret', sealPending(randomBytes(32), pending), T0, null],
      ['made more than a minute ahead of the clock', sealPending(SECRET, { ...pending, at: T0 + 2 * MINUTE }), T0, null],
    ];
    for (const [what, value, now, expected] of cases) assert.deepEqual(openPending(SECRET, value, now, LIFETIME), expected, what);
  });

  it('signs in, answers NoPassive or asserts, as ForceAuthn, IsPassive, the acr asked and the policy say', () => {
    const asked = T0;
    const before = session(asked - MINUTE);
    const after = session(asked + MINUTE);
    // RFC 8176, as a sign-in records them (core/auth-methods.ts): a code after the password, and a passkey with its PIN.
    const withCode = session(asked - MINUTE, ['pwd', 'otp', 'mfa']);
    const withPasskey = session(asked - MINUTE, ['hwk', 'mfa']);
    const pending = (fields: Partial<AuthnRequest>) => pendingOf(request(fields), null, asked);
    const noPassive = { kind: 'status', status: STATUS.noPassive, message: 'the person is not signed in with a sign-in this request accepts' };
    const cases: [string, PendingSamlSignIn, SessionRecord | null, MemberPolicy, unknown][] = [
      ['no session', pending({}), null, NONE, { kind: 'sign-in', refusal: null }],
      ['a session', pending({}), before, NONE, { kind: 'assert' }],
      ['ForceAuthn, signed in before the request', pending({ forceAuthn: true }), before, NONE, { kind: 'sign-in', refusal: null }],
      ['ForceAuthn, signed in after it', pending({ forceAuthn: true }), after, NONE, { kind: 'assert' }],
      ['IsPassive, no session', pending({ isPassive: true }), null, NONE, noPassive],
      ['IsPassive, a session', pending({ isPassive: true }), before, NONE, { kind: 'assert' }],
      ['IsPassive and ForceAuthn, signed in before', pending({ isPassive: true, forceAuthn: true }), before, NONE, noPassive],
      [
        'REFEDS MFA asked, a password alone',
        pending({ authnContext: [AUTHN_CONTEXT.mfa] }),
        before,
        NONE,
        { kind: 'sign-in', refusal: 'second-factor-required' },
      ],
      ['REFEDS MFA asked, a password and a code', pending({ authnContext: [AUTHN_CONTEXT.mfa] }), withCode, NONE, { kind: 'assert' }],
      ['IsPassive, MFA asked, a password alone', pending({ isPassive: true, authnContext: [AUTHN_CONTEXT.mfa] }), before, NONE, noPassive],
      [
        'an organization requiring a passkey, a password and a code',
        pending({}),
        withCode,
        { requirePasskey: true, requireSecondFactor: false },
        { kind: 'sign-in', refusal: 'phishing-resistant-required' },
      ],
      ['an organization requiring a passkey, a passkey', pending({}), withPasskey, { requirePasskey: true, requireSecondFactor: false }, { kind: 'assert' }],
      [
        'an organization requiring a second factor, a password alone',
        pending({}),
        before,
        { requirePasskey: false, requireSecondFactor: true },
        { kind: 'sign-in', refusal: 'second-factor-required' },
      ],
    ];
    for (const [what, signIn, browserSession, member, expected] of cases)
      assert.deepEqual(samlNextStep(CONFIG, signIn, browserSession, member), expected, what);
  });
});
