/**
 * The Security Event Token (RFC 8417) a stream is sent for one audit event, without HTTP: its
 * claims (`jti` and `txn` the event, `iat` when it is signed, `aud` the stream's audience, no
 * `exp`), `typ` secevent+jwt once the token issuer signs them (verified with jose against the
 * world's JWKS), the subject in each format a stream may ask for (RFC 9493, SSF 1.0 §3.3), the
 * event each audit type is sent as with the members CAEP 1.0 and RISC 1.0 give it, and the
 * events about nobody or of no SSF type, which are sent as nothing. test/ssf.test.ts and
 * test/ssf-subjects.test.ts see the same SETs arrive at a receiver, pushed and polled.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import type { AuditEvent, EventType } from '../../core/events.ts';
import { DELIVERY_PUSH, SSF_EVENTS, type SubjectFormat } from '../../core/ssf.ts';
import type { SsfStreamRecord, UserRecord } from '../../store/types.ts';
import { FLOW_ISSUER, flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { auditEvent, ssfStream } from '../../../test/store/fixtures.ts';
import { setClaims, subjectOf } from './set.ts';

/** When the events happened, and (a little later) when their SETs are signed. */
const EVENT_AT = Date.UTC(2026, 2, 1, 12, 0, 0, 750);
const SIGNED_AT = EVENT_AT + 90_500;

/** A push stream of the receiver `receiver`, in `format`. */
function stream(format: SubjectFormat = 'iss_sub', overrides: Partial<SsfStreamRecord> = {}): SsfStreamRecord {
  return ssfStream({
    id: `stream-${format}`,
    clientId: 'receiver',
    deliveryMethod: DELIVERY_PUSH,
    endpointUrl: 'https://receiver.example/events',
    format,
    ...overrides,
  });
}

