/**
 * The authorization_code grant without HTTP (RFC 6749 §4.1.3, RFC 7636 §4.6): a grant and its
 * code written to an in-memory store as an approval leaves them, then each exchange's outcome
 * and what it left in the store. test/authorization-code.test.ts and test/token-endpoint.test.ts
 * drive the same rules through real clients.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { hashSecret, randomToken, s256 } from '../../core/crypto.ts';
import type { ClientRecord, UserRecord } from '../../store/types.ts';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { refreshTokenGrant } from '../refresh/token.ts';
import { setUserDisabled } from '../users.ts';
import { updateClient } from '../manage/clients.ts';
import type { OAuthError } from '../../core/errors.ts';
import type { DpopProof } from '../dpop/proof.ts';
import { authorizationCodeGrant } from './token.ts';
import { approvedGrant } from '../../../test/store/fixtures.ts';

const CALLBACK = 'https://notes.example/cb';
const SCOPE = ['openid', 'profile', 'offline_access'];

describe('the authorization_code grant (RFC 6749 §4.1.3)', () => {
  let world: FlowWorld;
  let app: ClientRecord;
  let other: ClientRecord;
  /** A client registered with PKCE optional (`client add --pkce optional`). */
  let legacy: ClientRecord;
  let ada: UserRecord;

  before(async () => {
    world = await flowWorld();
    const registration = { redirect_uris: [CALLBACK], grant_types: ['authorization_code', 'refresh_token'], scope: SCOPE.join(' ') };
    ({ client: app } = await world.addClient({ client_name: 'Notes', ...registration }));
    ({ client: other } = await world.addClient({ client_name: 'Other', ...registration }));
    ({ client: legacy } = await world.addClient({ client_name: 'Legacy', pkce: 'optional', ...registration }));
    ada = await world.addUser({ username: 'ada' });
  });
  after(() => world.close());

  interface Issued {
    readonly code: string;
    readonly verifier: string;
    readonly grantId: string;
  }

  /**
   * A code as approveAuthorization leaves one: its grant, and the code bound to `client`, the
   * callback and the challenge of a fresh verifier (none with `challenge: false`).
   */
  async function issued(
    options: {
      client?: ClientRecord;
      user?: UserRecord;
      challenge?: boolean;
      dpopJkt?: string;
      sid?: string;
      verifier?: string;
      scope?: string[];
      /** Another code of this grant (a remembered approval gives each new code the same grant). */
      grantId?: string;
    } = {},
  ): Promise<Issued> {
    const client = options.client ?? app;
    const user = options.user ?? ada;
    const now = world.clock.now();
    const grantId = options.grantId ?? randomUUID();
    const scope = options.scope ?? SCOPE;
    if (options.grantId === undefined) await world.store.grants.create(approvedGrant({ id: grantId, userId: user.id, clientId: client.id, scope }, now));
    const code = randomToken(32);
    const verifier = options.verifier ?? randomToken(32);
    // The sign-in session the code was issued in, live as the approval page leaves it.
    if (options.sid !== undefined)
      await world.store.sessions.create({
        idHash: hashSecret(randomToken(32)),
        sid: options.sid,
        userId: user.id,
        authTime: now,
        createdAt: now,
        expiresAt: now + world.config.lifetimes.session * 1000,
        ip: null,
        userAgent: null,
      });
    await world.store.codes.create({
      hash: hashSecret(code),
      clientId: client.id,
      userId: user.id,
      grantId,
      redirectUri: CALLBACK,
      scope,
      nonce: 'n-0S6_WzA2Mj',
      codeChallenge: options.challenge === false ? '' : s256(verifier),
      authTime: now,
      sid: options.sid ?? null,
      createdAt: now,
      expiresAt: now + world.config.lifetimes.authorizationCode * 1000,
      consumedAt: null,
      dpopJkt: options.dpopJkt ?? null,
      idTokenClaims: [],
    });
    return { code, verifier, grantId };
  }

  const exchange = (client: ClientRecord, params: Record<string, string>, proof: DpopProof | null = null) =>
    authorizationCodeGrant.handle(world.deps, client, params, proof);
  const redeem = ({ code, verifier }: Issued, extra: Record<string, string> = {}) =>
    exchange(app, { code, redirect_uri: CALLBACK, code_verifier: verifier, ...extra });

  it("gives the person's tokens for the code's scope, with the nonce, once, and records the redemption", async () => {
    const sid = randomToken(16);
    const first = await issued({ sid });
    const tokens = await redeem(first);
    assert.equal(tokens.scope, SCOPE.join(' '));
    assert.ok(tokens.access_token);
    assert.ok(tokens.refresh_token, 'offline_access, and the client has the refresh_token grant');
    const idToken = decodeJwt(tokens.id_token!);
    assert.equal(idToken.sub, ada.id);
    assert.equal(idToken.aud, app.id);
    assert.equal(idToken['nonce'], 'n-0S6_WzA2Mj', 'OIDC Core §3.1.3.6: the nonce of the request');
    assert.equal(idToken['sid'], sid);
    assert.notEqual((await world.store.codes.find(hashSecret(first.code)))?.consumedAt, null, 'the code is spent');
    assert.deepEqual(await world.store.sessions.takeClients(sid), [app.id], 'Back-Channel Logout 1.0 §2.7: the client to tell when the session ends');
    assert.ok((await refreshTokenGrant.handle(world.deps, app, { refresh_token: tokens.refresh_token! }, null)).access_token, 'its refresh token works');
    const events = (await world.store.events.list({ limit: 20 })).map((event) => event.type);
    assert.ok(events.includes('code.redeemed'), events.join(' '));
  });

  it('leaves out of the tokens a scope the operator has taken from the client since the code was issued, as a refresh does', async () => {
    const { client: narrowed } = await world.addClient({
      client_name: 'Narrowed',
      redirect_uris: [CALLBACK],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: SCOPE.join(' '),
    });
    const code = await issued({ client: narrowed });
    await updateClient(world.manage, narrowed.id, { scope: 'openid offline_access' });
    const tokens = (await exchange((await world.store.clients.get(narrowed.id))!, {
      grant_type: 'authorization_code',
      code: code.code,
      redirect_uri: CALLBACK,
      code_verifier: code.verifier,
    })) as { scope?: string; access_token: string };
    assert.equal(tokens.scope, 'openid offline_access');
    assert.equal(decodeJwt(tokens.access_token)['scope'], 'openid offline_access');
  });

  it('gives no ID token for a code without openid, and then leaves the client out of the back-channel logout of the session (Back-Channel Logout 1.0 §2.7)', async () => {
    const sid = randomToken(16);
    const tokens = await redeem(await issued({ sid, scope: ['profile', 'offline_access'] }));
    assert.equal(tokens.id_token, undefined);
    assert.deepEqual(await world.store.sessions.takeClients(sid), [], 'no client to tell when the session ends');
  });

  it('refuses with the error RFC 6749 §5.2 and RFC 7636 §4.6 name, and leaves the code to its own client when the request was wrong', async () => {
    const mine = await issued();
    const cases: [string, ClientRecord, Record<string, string>, string][] = [
      ['no code', app, { redirect_uri: CALLBACK, code_verifier: mine.verifier }, 'invalid_request'],
      ['no redirect_uri', app, { code: mine.code, code_verifier: mine.verifier }, 'invalid_request'],
      ['no code_verifier, PKCE required', app, { code: mine.code, redirect_uri: CALLBACK }, 'invalid_request'],
      ['a malformed code_verifier', app, { code: mine.code, redirect_uri: CALLBACK, code_verifier: 'short' }, 'invalid_grant'],
      ['an unknown code', app, { code: randomToken(32), redirect_uri: CALLBACK, code_verifier: mine.verifier }, 'invalid_grant'],
      ["another client's code", other, { code: mine.code, redirect_uri: CALLBACK, code_verifier: mine.verifier }, 'invalid_grant'],
      ['another redirect_uri', app, { code: mine.code, redirect_uri: 'https://notes.example/other', code_verifier: mine.verifier }, 'invalid_grant'],
      ['a code_verifier of another challenge', app, { code: mine.code, redirect_uri: CALLBACK, code_verifier: randomToken(32) }, 'invalid_grant'],
      [
        'an API the grant does not cover (RFC 8707 §2.2)',
        app,
        { code: mine.code, redirect_uri: CALLBACK, code_verifier: mine.verifier, resource: 'https://unknown.example' },
        'invalid_target',
      ],
    ];
    for (const [what, client, params, expected] of cases) assert.equal(await outcome(() => exchange(client, params)), expected, what);
    assert.ok((await redeem(mine)).access_token, 'still redeemable by its own client after the refusals');
  });

  it('refuses a code_verifier shorter than 43 characters even when the challenge was made from it (RFC 7636 §4.1)', async () => {
    // A client that made its challenge from too short a verifier: the pair matches, but a
    // verifier of 42 characters has less entropy than RFC 7636 §4.1 and §7.1 require.
    const short = await issued({ verifier: 'a'.repeat(42) });
    assert.equal(await outcome(() => redeem(short)), 'invalid_grant');
    const long = await issued({ verifier: 'a'.repeat(129) });
    assert.equal(await outcome(() => redeem(long)), 'invalid_grant', 'nor one longer than 128');
  });

  it('refuses a spent, an expired, a revoked-grant code and one of a disabled person with invalid_grant', async () => {
    const spent = await issued();
    await redeem(spent);
    // Each refused while it is still fresh: an expired code would be refused for its age alone.
    const revoked = await issued();
    await world.store.grants.revoke(revoked.grantId, world.clock.now());
    const grace = await world.addUser({ username: 'grace' });
    const disabled = await issued({ user: grace });
    await world.store.users.setDisabled(grace.id, true);
    for (const [what, code, why] of [
      ['spent', spent, /already been used/],
      // RFC 6749 §5.2: invalid_grant when the authorization grant is "revoked".
      ['revoked grant', revoked, /revoked/],
      ['disabled person', disabled, /not active/],
    ] as const) {
      await assert.rejects(redeem(code), (error: OAuthError) => error.code === 'invalid_grant' && why.test(error.message), what);
    }
    const expired = await issued();
    world.clock.advance(world.config.lifetimes.authorizationCode * 1000);
    assert.equal(await outcome(() => redeem(expired)), 'invalid_grant', 'expired: RFC 6749 §4.1.2, short-lived');
    const fresh = await issued();
    world.clock.advance(world.config.lifetimes.authorizationCode * 1000 - 1);
    assert.ok((await redeem(fresh)).access_token, 'a moment before it expires');
  });

  it('refuses a code whose sign-in session ended before it was redeemed, and leaves it for no logout to miss (Back-Channel Logout 1.0 §2.7)', async () => {
    const sid = randomToken(16);
    const code = await issued({ sid });
    // The person signs out before the app redeems the code: the logout finds no client to tell.
    const ended = (await world.store.sessions.listForUser(ada.id, world.clock.now())).filter((each) => each.sid === sid);
    assert.equal(ended.length, 1);
    for (const each of ended) await world.store.sessions.remove(each.idHash);
    assert.deepEqual(await world.store.sessions.takeClients(sid), []);
    await assert.rejects(redeem(code), (error: OAuthError) => error.code === 'invalid_grant' && /session .* has ended/.test(error.message));
    assert.deepEqual(await world.store.sessions.takeClients(sid), [], 'no client recorded for a session that is gone');
    // A code issued without a session (none to end) is redeemed as before.
    assert.ok((await redeem(await issued())).id_token);
  });

  it('refuses every code of a grant revoked by the replay of another of its codes (one remembered grant, several codes)', async () => {
    const first = await issued();
    const second = await issued({ grantId: first.grantId });
    await redeem(first);
    assert.equal(await outcome(() => redeem(first)), 'invalid_grant', 'the replay');
    assert.notEqual((await world.store.grants.get(first.grantId))?.revokedAt, null, 'the replay revoked the grant');
    await assert.rejects(redeem(second), (error: OAuthError) => error.code === 'invalid_grant' && /revoked/.test(error.message));
  });

  it('issues no ID token to a person disabled between the read of the code and its redemption', async () => {
    const grace = await world.addUser({ username: 'grace-later' });
    const code = await issued({ user: grace });
    const redeemStore = world.store.codes.redeem;
    // Disabling a person revokes their grants in the same transaction (flows/users.ts).
    world.store.codes.redeem = async (...args) => {
      await setUserDisabled(world.deps, grace, true);
      return redeemStore(...args);
    };
    try {
      assert.equal(await outcome(() => redeem(code)), 'invalid_grant');
    } finally {
      world.store.codes.redeem = redeemStore;
    }
  });

  it('takes a spent code again as a replay (RFC 6749 §4.1.2): its grant is revoked, with the refresh token issued for it', async () => {
    const replayed = await issued();
    const tokens = await redeem(replayed);
    assert.equal(await outcome(() => redeem(replayed)), 'invalid_grant');
    assert.notEqual((await world.store.grants.get(replayed.grantId))?.revokedAt, null, 'the grant is revoked');
    assert.equal(await outcome(() => refreshTokenGrant.handle(world.deps, app, { refresh_token: tokens.refresh_token! }, null)), 'invalid_grant');
    const events = (await world.store.events.list({ limit: 20 })).map((event) => event.type);
    assert.ok(events.includes('code.replayed') && events.includes('grant.revoked'), events.join(' '));
  });

  it("does not let another client end a code's grant by sending it", async () => {
    const mine = await issued();
    await redeem(mine);
    assert.equal(await outcome(() => exchange(other, { code: mine.code, redirect_uri: CALLBACK, code_verifier: mine.verifier })), 'invalid_grant');
    assert.equal((await world.store.grants.get(mine.grantId))?.revokedAt, null, 'the grant stands');
  });

  it('gives the tokens to one of two exchanges of the same code at once', async () => {
    const raced = await issued();
    const results = await Promise.allSettled([redeem(raced), redeem(raced)]);
    assert.equal(results.filter((result) => result.status === 'fulfilled').length, 1, JSON.stringify(results.map((result) => result.status)));
  });

  it('PKCE optional: a code asked for without a challenge is redeemed without a verifier, and refused with one (RFC 9700 §4.8.2)', async () => {
    const plain = await issued({ client: legacy, challenge: false });
    assert.equal(await outcome(() => exchange(legacy, { code: plain.code, redirect_uri: CALLBACK, code_verifier: plain.verifier })), 'invalid_grant');
    assert.ok((await exchange(legacy, { code: plain.code, redirect_uri: CALLBACK })).access_token);
    const challenged = await issued({ client: legacy });
    assert.equal(await outcome(() => exchange(legacy, { code: challenged.code, redirect_uri: CALLBACK })), 'invalid_grant', 'the request had a challenge');
  });

  it("binds the tokens of a code asked for with dpop_jkt to that key's proof (RFC 9449 §10)", async () => {
    const bound = await issued({ dpopJkt: 'key-one' });
    const params = { code: bound.code, redirect_uri: CALLBACK, code_verifier: bound.verifier };
    assert.equal(await outcome(() => exchange(app, params)), 'invalid_dpop_proof', 'no proof');
    assert.equal(await outcome(() => exchange(app, params, { jkt: 'key-two' })), 'invalid_dpop_proof', "another key's proof");
    const tokens = await exchange(app, params, { jkt: 'key-one' });
    assert.equal(tokens.token_type, 'DPoP');
    assert.deepEqual(decodeJwt(tokens.access_token)['cnf'], { jkt: 'key-one' });
  });
});
