/**
 * Checking a presented access token without HTTP (flows/lifecycle/access-token.ts): JWT access
 * tokens (RFC 9068) signed here with jose under the world's own published key (or another),
 * and tokens the token issuer signs for a person's grant, a client's own token
 * (client_credentials), a token exchange (RFC 8693) and an ID-JAG; then whether each still
 * stands as its grant, client, person, API and trusted issuer change, and how a DPoP-bound one
 * must be presented (RFC 9449 §7), at UserInfo and as any resource checks it.
 * test/userinfo.test.ts, test/dpop.test.ts, test/dpop-proofs.test.ts, test/client-credentials.test.ts
 * and test/token-exchange.test.ts send the same kinds of token through the endpoints, where the
 * WWW-Authenticate challenges (src/http/userinfo.ts, src/http/dpop.ts) are checked.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT, UnsecuredJWT } from 'jose';
import { USERINFO_PATH } from '../../core/endpoints.ts';
import type { ClientRecord, ResourceRecord, UserRecord } from '../../store/types.ts';
import type { ActiveKey } from '../../tokens/keys.ts';
import type { AccessTokenClaims } from '../../tokens/issue.ts';
import { FLOW_ISSUER, flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { approvedGrant } from '../../../test/store/fixtures.ts';
import { DpopNonces } from '../dpop/nonce.ts';
import { accessTokenHash, checkDpopProof, type DpopDeps } from '../dpop/proof.ts';
import { addResource, removeResource } from '../manage/resources.ts';
import { removeClient } from '../manage/clients.ts';
import { checkSenderConstraint, liveAccessToken, liveClientToken, looksLikeJwt, type Presentation } from './access-token.ts';
import { userInfo } from './userinfo.ts';

const API = 'https://reports.example.com';
const IDP = 'https://idp.example.com';
const USERINFO_URL = `${FLOW_ISSUER}${USERINFO_PATH}`;

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

describe('access tokens presented at UserInfo and at an API (flows/lifecycle/access-token.ts)', () => {
  let world: FlowWorld;
  let api: ResourceRecord;
  /** A person's app, and another: both of the code grant. */
  let app: ClientRecord;
  let other: ClientRecord;
  /** A client of the client_credentials grant, the jwt-bearer grant (ID-JAGs), the token exchange grant. */
  let worker: ClientRecord;
  let agent: ClientRecord;
  let exchanger: ClientRecord;
  let ada: UserRecord;
  /** Ada's approval of the app. */
  let adaGrant: string;
  /** The world's ES256 key that signs now (published in its JWKS). */
  let signer: ActiveKey;
  /** A DPoP key of the client's, and another. */
  let dpopKey: PrivateKey;
  let dpopJwk: JWK;
  let dpopJkt: string;
  let strangerKey: PrivateKey;
  let strangerJwk: JWK;
  let dpop: DpopDeps;
  let made = 0;

  before(async () => {
    world = await flowWorld();
    ({ resource: api } = await addResource(world.manage, {
      identifier: API,
      name: 'Reports',
      scopes: [{ name: 'reports:read', description: 'Read reports' }],
    }));
    const code = {
      redirect_uris: ['https://app.example/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid profile offline_access reports:read',
    };
    ({ client: app } = await world.addClient({ client_name: 'Reports app', ...code }));
    ({ client: other } = await world.addClient({ client_name: 'Other app', ...code }));
    ({ client: worker } = await world.addClient({ client_name: 'Worker', grant_types: ['client_credentials'], scope: 'reports:read' }));
    ({ client: agent } = await world.addClient({ client_name: 'Agent', grant_types: ['jwt-bearer'], scope: 'reports:read' }));
    exchanger = await exchangingClient();
    ada = await world.addUser({ username: 'ada', name: 'Ada Lovelace' });
    adaGrant = await grantFor(ada);
    await world.store.trustedIssuers.create({ issuer: IDP, jwksUri: null, jwks: { keys: [] }, addedByOwner: true, createdAt: world.clock.now() });
    signer = await world.keys.signingKey('ES256');
    const pair = await generateKeyPair('ES256', { extractable: true });
    dpopKey = pair.privateKey;
    dpopJwk = await exportJWK(pair.publicKey);
    dpopJkt = await calculateJwkThumbprint(dpopJwk, 'sha256');
    const stranger = await generateKeyPair('ES256', { extractable: true });
    strangerKey = stranger.privateKey;
    strangerJwk = await exportJWK(stranger.publicKey);
    const nonces = new DpopNonces(async () => new Uint8Array(32).fill(3), world.clock, world.config.dpop.nonceLifetime);
    dpop = { store: world.store, clock: world.clock, settings: { ...world.config.dpop, nonces: false }, nonces };
  });
  after(() => world.close());

  const seconds = () => Math.floor(world.clock.now() / 1000);
  const live = (token: string) => liveAccessToken(world.deps, token);
  const bearer = (token: string): Presentation => ({ scheme: 'Bearer', token, proof: null });

  /** A client of the token exchange grant, for the API alone. */
  async function exchangingClient(): Promise<ClientRecord> {
    made += 1;
    return (await world.addClient({ client_name: `Exchanger ${made}`, grant_types: ['token-exchange'], token_exchange_audiences: [API] })).client;
  }

  /** A person's approval of `client`, given now. */
  async function grantFor(user: UserRecord, client: ClientRecord = app): Promise<string> {
    const id = randomUUID();
    await world.store.grants.create(
      approvedGrant({ id, userId: user.id, clientId: client.id, scope: ['openid', 'profile', 'reports:read'] }, world.clock.now()),
    );
    return id;
  }

  /** An API registered now, with a fresh identifier. */
  async function freshApi(): Promise<string> {
    made += 1;
    const identifier = `https://api${made}.example.com`;
    await addResource(world.manage, { identifier, name: `API ${made}`, scopes: [{ name: `api${made}:read`, description: 'Read' }] });
    return identifier;
  }

  /** The registration of `client` with `changes`, as the operator's edit would leave it. */
  async function reregister(client: ClientRecord, changes: Partial<ClientRecord>): Promise<void> {
    assert.ok(await world.store.clients.update(client.id, { ...client, ...changes }));
  }

  /**
   * An access token as this server signs one for Ada's approval of the app, for UserInfo, issued
   * now: RFC 9068 §2.2's claims, `claims` changed (undefined: left out), `header` changed, signed
   * with `key` (by default the world's key that signs now, under its kid).
   */
  function mint(claims: JWTPayload = {}, header: Record<string, unknown> = {}, key: ActiveKey['key'] | PrivateKey = signer.key): Promise<string> {
    const now = seconds();
    const payload = {
      iss: FLOW_ISSUER,
      aud: FLOW_ISSUER,
      sub: ada.id,
      client_id: app.id,
      scope: 'openid profile',
      gid: adaGrant,
      iat: now,
      exp: now + 300,
      jti: randomUUID(),
      ...claims,
    };
    const defined = Object.fromEntries(Object.entries(payload).filter(([, value]) => value !== undefined));
    const protectedHeader = Object.fromEntries(
      Object.entries({ alg: 'ES256', kid: signer.kid, typ: 'at+jwt', ...header }).filter(([, value]) => value !== undefined),
    );
    return new SignJWT(defined).setProtectedHeader(protectedHeader as { alg: string }).sign(key);
  }

  /** The claims of a token this server signed. */
  async function claimsOf(token: string): Promise<AccessTokenClaims> {
    const claims = await world.tokens.readAccessToken(token);
    assert.ok(claims, 'a token this server signed');
    return claims;
  }

  /** A DPoP proof for UserInfo with `token` (RFC 9449 §4.2, `ath` its hash), signed by `key`, as checked there. */
  async function proofFor(token: string, key = dpopKey, jwk = dpopJwk) {
    const jwt = await new SignJWT({ jti: randomUUID(), htm: 'GET', htu: USERINFO_URL, iat: seconds(), ath: accessTokenHash(token) })
      .setProtectedHeader({ typ: 'dpop+jwt', alg: 'ES256', jwk })
      .sign(key);
    return checkDpopProof(dpop, jwt, { method: 'GET', url: USERINFO_URL, accessToken: token });
  }

  it("takes a live token of a person's for UserInfo and for a registered API, answering whom it speaks for and which API it is for", async () => {
    const now = world.clock.now();
    const own = await world.tokens.issue({ client: app, user: ada, scope: ['openid', 'profile'], grantId: adaGrant, authTime: now });
    const forOwn = await live(own.access_token);
    assert.equal(forOwn?.user?.id, ada.id);
    assert.equal(forOwn?.resource, null, "this server's own API: its aud is the issuer");
    const answered = await userInfo(world.deps, bearer(own.access_token));
    assert.deepEqual([answered.clientId, answered.claims['sub']], [app.id, ada.id], 'UserInfo answers for the person, to the client it was issued to');

    const forApi = await world.tokens.issue({ client: app, user: ada, scope: ['reports:read'], resource: api, grantId: adaGrant, authTime: now });
    const atApi = await live(forApi.access_token);
    assert.equal(atApi?.user?.id, ada.id);
    assert.equal(atApi?.resource?.identifier, API);
    // RFC 9068 §4: "The resource server MUST validate that the aud claim contains a resource indicator
    // value corresponding to an identifier the resource server expects for itself."
    assert.equal(await outcome(() => userInfo(world.deps, bearer(forApi.access_token))), 'invalid_token', "an API's token is not UserInfo's");
    assert.ok(await live(await mint()), 'a token minted here as the issuer mints one stands: the refusals below are each for their one change');
  });

  it('refuses a token RFC 9068 §4 says a resource must refuse: no live token, invalid_token at UserInfo', async () => {
    const { privateKey: foreign } = await generateKeyPair('ES256');
    const now = seconds();
    const good = await mint();
    const [head, body, signature] = good.split('.') as [string, string, string];
    const widened = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), scope: 'openid profile email' })).toString(
      'base64url',
    );
    const refresh = await world.tokens.issue({
      client: app,
      user: ada,
      scope: ['openid'],
      refreshScope: ['openid', 'offline_access'],
      grantId: adaGrant,
      authTime: world.clock.now(),
    });
    assert.ok(refresh.refresh_token);
    const cases: [string, Promise<string> | string][] = [
      ['an opaque token: a refresh token', refresh.refresh_token],
      ['not a token', 'Bearer'],
      ['typ JWT, an ID token\'s ("verify that the typ header value is at+jwt")', mint({}, { typ: 'JWT' })],
      ['no typ', mint({}, { typ: undefined })],
      ['another iss (it "MUST exactly match the issuer identifier")', mint({ iss: 'https://evil.example' })],
      ['expired ("the current time MUST be before the time represented by the exp claim")', mint({ exp: now })],
      ['no exp', mint({ exp: undefined })],
      ['no aud', mint({ aud: undefined })],
      ['an aud that is no registered API', mint({ aud: 'https://nowhere.example' })],
      ['no sub', mint({ sub: undefined })],
      ['no jti', mint({ jti: undefined })],
      ['no client_id', mint({ client_id: undefined })],
      ['signed by a key this server does not publish, under the kid of one it does', mint({}, {}, foreign)],
      [
        'unsigned (alg none)',
        new UnsecuredJWT({
          iss: FLOW_ISSUER,
          aud: FLOW_ISSUER,
          sub: ada.id,
          client_id: app.id,
          scope: 'openid',
          gid: adaGrant,
          jti: 'x',
          iat: now,
          exp: now + 60,
        }).encode(),
      ],
      ['its payload changed after signing (a scope widened)', `${head}.${widened}.${signature}`],
    ];
    for (const [what, pending] of cases) {
      const token = await pending;
      assert.equal(await live(token), null, what);
      assert.equal(await outcome(() => userInfo(world.deps, bearer(token))), 'invalid_token', what);
    }
  });

  it('tells a JWT from an opaque token by its shape alone: three base64url parts, none empty', () => {
    const cases: [string, string, boolean][] = [
      ['a JWT', 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhZGEifQ.c2lnbmF0dXJl', true],
      ['a refresh token', '00mjy1a2wAbC_dEf-GhIjKlMnOpQrStUvWxYz0123456789abcdefg', false],
      ['an unsigned JWT (empty signature)', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJhZGEifQ.', false],
      ['an empty payload', 'eyJhbGciOiJFUzI1NiJ9..c2lnbmF0dXJl', false],
      ['four parts (a JWE has five)', 'a.b.c.d', false],
      ['base64 padding', 'eyJh.eyJz.c2ln==', false],
      ['a space inside', 'eyJh.ey Jz.c2ln', false],
      ['a line break after it', 'eyJh.eyJz.c2ln\n', false],
    ];
    for (const [what, token, jwt] of cases) assert.equal(looksLikeJwt(token), jwt, what);
  });

  it("ends a person's token with its grant, its jti's revocation (RFC 7009), its person's disabling, or its API's removal", async () => {
    const grace = await world.addUser({ username: 'grace' });
    const linus = await world.addUser({ username: 'linus' });
    const revokedGrant = await grantFor(ada);
    await world.store.grants.revoke(revokedGrant, world.clock.now());
    const linusGrant = await grantFor(linus);
    await world.store.users.setDisabled(linus.id, true);
    const jti = randomUUID();
    await world.store.accessTokens.revoke(jti, world.clock.now() + 300_000);
    const removed = await freshApi();
    const removedGrant = await grantFor(ada);
    await removeResource(world.manage, removed);
    const cases: [string, Promise<string>][] = [
      ['its jti revoked', mint({ jti })],
      ['its grant revoked', mint({ gid: revokedGrant })],
      ['a grant there is not', mint({ gid: randomUUID() })],
      ["another person's (the grant is Ada's, the token says Grace)", mint({ sub: grace.id })],
      ["another client's (the grant is the app's, the token says the other app's)", mint({ client_id: other.id })],
      ['its person disabled', mint({ sub: linus.id, gid: linusGrant })],
      ['its API removed ("removing an API ends its tokens at once")', mint({ aud: removed, gid: removedGrant, scope: 'reports:read' })],
    ];
    for (const [what, token] of cases) assert.equal(await live(await token), null, what);
    assert.ok(await live(await mint({ sub: grace.id, gid: await grantFor(grace) })), "Grace's own grant stands");
  });

  it('takes a token for an API only from a grant given (or renewed) since that API was registered: one registered again is another API', async () => {
    const remembered = { id: randomUUID(), userId: ada.id, clientId: app.id, scope: ['openid', 'reports:read'], authTime: world.clock.now() };
    const grant = await world.store.grants.remember(remembered, world.clock.now());
    world.clock.advance(1000);
    const later = await freshApi();
    const token = await mint({ aud: later, gid: grant.id, scope: 'reports:read' });
    assert.equal(await live(token), null, 'approved before the API existed');
    world.clock.advance(1000);
    await world.store.grants.remember({ ...remembered, scope: ['reports:read'] }, world.clock.now());
    assert.equal((await live(token))?.resource?.identifier, later, 'the grant renewed since: the last approval may have added the API');
  });

  it("takes a client's own token (client_credentials) for a registered API alone, never at UserInfo, which has nobody to describe", async () => {
    const issued = await world.tokens.issueForClient({ client: worker, scope: ['reports:read'], resource: api, dpopJkt: null });
    const own = await live(issued.access_token);
    assert.ok(own && own.user === null);
    assert.deepEqual([own.client.id, own.resource.identifier, own.claims.sub], [worker.id, API, worker.id], 'RFC 9068 §2.2: sub is the client');
    const forUserinfo = await mint({ sub: worker.id, client_id: worker.id, gid: undefined, scope: 'openid' });
    assert.equal(await live(forUserinfo), null, 'a token without a grant for the issuer itself');
    assert.equal(await outcome(() => userInfo(world.deps, bearer(forUserinfo))), 'invalid_token');
    assert.equal(await outcome(() => userInfo(world.deps, bearer(issued.access_token))), 'invalid_token');

    // Registering refuses the issuer's own URL as an API (manage/resources.ts). Were a record
    // there all the same (written before that rule, or by hand), a token without a grant, a
    // client's own or one redeemed for an ID-JAG, would still not be good for this server's own API.
    await world.store.resources.create({
      ...api,
      identifier: FLOW_ISSUER,
      scopes: [{ name: 'own:read', description: 'Read' }],
      createdAt: world.clock.now() - 1000,
    });
    try {
      assert.equal(await live(forUserinfo), null, "a client's own token for the issuer");
      const asserted = await mint({ client_id: agent.id, aud: FLOW_ISSUER, gid: undefined, id_jag_iss: IDP, scope: 'openid' });
      assert.equal(await live(asserted), null, 'a token redeemed for an ID-JAG, for the issuer');
    } finally {
      await world.store.resources.remove(FLOW_ISSUER);
    }
  });

  it("ends a client's own token when it is revoked, its client loses the grant or is gone, or its API is no longer the one it was issued for", async () => {
    const claims = await claimsOf((await world.tokens.issueForClient({ client: worker, scope: ['reports:read'], resource: api, dpopJkt: null })).access_token);
    assert.equal((await liveClientToken(world.deps, claims))?.id, worker.id);
    const jti = randomUUID();
    await world.store.accessTokens.revoke(jti, (claims.exp + 1) * 1000);
    const cases: [string, AccessTokenClaims][] = [
      ['its jti revoked', { ...claims, jti }],
      ['one with a grant: a person’s', { ...claims, gid: adaGrant }],
      ['a client there is not', { ...claims, sub: 'nobody', client_id: 'nobody' }],
      ['sub another than its client', { ...claims, sub: app.id }],
      ['a client not registered for client_credentials', { ...claims, sub: app.id, client_id: app.id }],
    ];
    for (const [what, changed] of cases) assert.equal(await liveClientToken(world.deps, changed), null, what);

    // The API removed, then registered again under the same identifier: another API.
    const again = await freshApi();
    const resource = await world.store.resources.get(again);
    assert.ok(resource);
    const before = (await world.tokens.issueForClient({ client: worker, scope: [], resource, dpopJkt: null })).access_token;
    assert.ok(await live(before));
    await removeResource(world.manage, again);
    assert.equal(await live(before), null, 'its API removed');
    world.clock.advance(1000);
    await addResource(world.manage, { identifier: again, name: 'Again', scopes: [{ name: 'again:read', description: 'Read' }] });
    assert.equal(await live(before), null, 'its API registered again after it was issued');
  });

  it("ends a client's own token when its client is removed and another registered under the same client_id", async () => {
    const { client: deploy } = await world.addClient({
      client_id: 'ci-deploy',
      client_name: 'CI deploy',
      grant_types: ['client_credentials'],
      scope: 'reports:read',
    });
    const claims = await claimsOf((await world.tokens.issueForClient({ client: deploy, scope: ['reports:read'], resource: api, dpopJkt: null })).access_token);
    assert.equal((await liveClientToken(world.deps, claims))?.id, 'ci-deploy');
    await removeClient(world.manage, 'ci-deploy');
    assert.equal(await liveClientToken(world.deps, claims), null, 'its client removed');
    world.clock.advance(1000);
    await world.addClient({ client_id: 'ci-deploy', client_name: 'CI deploy, again', grant_types: ['client_credentials'], scope: 'reports:read' });
    assert.equal(await liveClientToken(world.deps, claims), null, 'another client under its id: the removed one’s token stays dead');
  });

  it("counts a client's own token against its API's registration and its client's revocation by the second its iat names", async () => {
    const start = Math.ceil(world.clock.now() / 1000) * 1000;
    world.clock.set(start + 400);
    const sameSecond = await freshApi();
    const resource = await world.store.resources.get(sameSecond);
    assert.ok(resource);
    const token = (await world.tokens.issueForClient({ client: worker, scope: [], resource, dpopJkt: null })).access_token;
    assert.equal((await claimsOf(token)).iat * 1000, start, 'iat is in whole seconds: before the API was registered, by the milliseconds');
    assert.ok(await live(token), 'asked for right after the API was registered, in the same second');

    // Told to forget its tokens at a whole second: what was issued in that second and before ends.
    const { client: forgetful } = await world.addClient({ client_name: 'Forgetful', grant_types: ['client_credentials'], scope: 'reports:read' });
    world.clock.set(start + 1000);
    const inTheSecond = (await world.tokens.issueForClient({ client: forgetful, scope: [], resource: api, dpopJkt: null })).access_token;
    await world.store.clients.revokeTokens(forgetful.id, start + 1000);
    world.clock.set(start + 2000);
    const after = (await world.tokens.issueForClient({ client: forgetful, scope: [], resource: api, dpopJkt: null })).access_token;
    assert.equal(await live(inTheSecond), null, 'issued in the second of the revocation');
    assert.ok(await live(after), 'issued after');
  });

  it('ends an exchanged token (RFC 8693, with act) once its exchanging client may no longer exchange for its API, whatever the grant says', async () => {
    const now = world.clock.now();
    const issued = await world.tokens.issueExchanged({
      client: exchanger,
      userId: ada.id,
      grantId: adaGrant,
      scope: ['reports:read'],
      resource: api,
      act: { sub: exchanger.id },
      notAfter: seconds() + 300,
      dpopJkt: null,
    });
    const exchanged = await live(issued.access_token);
    assert.deepEqual([exchanged?.user?.id, exchanged?.claims.client_id, exchanged?.claims.act?.sub], [ada.id, exchanger.id, exchanger.id]);

    const exchangedBy = async (client: ClientRecord) =>
      mint({ client_id: client.id, aud: API, scope: 'reports:read', act: { sub: client.id }, iat: Math.floor(now / 1000) });
    const lostGrant = await exchangingClient();
    await reregister(lostGrant, { grantTypes: ['client_credentials'] });
    const lostApi = await exchangingClient();
    await reregister(lostApi, { exchangeAudiences: [await freshApi()] });
    const forgot = await exchangingClient();
    await world.store.clients.revokeTokens(forgot.id, Math.floor(now / 1000) * 1000);
    const revoked = await grantFor(ada);
    await world.store.grants.revoke(revoked, now);
    const cases: [string, Promise<string>][] = [
      ['its client no longer of the token exchange grant', exchangedBy(lostGrant)],
      ['its API no longer among its exchange audiences', exchangedBy(lostApi)],
      ['its client told to forget its tokens since (in the second it was issued)', exchangedBy(forgot)],
      ['acted for by the grant’s own client, which may not exchange', exchangedBy(app)],
      ['the grant it lives on revoked', mint({ client_id: exchanger.id, aud: API, scope: 'reports:read', act: { sub: exchanger.id }, gid: revoked })],
    ];
    for (const [what, token] of cases) assert.equal(await live(await token), null, what);
    assert.ok(await live(await exchangedBy(exchanger)), 'the exchanging client still may');
  });

  it("reads back what an exchanged token's chain held (chain_scope), and refuses one malformed or on a token nobody acted for", async () => {
    const PRINTS = 'https://prints.example.com';
    const exchanged = (claims: JWTPayload) => mint({ client_id: exchanger.id, aud: API, scope: 'reports:read', act: { sub: exchanger.id }, ...claims });
    const read = await live(await exchanged({ chain_scope: { [PRINTS]: 'prints:status', [API]: '' } }));
    assert.deepEqual(
      read?.claims.chainScope,
      new Map([
        [PRINTS, ['prints:status']],
        [API, []],
      ]),
    );
    assert.deepEqual((await live(await exchanged({})))?.claims.chainScope, new Map(), 'exchanged before tokens carried it: none');
    const ownClient = { act: undefined, client_id: app.id };
    assert.ok(await live(await exchanged(ownClient)), 'the same token, its grant’s own client’s and acted for by nobody, without chain_scope');
    const cases: [string, JWTPayload][] = [
      ['a string', { chain_scope: 'prints:status' }],
      ['a list', { chain_scope: [PRINTS] }],
      ['a scope that is no string', { chain_scope: { [PRINTS]: ['prints:status'] } }],
      [
        'more APIs than a chain of 32 actors passes',
        { chain_scope: Object.fromEntries(Array.from({ length: 33 }, (_, n) => [`https://api${n}.example.com`, ''])) },
      ],
      ['on a token nobody acted for', { ...ownClient, chain_scope: { [PRINTS]: 'prints:status' } }],
    ];
    for (const [what, claims] of cases) assert.equal(await live(await exchanged(claims)), null, what);
  });

  it('ends a token redeemed for an ID-JAG once its issuer, client, person or API no longer stands', async () => {
    const issued = await world.tokens.issueAsserted({ client: agent, userId: ada.id, scope: ['reports:read'], resource: api, assertedBy: IDP, dpopJkt: null });
    const asserted = await live(issued.access_token);
    assert.deepEqual([asserted?.user?.id, asserted?.resource?.identifier, asserted?.claims.assertedBy], [ada.id, API, IDP]);

    const start = Math.ceil(world.clock.now() / 1000) * 1000;
    world.clock.set(start);
    const byIdp = (claims: JWTPayload = {}) => mint({ client_id: agent.id, aud: API, scope: 'reports:read', gid: undefined, id_jag_iss: IDP, ...claims });
    const trust = (issuer: string, createdAt: number) =>
      world.store.trustedIssuers.create({ issuer, jwksUri: null, jwks: { keys: [] }, addedByOwner: true, createdAt });
    await trust('https://same-second.example', start + 999);
    await trust('https://next-second.example', start + 1000);
    await trust('https://removed.example', start);
    await world.store.trustedIssuers.remove('https://removed.example');
    const { client: lost } = await world.addClient({ client_name: 'Lost agent', grant_types: ['jwt-bearer'], scope: 'reports:read' });
    await reregister(lost, { grantTypes: ['client_credentials'] });
    const { client: forgot } = await world.addClient({ client_name: 'Forgetful agent', grant_types: ['jwt-bearer'], scope: 'reports:read' });
    await world.store.clients.revokeTokens(forgot.id, start);
    const barbara = await world.addUser({ username: 'barbara', disabled: true });
    const jti = randomUUID();
    await world.store.accessTokens.revoke(jti, start + 300_000);
    world.clock.set(start + 1500);
    const later = await freshApi();
    world.clock.set(start);
    const cases: [string, Promise<string>][] = [
      ['its jti revoked', byIdp({ jti })],
      ['its issuer no longer trusted', byIdp({ id_jag_iss: 'https://removed.example' })],
      ['its issuer trusted only after it was issued', byIdp({ id_jag_iss: 'https://next-second.example' })],
      ['its client no longer of the jwt-bearer grant', byIdp({ client_id: lost.id })],
      ['its client told to forget its tokens since', byIdp({ client_id: forgot.id })],
      ['its person disabled', byIdp({ sub: barbara.id })],
      ['its API registered after it was issued', byIdp({ aud: later })],
      ['for this server’s own API (UserInfo)', byIdp({ aud: FLOW_ISSUER, scope: 'openid' })],
    ];
    for (const [what, token] of cases) assert.equal(await live(await token), null, what);
    assert.ok(await live(await byIdp({ id_jag_iss: 'https://same-second.example' })), 'an issuer trusted within the second it was issued');
  });

  it('ends a token redeemed for an ID-JAG when its client is removed and another registered under the same client_id', async () => {
    const { client: scout } = await world.addClient({ client_id: 'id-jag-scout', client_name: 'Scout', grant_types: ['jwt-bearer'], scope: 'reports:read' });
    const issued = await world.tokens.issueAsserted({ client: scout, userId: ada.id, scope: ['reports:read'], resource: api, assertedBy: IDP, dpopJkt: null });
    assert.equal((await live(issued.access_token))?.claims.client_id, 'id-jag-scout');
    await removeClient(world.manage, 'id-jag-scout');
    assert.equal(await live(issued.access_token), null, 'its client removed');
    world.clock.advance(1000);
    await world.addClient({ client_id: 'id-jag-scout', client_name: 'Scout, again', grant_types: ['jwt-bearer'], scope: 'reports:read' });
    assert.equal(await live(issued.access_token), null, 'another client under its id: the removed one’s token stays dead');
  });

  it('takes a DPoP-bound token (cnf.jkt) only with the DPoP scheme and a proof of its key, and an unbound one only as Bearer (RFC 9449 §7)', async () => {
    const now = world.clock.now();
    const bound = (await world.tokens.issue({ client: app, user: ada, scope: ['openid'], grantId: adaGrant, authTime: now, dpopJkt })).access_token;
    assert.equal((await claimsOf(bound)).jkt, dpopJkt, 'RFC 9449 §6.1: cnf.jkt, the thumbprint of the key');
    const plain = (await world.tokens.issue({ client: app, user: ada, scope: ['openid'], grantId: adaGrant, authTime: now })).access_token;
    const cases: [string, string, 'Bearer' | 'DPoP', Promise<{ jkt: string } | null> | null, string][] = [
      ['bound, DPoP, a proof of its key', bound, 'DPoP', proofFor(bound), 'ok'],
      // §7.2: a resource "MUST NOT grant access to the resource unless all checks are successful".
      ['bound, sent as a bearer token', bound, 'Bearer', null, 'invalid_token'],
      ['bound, sent as a bearer token with a proof of its key beside it', bound, 'Bearer', proofFor(bound), 'invalid_token'],
      // §7.1: "the public key to which the access token is bound matches the public key of the DPoP proof".
      ['bound, DPoP, a proof of another key', bound, 'DPoP', proofFor(bound, strangerKey, strangerJwk), 'invalid_dpop_proof'],
      ['bound, DPoP, no proof', bound, 'DPoP', null, 'invalid_dpop_proof'],
      ['unbound, sent with the DPoP scheme and a proof', plain, 'DPoP', proofFor(plain), 'invalid_token'],
      ['unbound, as a bearer token', plain, 'Bearer', null, 'ok'],
    ];
    for (const [what, token, scheme, proof, expected] of cases) {
      assert.equal(await outcome(async () => userInfo(world.deps, { scheme, token, proof: await proof })), expected, what);
    }
  });

  it('holds any resource to the same binding: a bound client token, checked as the SCIM, admin and SSF APIs check theirs', async () => {
    const issued = await world.tokens.issueForClient({ client: worker, scope: ['reports:read'], resource: api, dpopJkt });
    assert.equal(issued.token_type, 'DPoP', 'RFC 9449 §5: token_type DPoP');
    const claims = await claimsOf(issued.access_token);
    const presented = (scheme: 'Bearer' | 'DPoP', jkt: string | null): Presentation => ({
      scheme,
      token: issued.access_token,
      proof: jkt === null ? null : { jkt },
    });
    const strangerJkt = await calculateJwkThumbprint(strangerJwk, 'sha256');
    const cases: [string, Presentation, string][] = [
      ['DPoP, a proof of its key', presented('DPoP', dpopJkt), 'ok'],
      ['Bearer', presented('Bearer', null), 'invalid_token'],
      ['DPoP, a proof of another key', presented('DPoP', strangerJkt), 'invalid_dpop_proof'],
      ['DPoP, no proof', presented('DPoP', null), 'invalid_dpop_proof'],
    ];
    for (const [what, presentation, expected] of cases) assert.equal(await outcome(() => checkSenderConstraint(claims, presentation)), expected, what);
    await assert.rejects(
      async () => checkSenderConstraint(claims, presented('Bearer', null)),
      (error: Error & { description?: string }) => /send it with the DPoP scheme/.test(error.description ?? ''),
      'told how to send it',
    );
  });
});