describe('Security Event Tokens (RFC 8417, SSF 1.0 §4)', () => {
  let world: FlowWorld;
  let ada: UserRecord;
  let noEmail: UserRecord;

  before(async () => {
    world = await flowWorld();
    ada = await world.addUser({ username: 'ada', email: 'ada@example.com', emailVerified: true, givenName: 'Ada', familyName: 'Lovelace' });
    noEmail = await world.addUser({ username: 'no-email' });
  });
  after(() => world.close());

  /** An audit event `type` about `user` (or nobody), at EVENT_AT, with `detail`. */
  function event(type: EventType, detail: AuditEvent['detail'] = {}, user: UserRecord | null = ada): AuditEvent {
    return auditEvent({
      id: `event-${type}-${JSON.stringify(detail)}`,
      type,
      at: EVENT_AT,
      userId: user?.id ?? null,
      username: user?.username ?? null,
      detail,
    });
  }

  it('signs one event as a SET: typ secevent+jwt, iss, jti and txn the event, iat when signed, aud the receiver, and no exp', async () => {
    const disabled = event('user.disabled', { by: 'operator' });
    const claims = setClaims(FLOW_ISSUER, stream(), disabled, ada, SIGNED_AT)!;
    const set = await world.tokens.securityEventToken(claims);

    // RFC 8417 §2.3: "the "typ" (type) Header Parameter ... "secevent+jwt"".
    assert.equal(decodeProtectedHeader(set).typ, 'secevent+jwt');
    const { payload } = await jwtVerify(set, createLocalJWKSet(await world.keys.jwks()), {
      issuer: FLOW_ISSUER,
      audience: 'receiver',
      typ: 'secevent+jwt',
      algorithms: ['RS256'],
      currentDate: new Date(SIGNED_AT),
    });
    assert.deepEqual(payload, {
      iss: FLOW_ISSUER,
      // RFC 8417 §2.2 jti: the same on every try of the same event, so that a receiver drops a repeat.
      jti: disabled.id,
      iat: Math.floor(SIGNED_AT / 1000),
      aud: 'receiver',
      // RFC 8417 §2.2 txn: the transaction the event came of, the audit trail's event.
      txn: disabled.id,
      // SSF 1.0: the subject at the top level, as sub_id (RFC 9493 §4), not as sub.
      sub_id: { format: 'iss_sub', iss: FLOW_ISSUER, sub: ada.id },
      events: { [SSF_EVENTS.ACCOUNT_DISABLED]: {} },
    });
    assert.equal('exp' in payload, false, 'RFC 8417 §2.2: a SET states what happened; it does not expire');
    await assert.rejects(
      jwtVerify(set, createLocalJWKSet(await world.keys.jwks()), { audience: 'another-receiver' }),
      /aud/,
      "another receiver's audience is not this one's",
    );
  });

  it("names the stream's audience as aud: one as a string, several as a list (RFC 7519 §4.1.3)", () => {
    const aud = (audience: string[]) => setClaims(FLOW_ISSUER, stream('iss_sub', { audience }), event('user.enabled'), ada, SIGNED_AT)?.['aud'];
    assert.equal(aud(['receiver']), 'receiver');
    assert.deepEqual(aud(['receiver', 'https://receiver.example']), ['receiver', 'https://receiver.example']);
  });

  it('names the person in the format the stream asked for: iss_sub, email when they have one, complex around iss_sub (RFC 9493, SSF 1.0 §3.3)', () => {
    const issSub = (user: UserRecord) => ({ format: 'iss_sub', iss: FLOW_ISSUER, sub: user.id });
    const cases: [string, SubjectFormat, UserRecord, UserRecord | null, unknown][] = [
      ['iss_sub', 'iss_sub', noEmail, noEmail, issSub(noEmail)],
      ['iss_sub, though the person has an address', 'iss_sub', ada, ada, issSub(ada)],
      ['email, for a person who has one', 'email', ada, ada, { format: 'email', email: 'ada@example.com' }],
      ['email, for a person without one: iss_sub, which always names them', 'email', noEmail, noEmail, issSub(noEmail)],
      ['email, the person not read (gone since)', 'email', ada, null, issSub(ada)],
      ['complex', 'complex', ada, ada, { format: 'complex', user: issSub(ada) }],
      ['complex, for a person without an address', 'complex', noEmail, noEmail, { format: 'complex', user: issSub(noEmail) }],
    ];
    for (const [what, format, about, read, expected] of cases) {
      const happened = event('user.disabled', {}, about);
      assert.deepEqual(subjectOf(FLOW_ISSUER, { format }, happened, read), expected, what);
      assert.deepEqual(setClaims(FLOW_ISSUER, stream(format), happened, read, SIGNED_AT)?.['sub_id'], expected, `${what}, in the SET`);
    }
  });

  it('sends each audit type as its CAEP or RISC event, with the members the specification gives it', () => {
    const timestamp = Math.floor(EVENT_AT / 1000);
    const at = { event_timestamp: timestamp };
    const cases: [string, AuditEvent, string, Record<string, unknown>][] = [
      // CAEP 1.0 §3.1 session-revoked; initiating_entity (§2): who made it happen.
      ['a sign-out by the person', event('logout', { by: 'user' }), SSF_EVENTS.SESSION_REVOKED, { ...at, initiating_entity: 'user' }],
      ['a sign-out asked by an app', event('logout', { by: 'client' }), SSF_EVENTS.SESSION_REVOKED, { ...at, initiating_entity: 'user' }],
      ['a sign-out that says not by whom', event('logout'), SSF_EVENTS.SESSION_REVOKED, { ...at, initiating_entity: 'user' }],
      ['sessions ended by an operator', event('logout', { by: 'operator' }), SSF_EVENTS.SESSION_REVOKED, { ...at, initiating_entity: 'admin' }],
      ['sessions ended by provisioning', event('logout', { by: 'scim' }), SSF_EVENTS.SESSION_REVOKED, { ...at, initiating_entity: 'system' }],
      // CAEP 1.0 §3.3 credential-change: credential_type and change_type.
      [
        'a password changed by its owner',
        event('password.changed'),
        SSF_EVENTS.CREDENTIAL_CHANGE,
        { ...at, initiating_entity: 'user', credential_type: 'password', change_type: 'update' },
      ],
      [
        'a password set by an operator',
        event('user.password_set', { by: 'operator' }),
        SSF_EVENTS.CREDENTIAL_CHANGE,
        { ...at, initiating_entity: 'admin', credential_type: 'password', change_type: 'update' },
      ],
      [
        'a password reset by link',
        event('user.password_reset'),
        SSF_EVENTS.CREDENTIAL_CHANGE,
        { ...at, initiating_entity: 'user', credential_type: 'password', change_type: 'update' },
      ],
      [
        'a passkey added',
        event('passkey.added'),
        SSF_EVENTS.CREDENTIAL_CHANGE,
        { ...at, initiating_entity: 'user', credential_type: 'fido2-platform', change_type: 'create' },
      ],
      [
        'a passkey removed',
        event('passkey.removed'),
        SSF_EVENTS.CREDENTIAL_CHANGE,
        { ...at, initiating_entity: 'user', credential_type: 'fido2-platform', change_type: 'delete' },
      ],
      [
        'one-time codes on',
        event('totp.enabled'),
        SSF_EVENTS.CREDENTIAL_CHANGE,
        { ...at, initiating_entity: 'user', credential_type: 'app', change_type: 'create' },
      ],
      [
        'one-time codes off',
        event('totp.disabled'),
        SSF_EVENTS.CREDENTIAL_CHANGE,
        { ...at, initiating_entity: 'user', credential_type: 'app', change_type: 'delete' },
      ],
      [
        'every second factor reset by an operator',
        event('second_factor.reset', { by: 'operator' }),
        SSF_EVENTS.CREDENTIAL_CHANGE,
        { ...at, initiating_entity: 'admin', credential_type: 'app', change_type: 'revoke' },
      ],
      // RISC 1.0 §2.7 credential-compromise: a passkey refused as a copy.
      [
        'a passkey refused as cloned',
        event('passkey.refused', { reason: 'cloned' }),
        SSF_EVENTS.CREDENTIAL_COMPROMISE,
        { credential_type: 'fido2-roaming', reason_admin: { en: 'A passkey was used whose signature counter went back: it may have been copied' } },
      ],
      // RISC 1.0 account-disabled, account-enabled, account-purged: the subject says it all.
      ['an account disabled', event('user.disabled', { by: 'operator' }), SSF_EVENTS.ACCOUNT_DISABLED, {}],
      ['an account enabled', event('user.enabled', { by: 'operator' }), SSF_EVENTS.ACCOUNT_ENABLED, {}],
      ['an account removed', event('user.removed', { by: 'operator' }), SSF_EVENTS.ACCOUNT_PURGED, {}],
    ];
    for (const [what, happened, type, members] of cases) {
      assert.deepEqual(setClaims(FLOW_ISSUER, stream(), happened, ada, SIGNED_AT)?.['events'], { [type]: members }, what);
    }
  });

  it('sends a profile change as token-claims-change with the OIDC claims that changed and their values now (CAEP 1.0 §3.2)', () => {
    const claims = (detail: AuditEvent['detail'], user: UserRecord | null = ada) => {
      const events = setClaims(FLOW_ISSUER, stream(), event('user.updated', detail), user, SIGNED_AT)?.['events'] as
        | Record<string, { claims: unknown }>
        | undefined;
      return events?.[SSF_EVENTS.TOKEN_CLAIMS_CHANGE];
    };
    assert.deepEqual(claims({ fields: 'givenName emailVerified', by: 'operator' }), {
      event_timestamp: Math.floor(EVENT_AT / 1000),
      initiating_entity: 'admin',
      // OIDC Core §5.1 names: given_name, not givenName.
      claims: { given_name: 'Ada', email_verified: true },
    });
    assert.deepEqual(claims({ fields: 'email familyName', by: 'user' })?.claims, { email: 'ada@example.com', family_name: 'Lovelace' });
    assert.deepEqual(claims({ fields: 'nickname', by: 'operator' })?.claims, { nickname: null }, 'a claim cleared: null, its value now');
    assert.deepEqual(claims({ fields: 'notAField', by: 'operator' })?.claims, {}, 'nothing the record does not hold');
    assert.deepEqual(claims({ by: 'operator' })?.claims, {}, 'no fields named: none');
    assert.deepEqual(claims({ fields: 'givenName', by: 'operator' }, null)?.claims, {}, 'the person not read: no values to give');
  });

  it("answers a verification event (SSF 1.0 §8.1.4) about the stream itself, with the receiver's state when it gave one", () => {
    const mine = stream('email', { id: 'stream-to-verify' });
    const verification = (detail: AuditEvent['detail']) =>
      setClaims(FLOW_ISSUER, mine, event('ssf.verification', { stream_id: mine.id, ...detail }, null), null, SIGNED_AT);
    const withState = verification({ state: 'hello' })!;
    // §8.1.4.1: "the subject of the verification event ... is the stream", in the opaque format.
    assert.deepEqual(withState['sub_id'], { format: 'opaque', id: 'stream-to-verify' });
    assert.deepEqual(withState['events'], { [SSF_EVENTS.VERIFICATION]: { state: 'hello' } });
    assert.deepEqual(verification({})?.['events'], { [SSF_EVENTS.VERIFICATION]: {} }, 'no state asked: none given');
  });

  it('sends nothing for an event about nobody, nor for one of no SSF type', () => {
    const cases: [string, AuditEvent][] = [
      ['a disabled account of no one', event('user.disabled', {}, null)],
      ['a sign-out of no one', event('logout', {}, null)],
      ['a sign-in', event('signin.succeeded')],
      ['a passkey refused for another reason than a copy', event('passkey.refused', { reason: 'unknown_credential' })],
      ['a client added', event('client.created', {}, null)],
    ];
    for (const [what, happened] of cases) {
      for (const format of ['iss_sub', 'email', 'complex'] as const)
        assert.equal(setClaims(FLOW_ISSUER, stream(format), happened, ada, SIGNED_AT), null, `${what} (${format})`);
    }
    assert.equal(subjectOf(FLOW_ISSUER, { format: 'iss_sub' }, event('user.disabled', {}, null), null), null);
  });
});
