import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { loadConfig } from '../config/index.ts';
import { ManualClock } from '../core/clock.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN } from '../core/protocol.ts';
import { timedSecretKey } from '../core/timed-secret.ts';
import { openStore } from '../store/open.ts';
import { newUserRecord, type ClientRecord, type Store, type UserRecord } from '../store/types.ts';
import { TokenIssuer } from './issue.ts';
import { KeyManager } from './keys.ts';
import { approvedGrant } from '../../test/store/fixtures.ts';

const ISSUER = 'https://auth.example.com';
const lifetimes = { ...loadConfig({}).lifetimes, accessToken: 3600, idToken: 600 };
const client: ClientRecord = {
  id: 'app',
  name: 'App',
  secretHash: null,
  redirectUris: [],
  scopes: ['openid', 'profile'],
  grantTypes: [GRANT_AUTHORIZATION_CODE],
  webOrigins: [],
  requireDpop: false,
  requirePar: false,
  deviceNetworks: [],
  createdAt: 0,
  authMethod: 'none',
  previousSecretHash: null,
  previousSecretExpiresAt: null,
  jwksUri: null,
  jwks: null,
  pkce: 'required',
  firstParty: false,
  postLogoutRedirectUris: [],
  backchannelLogoutUri: null,
};
const user: UserRecord = newUserRecord({ id: 'sub-1', username: 'ada', passwordHash: 'x', name: 'Ada Lovelace', createdAt: 0 });

describe('TokenIssuer', () => {
  let store: Store;
  let keys: KeyManager;
  const clock = new ManualClock(Date.UTC(2026, 0, 1));

  before(async () => {
    store = await openStore(':memory:');
    keys = new KeyManager(store.keys, clock, { leadTimeSeconds: 3600, maxTokenLifetimeSeconds: 3600 });
    await keys.ensureKeys();
    await store.clients.create(client);
    await store.users.create(user);
    await store.grants.create(approvedGrant({ id: 'grant-1', userId: user.id, clientId: client.id, scope: ['openid', 'profile'] }, clock.now()));
  });
  after(() => store.close());

  it("binds a public client's refresh token to its DPoP key, and a confidential client's to none, whichever way it authenticates (RFC 9449 §5)", async () => {
    const issuer = new TokenIssuer(keys, clock, ISSUER, lifetimes, store, 'ES256');
    const cases: [string, Partial<ClientRecord>, string | null][] = [
      ['a public client', { authMethod: 'none', secretHash: null }, 'jkt-of-the-proof'],
      ['a client with a secret', { authMethod: 'client_secret_basic', secretHash: 'a digest' }, null],
      // No secret: it authenticates with a JWT signed by its own key (RFC 7523 §2.2).
      ['a private_key_jwt client', { authMethod: 'private_key_jwt', secretHash: null, jwksUri: 'https://agent.example/jwks.json' }, null],
    ];
    for (const [what, fields, bound] of cases) {
      const own: ClientRecord = { ...client, ...fields, id: `${what}-id`, grantTypes: [GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN] };
      await store.clients.create(own);
      const scope = ['openid', 'offline_access'];
      await store.grants.create(approvedGrant({ id: `${what}-grant`, userId: user.id, clientId: own.id, scope }, clock.now()));
      const tokens = await issuer.issue({ client: own, user, scope, grantId: `${what}-grant`, authTime: clock.now(), dpopJkt: 'jkt-of-the-proof' });
      assert.equal(tokens.token_type, 'DPoP', `${what}: its access token is bound`);
      assert.equal((await store.refreshTokens.find(timedSecretKey(tokens.refresh_token!)))?.dpopJkt, bound, `${what}: its refresh token`);
    }
  });

  for (const alg of ['ES256', 'RS256'] as const) {
    it(`signs the access token with ${alg} when told to, and the ID token with RS256, both valid against the JWKS`, async () => {
      const issuer = new TokenIssuer(keys, clock, ISSUER, lifetimes, store, alg);
      const tokens = await issuer.issue({
        client,
        user,
        scope: ['openid', 'profile'],
        grantId: 'grant-1',
        authTime: clock.now(),
        nonce: 'n-1',
        idTokenClaims: ['name'],
      });
      const jwks = createLocalJWKSet(await keys.jwks());
      const options = { issuer: ISSUER, currentDate: new Date(clock.now()) };
      const access = await jwtVerify(tokens.access_token, jwks, { ...options, audience: ISSUER, typ: 'at+jwt' });
      assert.equal(access.protectedHeader.alg, alg);
      assert.equal(access.payload['client_id'], 'app');
      assert.equal(access.payload.exp, clock.now() / 1000 + 3600);
      const id = await jwtVerify(tokens.id_token!, jwks, { ...options, audience: 'app' });
      assert.equal(id.protectedHeader.alg, 'RS256');
      assert.equal(id.payload['nonce'], 'n-1');
      assert.equal(id.payload['name'], 'Ada Lovelace', 'asked for in the ID token (OIDC Core §5.5)');
      assert.equal(id.payload['preferred_username'], undefined, 'not asked for: userinfo only (OIDC Core §5.4)');
      assert.equal(id.payload.exp, clock.now() / 1000 + 600);
    });
  }

  for (const [alg, signingAlg] of [
    ['ES256', 'RS256'],
    ['RS256', 'ES256'],
  ] as const) {
    it(`signs an API's access token with the API's ${signingAlg} whatever the server's (${alg}) for its own`, async () => {
      const issuer = new TokenIssuer(keys, clock, ISSUER, lifetimes, store, alg);
      const resource = {
        identifier: 'https://api.example/',
        name: 'API',
        scopes: [],
        accessTokenTtl: null,
        introspectionSecretHash: null,
        signingAlg,
        createdAt: 0,
      };
      const tokens = await issuer.issue({ client, user, scope: ['openid'], resource, grantId: 'grant-1', authTime: clock.now() });
      const access = await jwtVerify(tokens.access_token, createLocalJWKSet(await keys.jwks()), {
        issuer: ISSUER,
        audience: 'https://api.example/',
        currentDate: new Date(clock.now()),
      });
      assert.equal(access.protectedHeader.alg, signingAlg);
    });

    it(`signs a client's own token for an API (client_credentials) with the API's ${signingAlg} whatever the server's (${alg})`, async () => {
      const issuer = new TokenIssuer(keys, clock, ISSUER, lifetimes, store, alg);
      const resource = {
        identifier: 'https://api.example/',
        name: 'API',
        scopes: [],
        accessTokenTtl: null,
        introspectionSecretHash: null,
        signingAlg,
        createdAt: 0,
      };
      const tokens = await issuer.issueForClient({ client: { ...client, authMethod: 'client_secret_basic' }, scope: ['api:read'], resource, dpopJkt: null });
      const access = await jwtVerify(tokens.access_token, createLocalJWKSet(await keys.jwks()), {
        issuer: ISSUER,
        audience: 'https://api.example/',
        subject: 'app',
        typ: 'at+jwt',
        currentDate: new Date(clock.now()),
      });
      assert.equal(access.protectedHeader.alg, signingAlg, 'RFC 9068 §2.1: as the API chose');
    });
  }
});
