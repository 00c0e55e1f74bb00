/**
 * The store contract: one suite that every `Store` implementation must pass. Each store's
 * test file calls `storeContract` with a way to open a fresh store.
 *
 * The suite shares one store across its cases, so every case makes its own ids and user
 * codes. Times are fixed: most cases live around T0 (2026); the purge cases use earlier
 * years of their own, so that their cutoffs never reach another case's rows.
 */

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { AuditEvent } from '../../src/core/events.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN, GRANT_TOKEN_EXCHANGE } from '../../src/core/protocol.ts';
import { PURGE_BATCH_SIZE } from '../../src/store/sql/statements.ts';
import { identityProvidersContract } from './identity-providers-contract.ts';
import { webhooksContract } from './webhooks-contract.ts';
import { mailContract } from './mail-contract.ts';
import { ssfContract } from './ssf-contract.ts';
import { samlContract } from './saml-contract.ts';
import { scimContract } from './scim-contract.ts';
import { organizationsContract } from './organizations-contract.ts';
import { scimSearchContract } from './scim-search-contract.ts';
import { trustedIssuersContract } from './trusted-issuers-contract.ts';
import { secondFactorContract } from './second-factor-contract.ts';
import { ADA_CLAIMS, auditEvent, clientRecord, pendingDevice } from './fixtures.ts';
import {
  DuplicateError,
  MissingReferenceError,
  newUserRecord,
  type AuthorizationCodeRecord,
  type ClientChanges,
  type ClientRecord,
  type DeviceAuthorizationRecord,
  type GrantRecord,
  type PushedRequestRecord,
  type RefreshTokenRecord,
  type ResourceRecord,
  type SessionRecord,
  type SigningKeyRecord,
  type Store,
  type UserRecord,
} from '../../src/store/types.ts';

export interface OpenedStore {
  readonly store: Store;
  /** Closes the store and removes what `open` created. */
  cleanup(): Promise<void>;
}

const T0 = Date.UTC(2026, 0, 1);
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * Defines the suite `name` for one store. `open` is called once, before the first case;
 * the store it returns must be empty and is shared by every case.
 */
export function storeContract(name: string, open: () => Promise<OpenedStore>): void {
  describe(name, () => {
    let opened: OpenedStore | undefined;
    let store: Store;

    before(async () => {
      opened = await open();
      store = opened.store;
    });
    after(async () => {
      await opened?.cleanup();
    });

    let counter = 0;
    const unique = (prefix: string): string => `${prefix}-${++counter}`;
    const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';
    /** A fresh user code: 8 upper-case characters from the RFC 8628 §6.1 style alphabet. */
    const userCode = (): string => {
      let n = ++counter;
      let code = '';
      for (let i = 0; i < 8; i++) {
        code = USER_CODE_ALPHABET[n % USER_CODE_ALPHABET.length] + code;
        n = Math.floor(n / USER_CODE_ALPHABET.length);
      }
      return code;
    };

    async function givenClient(overrides: Partial<ClientRecord> = {}): Promise<ClientRecord> {
      const client = clientRecord({
        id: unique('client'),
        name: 'Example App',
        secretHash: 'secret-hash',
        authMethod: 'client_secret_basic',
        redirectUris: ['https://app.example/callback', 'http://127.0.0.1/callback'],
        scopes: ['openid', 'profile', 'offline_access'],
        grantTypes: [GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN],
        webOrigins: ['https://app.example'],
        deviceNetworks: ['192.0.2.0/24', '2001:db8::/48'],
        createdAt: T0,
        ...overrides,
      });
      await store.clients.create(client);
      // As it reads back: at its first version, its own tokens never revoked.
      return { ...client, version: 1, tokensRevokedAt: null };
    }

    async function givenUser(overrides: Partial<UserRecord> = {}): Promise<UserRecord> {
      const id = unique('user');
      const user: UserRecord = {
        id,
        username: `${id}@example.com`,
        passwordHash: '$argon2id$v=19$m=65536,t=3,p=4$c2FsdA$aGFzaA',
        name: 'Ada Lovelace',
        localizedNames: { 'ja-Kana-JP': { name: 'エイダ ラブレス', family_name: 'ラブレス' } },
        email: `${id}@example.com`,
        ...ADA_CLAIMS,
        emailSelfAsserted: false,
        disabled: false,
        role: null,
        createdAt: T0,
        updatedAt: T0 + SECOND,
        ...overrides,
      };
      await store.users.create(user);
      return user;
    }

    async function givenGrant(clientId: string, userId: string, overrides: Partial<GrantRecord> = {}): Promise<GrantRecord> {
      const grant: GrantRecord = {
        id: unique('grant'),
        userId,
        clientId,
        scope: ['openid', 'profile'],
        kind: GRANT_AUTHORIZATION_CODE,
        authTime: T0 - MINUTE,
        createdAt: T0,
        revokedAt: null,
        device: null,
        remembered: false,
        renewedAt: null,
        lastUsedAt: null,
        activeUntil: null,
        ...overrides,
      };
      await store.grants.create(grant);
      return grant;
    }

    /** A code with its client, user and grant. */
    async function givenCode(overrides: Partial<AuthorizationCodeRecord> = {}): Promise<AuthorizationCodeRecord> {
      const clientId = overrides.clientId ?? (await givenClient()).id;
      const userId = overrides.userId ?? (await givenUser()).id;
      const grantId = overrides.grantId ?? (await givenGrant(clientId, userId)).id;
      const code: AuthorizationCodeRecord = {
        hash: unique('code-hash'),
        clientId,
        userId,
        grantId,
        redirectUri: 'https://app.example/callback',
        scope: ['openid', 'profile'],
        nonce: 'n-0S6_WzA2Mj',
        codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        authTime: T0 - MINUTE,
        sid: unique('sid-of-the-session'),
        createdAt: T0,
        expiresAt: T0 + MINUTE,
        consumedAt: null,
        idTokenClaims: ['email', 'name'],
        claimsLocales: ['ja-Kana-JP', 'de'],
        userinfoClaims: ['name', 'email'],
        claimsScope: ['profile'],
        dpopJkt: null,
        amr: ['pwd', 'otp', 'mfa'],
        acr: 'urn:tessera:acr:mfa',
        ...overrides,
      };
      // The sign-in session it was issued in, live (a code is redeemed only while it is: LIVE_SESSION).
      if (code.sid !== null)
        await store.sessions.create({
          idHash: unique('session-of-the-code'),
          sid: code.sid,
          userId,
          authTime: T0 - MINUTE,
          createdAt: T0 - MINUTE,
          expiresAt: T0 + 365 * 24 * HOUR,
          ip: null,
          userAgent: null,
        });
      await store.codes.create(code);
      return code;
    }

    const bindingOf = (code: AuthorizationCodeRecord) => ({
      clientId: code.clientId,
      redirectUri: code.redirectUri,
      codeChallenge: code.codeChallenge,
    });

    function deviceRecord(clientId: string, overrides: Partial<DeviceAuthorizationRecord> = {}): DeviceAuthorizationRecord {
      return pendingDevice(clientId, {
        deviceCodeHash: unique('device-code-hash'),
        userCode: userCode(),
        scope: ['openid', 'offline_access'],
        createdAt: T0,
        expiresAt: T0 + 10 * MINUTE,
        requestUserAgent: 'ExampleTV/1.0',
        ...overrides,
      });
    }

    /** A stored pending device record, with its client. */
    async function givenDevice(overrides: Partial<DeviceAuthorizationRecord> = {}): Promise<DeviceAuthorizationRecord> {
      const record = deviceRecord(overrides.clientId ?? (await givenClient()).id, overrides);
      assert.equal(await store.devices.create(record), true);
      return record;
    }

    /** A stored device record the user approved at T0 + 1 min. */
    async function givenApprovedDevice(overrides: Partial<DeviceAuthorizationRecord> = {}): Promise<DeviceAuthorizationRecord> {
      const record = await givenDevice(overrides);
      const user = await givenUser();
      const decided = await store.devices.decide(record, { approve: true, userId: user.id, authTime: T0, grantId: unique('grant') }, T0 + MINUTE);
      assert.ok(decided);
      return decided;
    }

    async function givenSession(userId: string, overrides: Partial<SessionRecord> = {}): Promise<SessionRecord> {
      const session: SessionRecord = {
        idHash: unique('session-hash'),
        sid: unique('sid'),
        userId,
        authTime: T0,
        createdAt: T0,
        expiresAt: T0 + HOUR,
        ip: '203.0.113.9',
        userAgent: 'ExampleBrowser/1.0',
        ...overrides,
      };
      await store.sessions.create(session);
      return session;
    }

    /** A stored refresh token, with its client, user and grant unless given. */
    async function givenRefreshToken(overrides: Partial<RefreshTokenRecord> = {}): Promise<RefreshTokenRecord> {
      const clientId = overrides.clientId ?? (await givenClient()).id;
      const userId = overrides.userId ?? (await givenUser()).id;
      const grantId = overrides.grantId ?? (await givenGrant(clientId, userId, { scope: ['openid', 'offline_access'] })).id;
      const token: RefreshTokenRecord = {
        hash: unique('refresh-hash'),
        grantId,
        clientId,
        userId,
        scope: ['openid', 'offline_access'],
        authTime: T0 - MINUTE,
        sid: null,
        createdAt: T0,
        expiresAt: T0 + HOUR,
        rotatedAt: null,
        dpopJkt: null,
        idTokenClaims: ['email'],
        claimsLocales: ['ja'],
        userinfoClaims: ['name'],
        claimsScope: ['profile', 'email'],
        amr: ['hwk', 'user'],
        acr: 'urn:tessera:acr:pwd',
        ...overrides,
      };
      await store.refreshTokens.create(token);
      return token;
    }

    function signingKey(overrides: Partial<SigningKeyRecord> = {}): SigningKeyRecord {
      const kid = unique('kid');
      return {
        kid,
        alg: 'ES256',
        privateJwk: { kty: 'EC', crv: 'P-256', x: 'x-coordinate', y: 'y-coordinate', d: 'private', kid },
        publicJwk: { kty: 'EC', crv: 'P-256', x: 'x-coordinate', y: 'y-coordinate', kid, use: 'sig', alg: 'ES256' },
        createdAt: T0,
        activatesAt: T0 + HOUR,
        retiresAt: null,
        expiresAt: null,
        ...overrides,
      };
    }

    describe('clients', () => {
      it('returns a created client with every field as given', async () => {
        const client = await givenClient();
        assert.deepEqual(await store.clients.get(client.id), client);
      });

      it('keeps a public client without a secret and with empty lists', async () => {
        const client = await givenClient({ secretHash: null, authMethod: 'none', webOrigins: [], grantTypes: [GRANT_DEVICE_CODE] });
        assert.deepEqual(await store.clients.get(client.id), client);
      });

      it('keeps a private_key_jwt client with its keys, and one allowed to go without PKCE', async () => {
        const jwks = {
          keys: [{ kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0', kid: 'k1' }],
        };
        const withKeys = await givenClient({ secretHash: null, authMethod: 'private_key_jwt', jwks });
        assert.deepEqual(await store.clients.get(withKeys.id), withKeys);
        const withUri = await givenClient({ secretHash: null, authMethod: 'private_key_jwt', jwksUri: 'https://app.example/jwks.json', pkce: 'optional' });
        assert.deepEqual(await store.clients.get(withUri.id), withUri);
      });

      it('keeps a client that may go without PKCE and nonce, and the algorithm of its request objects, and updates both back', async () => {
        const client = await givenClient({ pkce: 'optional-without-nonce', requestObjectSigningAlg: 'RS256' });
        assert.deepEqual(await store.clients.get(client.id), client);
        const { id, createdAt, version: _, requestObjectSigningAlg: __, ...fields } = client;
        assert.deepEqual(await store.clients.update(id, { ...fields, pkce: 'optional', requestObjectSigningAlg: 'none' }), {
          id,
          createdAt,
          ...fields,
          version: 2,
          pkce: 'optional',
          requestObjectSigningAlg: 'none',
        });
        assert.deepEqual(await store.clients.update(id, { ...fields, pkce: 'required' }), { id, createdAt, ...fields, version: 3, pkce: 'required' });
      });

      it('keeps a token exchange client with its exchange audiences (RFC 8693), and updates them away', async () => {
        const client = await givenClient({ grantTypes: [GRANT_TOKEN_EXCHANGE], exchangeAudiences: ['https://prints.example', 'urn:example:ledger'] });
        assert.deepEqual(await store.clients.get(client.id), client);
        const { id, createdAt, version: _, exchangeAudiences: __, ...fields } = client;
        assert.deepEqual(await store.clients.update(id, { ...fields, grantTypes: [GRANT_AUTHORIZATION_CODE] }), {
          id,
          createdAt,
          ...fields,
          grantTypes: [GRANT_AUTHORIZATION_CODE],
          version: 2,
        });
      });

      it('takes the defaults for a client registered without the newer fields: none when public, Basic with a secret', async () => {
        const { authMethod: _, previousSecretHash: __, previousSecretExpiresAt: ___, jwksUri: ____, jwks: _____, pkce: ______, ...bare } = await givenClient();
        const publicId = unique('client');
        const confidentialId = unique('client');
        await store.clients.create({ ...bare, id: publicId, secretHash: null });
        await store.clients.create({ ...bare, id: confidentialId });
        const defaults = { previousSecretHash: null, previousSecretExpiresAt: null, jwksUri: null, jwks: null, pkce: 'required' };
        assert.deepEqual(await store.clients.get(publicId), { ...bare, id: publicId, secretHash: null, authMethod: 'none', ...defaults });
        assert.deepEqual(await store.clients.get(confidentialId), { ...bare, id: confidentialId, authMethod: 'client_secret_basic', ...defaults });
      });

      it('updates every field but the id and creation time, returns the new record, and null for an unknown id', async () => {
        const client = await givenClient();
        const { id, createdAt, version: _, tokensRevokedAt, ...fields } = client;
        const changes: ClientChanges = {
          ...fields,
          name: 'Renamed App',
          redirectUris: ['https://app.example/other'],
          scopes: ['openid'],
          grantTypes: [GRANT_AUTHORIZATION_CODE],
          webOrigins: [],
          authMethod: 'private_key_jwt',
          secretHash: null,
          jwksUri: 'https://app.example/jwks.json',
          jwks: { keys: [] },
          pkce: 'optional',
        };
        const expected = { id, createdAt, ...changes, version: 2, tokensRevokedAt };
        assert.deepEqual(await store.clients.update(id, changes), expected);
        assert.deepEqual(await store.clients.get(id), expected);
        assert.equal(await store.clients.update('no-such-client', changes), null);
      });

      it('updates only the version expected, moving it on: of two updates made against one version, one wins', async () => {
        const client = await givenClient();
        const { id, createdAt: _, version: __, tokensRevokedAt: ___, ...fields } = client;
        const [first, second] = await Promise.all([
          store.clients.update(id, { ...fields, name: 'First' }, 1),
          store.clients.update(id, { ...fields, name: 'Second' }, 1),
        ]);
        const won = [first, second].filter((record) => record !== null);
        assert.equal(won.length, 1);
        assert.equal(won[0]!.version, 2);
        assert.equal((await store.clients.get(id))?.name, won[0]!.name);
        assert.equal(await store.clients.update(id, { ...fields, name: 'Stale' }, 1), null);
        assert.equal((await store.clients.update(id, { ...fields, name: 'Current' }, 2))?.version, 3);
      });

      it("records when a client's own tokens were all revoked, and false for an unknown client", async () => {
        const client = await givenClient();
        assert.equal(await store.clients.revokeTokens(client.id, T0 + HOUR), true);
        assert.deepEqual(await store.clients.get(client.id), { ...client, tokensRevokedAt: T0 + HOUR });
        assert.equal(await store.clients.revokeTokens('no-such-client', T0), false);
      });

      it('rotates a secret in one step: the old one becomes the previous, with its expiry; a public client has none to rotate', async () => {
        const client = await givenClient({ secretHash: 'first-hash' });
        const rotated = await store.clients.rotateSecret(client.id, 'second-hash', T0 + HOUR);
        assert.deepEqual(rotated, { ...client, secretHash: 'second-hash', previousSecretHash: 'first-hash', previousSecretExpiresAt: T0 + HOUR });
        assert.deepEqual(await store.clients.get(client.id), rotated);
        const again = await store.clients.rotateSecret(client.id, 'third-hash', T0 + 2 * HOUR);
        assert.deepEqual([again?.secretHash, again?.previousSecretHash], ['third-hash', 'second-hash']);
        const publicClient = await givenClient({ secretHash: null, authMethod: 'none' });
        assert.equal(await store.clients.rotateSecret(publicClient.id, 'x', T0), null);
        assert.deepEqual(await store.clients.get(publicClient.id), publicClient);
        assert.equal(await store.clients.rotateSecret('no-such-client', 'x', T0), null);
      });
    });

    describe('client assertions', () => {
      it('accepts a jti once until it expires, then again', async () => {
        const jti = unique('jti-hash');
        assert.equal(await store.clientAssertions.use(jti, T0 + MINUTE, T0), true);
        assert.equal(await store.clientAssertions.use(jti, T0 + MINUTE, T0 + SECOND), false);
        assert.equal(await store.clientAssertions.use(jti, T0 + 2 * MINUTE, T0 + MINUTE), true, 'an expired record gives way');
        assert.equal(await store.clientAssertions.use(jti, T0 + 3 * MINUTE, T0 + MINUTE + SECOND), false);
      });

      it('accepts a jti for exactly one of 20 concurrent users', async () => {
        const jti = unique('jti-hash');
        const results = await Promise.all(Array.from({ length: 20 }, () => store.clientAssertions.use(jti, T0 + MINUTE, T0)));
        assert.equal(results.filter(Boolean).length, 1);
      });

      it('returns null for an unknown client id', async () => {
        assert.equal(await store.clients.get('no-such-client'), null);
      });

      it('lists created clients, oldest first', async () => {
        const older = await givenClient({ createdAt: T0 - HOUR });
        const newer = await givenClient();
        const listed = (await store.clients.list()).filter((client) => client.id === older.id || client.id === newer.id);
        assert.deepEqual(listed, [older, newer]);
      });

      it('refuses a client whose id is taken with DuplicateError, keeping the first', async () => {
        const first = await givenClient();
        await assert.rejects(store.clients.create({ ...first, name: 'Impostor' }), DuplicateError);
        assert.deepEqual(await store.clients.get(first.id), first);
      });

      it("removes a client with its codes, device records and grants, and leaves another client's alone", async () => {
        const user = await givenUser();
        const [gone, kept] = [await givenClient(), await givenClient()];
        const goneGrant = await givenGrant(gone.id, user.id);
        const keptGrant = await givenGrant(kept.id, user.id);
        const goneCode = await givenCode({ clientId: gone.id, userId: user.id, grantId: goneGrant.id });
        const keptCode = await givenCode({ clientId: kept.id, userId: user.id, grantId: keptGrant.id });
        const goneDevice = await givenDevice({ clientId: gone.id });
        const keptDevice = await givenDevice({ clientId: kept.id });

        assert.equal(await store.clients.remove(gone.id), true);

        assert.equal(await store.clients.get(gone.id), null);
        assert.equal(await store.grants.get(goneGrant.id), null);
        assert.equal(await store.codes.find(goneCode.hash), null);
        assert.equal(await store.devices.findByUserCode(goneDevice.userCode, T0), null);
        assert.equal(await store.devices.poll(goneDevice.deviceCodeHash, gone.id, T0), null);
        assert.deepEqual(
          (await store.grants.listForUser(user.id)).map((grant) => grant.id),
          [keptGrant.id],
        );

        assert.deepEqual(await store.clients.get(kept.id), kept);
        assert.deepEqual(await store.grants.get(keptGrant.id), keptGrant);
        assert.deepEqual(await store.codes.find(keptCode.hash), keptCode);
        assert.deepEqual(await store.devices.findByUserCode(keptDevice.userCode, T0), keptDevice);
        assert.deepEqual(await store.users.get(user.id), user);
      });

      it('returns false when removing an unknown or already removed client', async () => {
        const client = await givenClient();
        assert.equal(await store.clients.remove(client.id), true);
        assert.equal(await store.clients.remove(client.id), false);
        assert.equal(await store.clients.remove('no-such-client'), false);
      });

      it('lets a removed client id be registered again', async () => {
        const client = await givenClient();
        await store.clients.remove(client.id);
        await store.clients.create(client);
        assert.deepEqual(await store.clients.get(client.id), client);
      });
    });

    describe('users', () => {
      it('returns a created user by id and by username, with every field as given', async () => {
        const user = await givenUser();
        assert.deepEqual(await store.users.get(user.id), user);
        assert.deepEqual(await store.users.findByUsername(user.username), user);
      });

      it('keeps null name and email and false flags', async () => {
        const user = await givenUser({ name: null, email: null, emailVerified: false });
        assert.deepEqual(await store.users.get(user.id), user);
      });

      it('returns null for an unknown id or username', async () => {
        assert.equal(await store.users.get('no-such-user'), null);
        assert.equal(await store.users.findByUsername('nobody@example.com'), null);
      });

      it('matches the username exactly as stored', async () => {
        const user = await givenUser({ username: unique('alice') });
        assert.equal(await store.users.findByUsername(user.username.toUpperCase()), null);
      });

      it('refuses a user whose username is taken with DuplicateError, keeping the first', async () => {
        const first = await givenUser();
        await assert.rejects(store.users.create({ ...first, id: unique('user') }), DuplicateError);
        assert.equal((await store.users.findByUsername(first.username))?.id, first.id);
      });

      it('lists created users, oldest first', async () => {
        const older = await givenUser({ createdAt: T0 - HOUR });
        const newer = await givenUser();
        const listed = (await store.users.list()).filter((user) => user.id === older.id || user.id === newer.id);
        assert.deepEqual(listed, [older, newer]);
      });

      it('disables and re-enables a user, and returns false for an unknown id', async () => {
        const user = await givenUser();
        assert.equal(await store.users.setDisabled(user.id, true), true);
        assert.equal((await store.users.get(user.id))?.disabled, true);
        assert.equal(await store.users.setDisabled(user.id, false), true);
        assert.equal((await store.users.get(user.id))?.disabled, false);
        assert.equal(await store.users.setDisabled('no-such-user', true), false);
      });

      it('gives a user an operator role, changes it and takes it away, and returns false for an unknown id', async () => {
        const user = await givenUser();
        assert.equal(await store.users.setRole(user.id, 'support'), true);
        assert.deepEqual(await store.users.get(user.id), { ...user, role: 'support' });
        assert.equal(await store.users.setRole(user.id, 'admin'), true);
        assert.equal((await store.users.findByUsername(user.username))?.role, 'admin');
        assert.equal(await store.users.setRole(user.id, null), true);
        assert.equal((await store.users.get(user.id))?.role, null);
        assert.equal(await store.users.setRole('no-such-user', 'viewer'), false);
        const created = await givenUser({ role: 'viewer' });
        assert.equal((await store.users.get(created.id))?.role, 'viewer');
      });

      it('touches a user only at the version expected (If-Match), and of two touches against one version lets one through', async () => {
        const user = await givenUser();
        assert.equal(await store.users.touch(user.id, user.updatedAt + 1, user.updatedAt + 5), false, 'another version');
        assert.equal((await store.users.get(user.id))?.updatedAt, user.updatedAt);
        const both = await Promise.all([
          store.users.touch(user.id, user.updatedAt, user.updatedAt + 7),
          store.users.touch(user.id, user.updatedAt, user.updatedAt + 9),
        ]);
        assert.deepEqual(both.filter(Boolean), [true], 'one of the two');
        assert.ok([user.updatedAt + 7, user.updatedAt + 9].includes((await store.users.get(user.id))!.updatedAt));
        assert.equal(await store.users.touch('no-such-user', 0, 1), false);
      });
    });

    describe('sessions', () => {
      it('returns a session until it expires, and null from its expiry on', async () => {
        const session = await givenSession((await givenUser()).id);
        assert.deepEqual(await store.sessions.get(session.idHash, T0), session);
        assert.deepEqual(await store.sessions.get(session.idHash, session.expiresAt - 1), session);
        assert.equal(await store.sessions.get(session.idHash, session.expiresAt), null);
      });

      it('forgets a removed session, returning it once, and returns null for an unknown one', async () => {
        const session = await givenSession((await givenUser()).id);
        assert.deepEqual(await store.sessions.remove(session.idHash), session);
        assert.equal(await store.sessions.get(session.idHash, T0), null);
        assert.equal(await store.sessions.remove(session.idHash), null);
        assert.equal(await store.sessions.remove('no-such-session'), null);
      });

      it('continues a session under a new cookie, keeping its sid and its clients, and not one ended or of another sid', async () => {
        const user = await givenUser();
        const client = await givenClient();
        const previous = await givenSession(user.id);
        await store.sessions.addClient(previous.sid, client.id, T0 + HOUR);
        const next: SessionRecord = {
          ...previous,
          idHash: unique('session-hash'),
          authTime: T0 + MINUTE,
          createdAt: T0 + MINUTE,
          expiresAt: T0 + 2 * HOUR,
          amr: ['pwd', 'otp'],
          ip: '198.51.100.7',
          userAgent: null,
        };
        assert.equal(await store.sessions.continue(previous.idHash, { ...next, sid: unique('sid') }), null, 'another sid');
        assert.equal(await store.sessions.continue(previous.idHash, { ...next, userId: (await givenUser()).id }), null, 'another user');
        assert.deepEqual(await store.sessions.continue(previous.idHash, next), next);
        assert.equal(await store.sessions.get(previous.idHash, T0), null);
        assert.deepEqual(await store.sessions.get(next.idHash, T0), next);
        assert.deepEqual(await store.sessions.listForUser(user.id, T0), [next]);
        assert.equal(await store.sessions.continue(previous.idHash, { ...next, idHash: unique('session-hash') }), null, 'moved already');
        assert.deepEqual(await store.sessions.takeClients(next.sid), [client.id]);
      });

      it("lists a user's live sessions newest first, and removes them all, without other users' sessions", async () => {
        const [user, other] = [await givenUser(), await givenUser()];
        const older = await givenSession(user.id, { createdAt: T0 - HOUR, ip: null, userAgent: null });
        const newer = await givenSession(user.id, { createdAt: T0 });
        const expired = await givenSession(user.id, { createdAt: T0 - 2 * HOUR, expiresAt: T0 });
        const others = await givenSession(other.id);
        assert.deepEqual(await store.sessions.listForUser(user.id, T0), [newer, older]);
        const removed = await store.sessions.removeForUser(user.id);
        assert.deepEqual(removed.map((session) => session.idHash).sort(), [older.idHash, newer.idHash, expired.idHash].sort());
        assert.deepEqual(await store.sessions.listForUser(user.id, T0), []);
        assert.deepEqual(await store.sessions.get(others.idHash, T0), others);
      });

      it('gives the clients recorded for a session id once, however often each was recorded', async () => {
        const [a, b, c] = [await givenClient(), await givenClient(), await givenClient()];
        const sid = unique('sid');
        await store.sessions.addClient(sid, a.id, T0 + HOUR);
        await store.sessions.addClient(sid, a.id, T0 + 2 * HOUR);
        await store.sessions.addClient(sid, b.id, T0 + HOUR);
        await store.sessions.addClient(unique('sid'), c.id, T0 + HOUR);
        const takers = await Promise.all(Array.from({ length: 5 }, () => store.sessions.takeClients(sid)));
        assert.deepEqual(takers.flat().sort(), [a.id, b.id].sort());
        assert.deepEqual(await store.sessions.takeClients(sid), []);
      });

      it("purges a session id's clients once the last of them has expired, so a live one still hears of the logout", async () => {
        // Long before any other case's records, and the one kept far after: the purge counts of the other cases stay exact.
        const early = Date.UTC(1973, 0, 1);
        const [a, b] = [await givenClient(), await givenClient()];
        const [sid, gone] = [unique('sid'), unique('sid')];
        await store.sessions.addClient(sid, a.id, early);
        await store.sessions.addClient(sid, b.id, Date.UTC(2100, 0, 1));
        await store.sessions.addClient(gone, a.id, early);
        await store.purgeExpired(early + 1);
        assert.deepEqual(await store.sessions.takeClients(gone), []);
        assert.deepEqual((await store.sessions.takeClients(sid)).sort(), [a.id, b.id].sort());
      });

      it('returns null for an unknown session', async () => {
        assert.equal(await store.sessions.get('no-such-session', T0), null);
      });
    });

    describe('grants', () => {
      it('returns a created grant, with and without its device origin', async () => {
        const [client, user] = [await givenClient(), await givenUser()];
        const browser = await givenGrant(client.id, user.id);
        const device = await givenGrant(client.id, user.id, {
          kind: GRANT_DEVICE_CODE,
          scope: ['openid', 'offline_access'],
          device: { ip: '2001:db8::1', userAgent: null, requestedAt: T0 - 2 * MINUTE },
        });
        assert.deepEqual(await store.grants.get(browser.id), browser);
        assert.deepEqual(await store.grants.get(device.id), device);
        assert.equal(await store.grants.get('no-such-grant'), null);
      });

      it('revokes a grant once: the first call returns true and sets revokedAt, later ones return false and keep it', async () => {
        const grant = await givenGrant((await givenClient()).id, (await givenUser()).id);
        assert.equal(await store.grants.revoke(grant.id, T0 + MINUTE), true);
        assert.equal(await store.grants.revoke(grant.id, T0 + 2 * MINUTE), false);
        assert.deepEqual(await store.grants.get(grant.id), { ...grant, revokedAt: T0 + MINUTE });
      });

      it('revokes a grant for exactly one of 20 concurrent revokers', async () => {
        const grant = await givenGrant((await givenClient()).id, (await givenUser()).id);
        const results = await Promise.all(Array.from({ length: 20 }, (_, i) => store.grants.revoke(grant.id, T0 + i)));
        assert.equal(results.filter(Boolean).length, 1);
      });

      it('returns false when revoking an unknown grant', async () => {
        assert.equal(await store.grants.revoke('no-such-grant', T0), false);
      });

      it('remembers one grant per user and client: a later approval grows its scope and renews it', async () => {
        const [client, user] = [await givenClient(), await givenUser()];
        assert.equal(await store.grants.findRemembered(user.id, client.id), null);
        const first = await store.grants.remember(
          { id: unique('grant'), userId: user.id, clientId: client.id, scope: ['openid', 'profile'], authTime: T0 - MINUTE },
          T0,
        );
        assert.deepEqual([first.remembered, first.renewedAt, first.kind, first.createdAt], [true, T0, GRANT_AUTHORIZATION_CODE, T0]);
        const grown = await store.grants.remember(
          { id: unique('grant'), userId: user.id, clientId: client.id, scope: ['email', 'openid'], authTime: T0 },
          T0 + HOUR,
        );
        assert.equal(grown.id, first.id);
        assert.deepEqual([...grown.scope].sort(), ['email', 'openid', 'profile']);
        assert.deepEqual([grown.createdAt, grown.renewedAt, grown.authTime], [T0, T0 + HOUR, T0]);
        assert.deepEqual(await store.grants.findRemembered(user.id, client.id), grown);
        // A device grant of the same user and client is a grant of its own, never the remembered one.
        await givenGrant(client.id, user.id, { kind: GRANT_DEVICE_CODE });
        assert.equal((await store.grants.findRemembered(user.id, client.id))?.id, first.id);
      });

      it('keeps on a remembered grant how the person signed in for its latest approval (amr, acr)', async () => {
        const [client, user] = [await givenClient(), await givenUser()];
        const approval = { userId: user.id, clientId: client.id, scope: ['openid'], authTime: T0 };
        const first = await store.grants.remember({ ...approval, id: unique('grant'), amr: ['pwd'] }, T0);
        assert.deepEqual([first.amr, first.acr], [['pwd'], undefined]);
        // Approved again after a passkey sign-in, for a client that asked for acr_values.
        const again = await store.grants.remember({ ...approval, id: unique('grant'), amr: ['hwk', 'mfa'], acr: 'phrh' }, T0 + HOUR);
        assert.equal(again.id, first.id);
        assert.deepEqual([again.amr, again.acr], [['hwk', 'mfa'], 'phrh']);
      });

      it('remembers a new grant once the remembered one is revoked', async () => {
        const [client, user] = [await givenClient(), await givenUser()];
        const first = await store.grants.remember({ id: unique('grant'), userId: user.id, clientId: client.id, scope: ['openid'], authTime: T0 }, T0);
        await store.grants.revoke(first.id, T0 + MINUTE);
        assert.equal(await store.grants.findRemembered(user.id, client.id), null);
        const second = await store.grants.remember({ id: unique('grant'), userId: user.id, clientId: client.id, scope: ['openid'], authTime: T0 }, T0 + HOUR);
        assert.notEqual(second.id, first.id);
        assert.deepEqual(second.scope, ['openid']);
      });

      it('keeps one remembered grant when 10 approvals of one user and client arrive at once, with every scope', async () => {
        const [client, user] = [await givenClient(), await givenUser()];
        const scopes = ['openid', 'profile', 'email', 'offline_access', 'openid', 'profile', 'email', 'offline_access', 'openid', 'profile'];
        const results = await Promise.all(
          scopes.map((scope, i) => store.grants.remember({ id: unique('grant'), userId: user.id, clientId: client.id, scope: [scope], authTime: T0 }, T0 + i)),
        );
        assert.equal(new Set(results.map((grant) => grant.id)).size, 1);
        assert.deepEqual([...(await store.grants.findRemembered(user.id, client.id))!.scope].sort(), ['email', 'offline_access', 'openid', 'profile']);
        assert.equal((await store.grants.listForUser(user.id)).length, 1);
      });

      it("revokes every live grant of a client in one call, returning those it revoked, and no other client's", async () => {
        const [client, other] = [await givenClient(), await givenClient()];
        const [user, second] = [await givenUser(), await givenUser()];
        const one = await givenGrant(client.id, user.id);
        const two = await givenGrant(client.id, second.id, { kind: GRANT_DEVICE_CODE });
        const before = await givenGrant(client.id, user.id);
        await store.grants.revoke(before.id, T0);
        const kept = await givenGrant(other.id, user.id);
        const revoked = await store.grants.revokeForClient(client.id, T0 + MINUTE);
        assert.deepEqual(
          [...revoked].sort((a, b) => a.id.localeCompare(b.id)),
          [one, two].map((grant) => ({ ...grant, revokedAt: T0 + MINUTE })).sort((a, b) => a.id.localeCompare(b.id)),
        );
        assert.equal((await store.grants.get(before.id))?.revokedAt, T0, 'revoked before: kept as it was');
        assert.deepEqual(await store.grants.get(kept.id), kept);
        assert.deepEqual(await store.grants.revokeForClient(client.id, T0 + HOUR), []);
      });

      it("lists a user's unrevoked grants newest first, without other users' grants", async () => {
        const client = await givenClient();
        const [user, other] = [await givenUser(), await givenUser()];
        const oldest = await givenGrant(client.id, user.id, { createdAt: T0 - 2 * HOUR });
        const revoked = await givenGrant(client.id, user.id, { createdAt: T0 - HOUR });
        const newest = await givenGrant(client.id, user.id, { createdAt: T0 });
        await givenGrant(client.id, other.id);
        await store.grants.revoke(revoked.id, T0);
        assert.deepEqual(await store.grants.listForUser(user.id), [newest, oldest]);
        assert.deepEqual(await store.grants.listForUser('no-such-user'), []);
      });
    });

    describe('authorization codes', () => {
      it('finds a created code with every field as given, and null for an unknown one', async () => {
        const code = await givenCode();
        assert.deepEqual(await store.codes.find(code.hash), code);
        assert.equal(await store.codes.find('no-such-code'), null);
      });

      it('keeps a code without a nonce', async () => {
        const code = await givenCode({ nonce: null });
        assert.deepEqual(await store.codes.find(code.hash), code);
      });

      it('keeps a code without acr, or without amr and acr (one from before they were kept)', async () => {
        const { acr: _acr, ...withoutAcr } = await givenCode({ acr: undefined });
        assert.deepEqual(await store.codes.find(withoutAcr.hash), withoutAcr);
        const { amr: _amr, acr: _none, ...old } = await givenCode({ amr: undefined, acr: undefined });
        assert.deepEqual(await store.codes.find(old.hash), old);
      });

      it('keeps a code without claims asked for by name, or the scopes approved for them, as without them', async () => {
        const { userinfoClaims: _claims, claimsScope: _scope, ...unnamed } = await givenCode({ userinfoClaims: undefined, claimsScope: undefined });
        assert.deepEqual(await store.codes.find(unnamed.hash), unnamed);
      });

      it('gives a code once: the first redemption returns it consumed, the second returns null', async () => {
        const code = await givenCode();
        const consumed = { ...code, consumedAt: T0 + SECOND };
        assert.deepEqual(await store.codes.consume(code.hash, bindingOf(code), T0 + SECOND), consumed);
        assert.equal(await store.codes.consume(code.hash, bindingOf(code), T0 + 2 * SECOND), null);
        assert.deepEqual(await store.codes.find(code.hash), consumed);
      });

      for (const [field, binding] of [
        ['client', { clientId: 'another-client' }],
        ['redirect_uri', { redirectUri: 'https://app.example/other' }],
        ['PKCE challenge', { codeChallenge: 'another-challenge' }],
      ] as const) {
        it(`returns null and leaves the code unconsumed when the ${field} does not match`, async () => {
          const code = await givenCode();
          assert.equal(await store.codes.consume(code.hash, { ...bindingOf(code), ...binding }, T0 + SECOND), null);
          assert.deepEqual(await store.codes.find(code.hash), code);
          assert.ok(await store.codes.consume(code.hash, bindingOf(code), T0 + SECOND));
        });
      }

      it('returns null and leaves the code unconsumed from its expiry on', async () => {
        const code = await givenCode();
        assert.equal(await store.codes.consume(code.hash, bindingOf(code), code.expiresAt), null);
        assert.deepEqual(await store.codes.find(code.hash), code);
      });

      it('gives a code one millisecond before its expiry', async () => {
        const code = await givenCode();
        assert.deepEqual(await store.codes.consume(code.hash, bindingOf(code), code.expiresAt - 1), {
          ...code,
          consumedAt: code.expiresAt - 1,
        });
      });

      it('returns null for an unknown code', async () => {
        const code = await givenCode();
        assert.equal(await store.codes.consume('no-such-code', bindingOf(code), T0), null);
      });

      it('redeems the codes of one turn each by its own rules (PostgreSQL redeems them in one statement)', async () => {
        const [good, late, wrongChallenge, bound, boundWrongKey, spent, revoked] = [
          await givenCode(),
          await givenCode(),
          await givenCode(),
          await givenCode({ dpopJkt: 'jkt-1' }),
          await givenCode({ dpopJkt: 'jkt-2' }),
          await givenCode(),
          await givenCode(),
        ];
        await store.codes.consume(spent.hash, bindingOf(spent), T0 + SECOND);
        await store.grants.revoke(revoked.grantId, T0);
        const results = await Promise.all([
          store.codes.consume(revoked.hash, bindingOf(revoked), T0 + SECOND),
          store.codes.consume(good.hash, bindingOf(good), T0 + SECOND),
          store.codes.consume(late.hash, bindingOf(late), late.expiresAt),
          store.codes.consume(wrongChallenge.hash, { ...bindingOf(wrongChallenge), codeChallenge: 'another-challenge' }, T0 + SECOND),
          store.codes.consume(bound.hash, { ...bindingOf(bound), dpopJkt: 'jkt-1' }, T0 + 2 * SECOND),
          store.codes.consume(boundWrongKey.hash, { ...bindingOf(boundWrongKey), dpopJkt: 'jkt-1' }, T0 + SECOND),
          store.codes.consume(spent.hash, bindingOf(spent), T0 + 2 * SECOND),
          store.codes.consume('no-such-code', bindingOf(good), T0 + SECOND),
        ]);
        assert.deepEqual(results, [null, { ...good, consumedAt: T0 + SECOND }, null, null, { ...bound, consumedAt: T0 + 2 * SECOND }, null, null, null]);
        for (const untouched of [late, wrongChallenge, boundWrongKey, revoked]) assert.deepEqual(await store.codes.find(untouched.hash), untouched);
      });

      it('gives a code to exactly one of 20 concurrent redeemers', async () => {
        const code = await givenCode();
        const results = await Promise.all(Array.from({ length: 20 }, () => store.codes.consume(code.hash, bindingOf(code), T0 + SECOND)));
        const winners = results.filter((result) => result !== null);
        assert.equal(winners.length, 1);
        assert.deepEqual(winners[0], { ...code, consumedAt: T0 + SECOND });
      });
    });

    describe('code exchanges: the code with its grant and user, then its redemption with what follows it', () => {
      let sequence = 0;
      const redeemedEvent = (code: AuthorizationCodeRecord): AuditEvent => ({
        id: `01900000-0000-7000-8000-${String(++sequence).padStart(12, '0')}`,
        type: 'code.redeemed',
        at: T0 + SECOND,
        userId: code.userId,
        username: 'ada',
        clientId: code.clientId,
        grantId: code.grantId,
        ip: '192.0.2.1',
        userAgent: 'test',
        detail: {},
      });
      const refreshFor = (code: AuthorizationCodeRecord): RefreshTokenRecord => ({
        hash: unique('refresh-hash'),
        grantId: code.grantId,
        clientId: code.clientId,
        userId: code.userId,
        scope: ['openid', 'offline_access'],
        authTime: code.authTime,
        sid: code.sid,
        createdAt: T0 + SECOND,
        expiresAt: T0 + HOUR,
        rotatedAt: null,
        dpopJkt: null,
        idTokenClaims: ['email'],
        claimsLocales: ['ja'],
        amr: ['pwd'],
        acr: 'urn:tessera:acr:pwd',
      });

      it('finds a code with its grant and user, null for those gone, and null for an unknown code', async () => {
        const code = await givenCode();
        const found = await store.codes.findForExchange(code.hash);
        assert.deepEqual(found?.code, code);
        assert.deepEqual(found?.grant, await store.grants.get(code.grantId));
        assert.deepEqual(found?.user, await store.users.get(code.userId));
        assert.equal(await store.codes.findForExchange('no-such-code'), null);
      });

      it('redeems a code once, with its grant use, refresh token, session client and event written together', async () => {
        const code = await givenCode();
        const refreshToken = refreshFor(code);
        const event = redeemedEvent(code);
        const writes = { activeUntil: T0 + HOUR, refreshToken, sessionClient: { sid: 'sid-redeemed', expiresAt: T0 + HOUR }, event };
        assert.equal(await store.codes.redeem(code.hash, bindingOf(code), T0 + SECOND, writes), true);
        assert.deepEqual(await store.codes.find(code.hash), { ...code, consumedAt: T0 + SECOND });
        const grant = await store.grants.get(code.grantId);
        assert.equal(grant?.lastUsedAt, T0 + SECOND);
        assert.equal(grant?.activeUntil, T0 + HOUR);
        assert.deepEqual(await store.refreshTokens.find(refreshToken.hash), refreshToken);
        assert.deepEqual(
          (await store.events.list({ clientId: code.clientId, limit: 10 })).map((stored) => stored.id),
          [event.id],
        );
        // The second redemption writes nothing.
        const again = { ...writes, refreshToken: refreshFor(code), event: redeemedEvent(code), activeUntil: T0 + 2 * HOUR };
        assert.equal(await store.codes.redeem(code.hash, bindingOf(code), T0 + 2 * SECOND, again), false);
        assert.equal((await store.grants.get(code.grantId))?.activeUntil, T0 + HOUR);
        assert.equal(await store.refreshTokens.find(again.refreshToken.hash), null);
        assert.equal((await store.events.list({ clientId: code.clientId, limit: 10 })).length, 1);
        assert.deepEqual(await store.sessions.takeClients('sid-redeemed'), [code.clientId]);
      });

      it('neither consumes nor redeems a code whose sign-in session has ended, alone or in a batch, and records no client for it', async () => {
        const code = await givenCode();
        const other = await givenCode();
        for (const session of (await store.sessions.listForUser(code.userId, T0)).filter((each) => each.sid === code.sid))
          await store.sessions.remove(session.idHash);
        const event = redeemedEvent(code);
        const writes = { activeUntil: T0 + HOUR, sessionClient: { sid: code.sid!, expiresAt: T0 + HOUR }, event };
        assert.equal(await store.codes.redeem(code.hash, bindingOf(code), T0 + SECOND, writes), false);
        const [alone, batched] = await Promise.all([
          store.codes.consume(code.hash, bindingOf(code), T0 + SECOND),
          store.codes.consume(other.hash, bindingOf(other), T0 + SECOND),
        ]);
        assert.deepEqual([alone, batched?.hash], [null, other.hash], 'the other code, its session live, is redeemed beside it');
        assert.deepEqual(await store.codes.find(code.hash), code);
        assert.deepEqual(await store.sessions.takeClients(code.sid!), []);
        assert.deepEqual(await store.events.list({ clientId: code.clientId, limit: 10 }), []);
        // A code issued outside any session (sid null) has none to end.
        const sessionless = await givenCode({ sid: null });
        assert.ok(await store.codes.consume(sessionless.hash, bindingOf(sessionless), T0 + SECOND));
      });

      it('neither consumes nor redeems a code whose grant is revoked, and writes nothing that would follow', async () => {
        const code = await givenCode();
        await store.grants.revoke(code.grantId, T0);
        const refreshToken = refreshFor(code);
        const writes = { activeUntil: T0 + HOUR, refreshToken, event: redeemedEvent(code) };
        assert.equal(await store.codes.consume(code.hash, bindingOf(code), T0 + SECOND), null);
        assert.equal(await store.codes.redeem(code.hash, bindingOf(code), T0 + SECOND, writes), false);
        assert.deepEqual(await store.codes.find(code.hash), code);
        assert.equal((await store.grants.get(code.grantId))?.lastUsedAt, null);
        assert.equal(await store.refreshTokens.find(refreshToken.hash), null);
        assert.deepEqual(await store.events.list({ clientId: code.clientId, limit: 10 }), []);
      });

      it('writes nothing for a code whose binding does not match, and leaves it unconsumed', async () => {
        const code = await givenCode();
        const refreshToken = refreshFor(code);
        const writes = { activeUntil: T0 + HOUR, refreshToken, event: redeemedEvent(code) };
        assert.equal(await store.codes.redeem(code.hash, { ...bindingOf(code), codeChallenge: 'another-challenge' }, T0 + SECOND, writes), false);
        assert.deepEqual(await store.codes.find(code.hash), code);
        assert.equal((await store.grants.get(code.grantId))?.lastUsedAt, null);
        assert.equal(await store.refreshTokens.find(refreshToken.hash), null);
        assert.deepEqual(await store.events.list({ clientId: code.clientId, limit: 10 }), []);
      });

      it('redeems a code bound to a DPoP key, with its writes, only with that key: without it or with another, nothing is written', async () => {
        const code = await givenCode({ dpopJkt: 'jkt-a' });
        const refreshToken = refreshFor(code);
        const writes = { activeUntil: T0 + HOUR, refreshToken, event: redeemedEvent(code) };
        assert.equal(await store.codes.redeem(code.hash, { ...bindingOf(code), dpopJkt: 'jkt-b' }, T0 + SECOND, writes), false);
        assert.equal(await store.codes.redeem(code.hash, { ...bindingOf(code), dpopJkt: null }, T0 + SECOND, writes), false);
        assert.deepEqual(await store.codes.find(code.hash), code);
        assert.equal(await store.refreshTokens.find(refreshToken.hash), null);
        assert.equal(await store.codes.redeem(code.hash, { ...bindingOf(code), dpopJkt: 'jkt-a' }, T0 + SECOND, writes), true);
        assert.deepEqual(await store.codes.find(code.hash), { ...code, consumedAt: T0 + SECOND });
      });

      it('leaves the code unconsumed when a write that follows fails', async () => {
        const code = await givenCode();
        const taken = await givenRefreshToken();
        const writes = { activeUntil: T0 + HOUR, refreshToken: { ...refreshFor(code), hash: taken.hash }, event: redeemedEvent(code) };
        await assert.rejects(store.codes.redeem(code.hash, bindingOf(code), T0 + SECOND, writes), DuplicateError);
        assert.deepEqual(await store.codes.find(code.hash), code);
        assert.deepEqual(await store.events.list({ clientId: code.clientId, limit: 10 }), []);
        assert.ok(await store.codes.redeem(code.hash, bindingOf(code), T0 + SECOND, { activeUntil: T0 + HOUR }));
      });

      it('redeems the codes of one turn each by its own rules, and one of them failing fails it alone', async () => {
        const client = await givenClient();
        const user = await givenUser();
        const grant = await givenGrant(client.id, user.id);
        const [first, second, wrong] = [
          await givenCode({ clientId: client.id, userId: user.id, grantId: grant.id }),
          await givenCode({ clientId: client.id, userId: user.id, grantId: grant.id }),
          await givenCode(),
        ];
        const broken = await givenCode();
        const taken = await givenRefreshToken();
        const results = await Promise.allSettled([
          store.codes.redeem(first.hash, bindingOf(first), T0 + SECOND, {
            activeUntil: T0 + HOUR,
            event: redeemedEvent(first),
            sessionClient: { sid: 'sid-turn', expiresAt: T0 + HOUR },
          }),
          store.codes.redeem(second.hash, bindingOf(second), T0 + 2 * SECOND, {
            activeUntil: T0 + 2 * HOUR,
            event: redeemedEvent(second),
            sessionClient: { sid: 'sid-turn', expiresAt: T0 + 2 * HOUR },
          }),
          store.codes.redeem(wrong.hash, { ...bindingOf(wrong), redirectUri: 'https://app.example/other' }, T0 + SECOND, {
            activeUntil: T0 + HOUR,
            event: redeemedEvent(wrong),
          }),
          store.codes.redeem(broken.hash, bindingOf(broken), T0 + SECOND, {
            activeUntil: T0 + HOUR,
            refreshToken: { ...refreshFor(broken), hash: taken.hash },
          }),
        ]);
        assert.deepEqual(
          results.slice(0, 3).map((result) => (result.status === 'fulfilled' ? result.value : result.reason)),
          [true, true, false],
        );
        assert.deepEqual(
          [
            (await store.codes.find(first.hash))?.consumedAt,
            (await store.codes.find(second.hash))?.consumedAt,
            (await store.codes.find(wrong.hash))?.consumedAt,
          ],
          [T0 + SECOND, T0 + 2 * SECOND, null],
        );
        assert.equal(results[3]?.status, 'rejected');
        assert.deepEqual(await store.codes.find(broken.hash), broken);
        const used = await store.grants.get(grant.id);
        assert.equal(used?.lastUsedAt, T0 + 2 * SECOND);
        assert.equal(used?.activeUntil, T0 + 2 * HOUR);
        assert.equal((await store.events.list({ clientId: client.id, limit: 10 })).length, 2);
        assert.deepEqual(await store.events.list({ clientId: wrong.clientId, limit: 10 }), []);
        assert.deepEqual(await store.sessions.takeClients('sid-turn'), [client.id]);
      });

      it('gives a code and its writes to exactly one of 20 concurrent redeemers', async () => {
        const code = await givenCode();
        const events = Array.from({ length: 20 }, () => redeemedEvent(code));
        const results = await Promise.all(
          events.map((event) => store.codes.redeem(code.hash, bindingOf(code), T0 + SECOND, { activeUntil: T0 + HOUR, event })),
        );
        assert.equal(results.filter((result) => result).length, 1);
        assert.equal((await store.events.list({ clientId: code.clientId, limit: 30 })).length, 1);
      });

      it('redeems inside a transaction, and a rollback undoes the redemption and its writes', async () => {
        const code = await givenCode();
        const event = redeemedEvent(code);
        await assert.rejects(
          store.transaction(async (tx) => {
            assert.ok(await tx.codes.redeem(code.hash, bindingOf(code), T0 + SECOND, { activeUntil: T0 + HOUR, event }));
            throw new Error('changed its mind');
          }),
          /changed its mind/,
        );
        assert.deepEqual(await store.codes.find(code.hash), code);
        assert.deepEqual(await store.events.list({ clientId: code.clientId, limit: 10 }), []);
      });
    });

    describe('device authorizations', () => {
      it('finds a created record by its user code until it expires, whatever its status', async () => {
        const record = await givenDevice();
        assert.deepEqual(await store.devices.findByUserCode(record.userCode, T0), record);
        assert.deepEqual(await store.devices.findByUserCode(record.userCode, record.expiresAt - 1), record);
        assert.equal(await store.devices.findByUserCode(record.userCode, record.expiresAt), null);
        assert.equal(await store.devices.findByUserCode('BCDFGHJK', T0), null);

        const approved = await givenApprovedDevice();
        assert.deepEqual(await store.devices.findByUserCode(approved.userCode, T0 + MINUTE), approved);
      });

      it('lists the pending, unexpired requests oldest first, at most the limit asked for', async () => {
        const client = await givenClient();
        const later = await givenDevice({ clientId: client.id, createdAt: T0 + SECOND });
        const first = await givenDevice({ clientId: client.id });
        const approved = await givenApprovedDevice({ clientId: client.id });
        const expired = await givenDevice({ clientId: client.id, expiresAt: T0 + MINUTE });
        const ours = (await store.devices.listPending(T0 + MINUTE, 1000)).filter((record) => record.clientId === client.id);
        assert.deepEqual(ours, [first, later]);
        assert.ok(![approved, expired].some((record) => ours.some((listed) => listed.userCode === record.userCode)));
        assert.equal((await store.devices.listPending(T0 + MINUTE, 1)).length, 1);
        await store.devices.decide(first, { approve: false }, T0 + MINUTE);
        assert.deepEqual(
          (await store.devices.listPending(T0 + MINUTE, 1000)).filter((record) => record.clientId === client.id),
          [later],
        );
      });

      it('refuses a user code that a live record holds, and stores nothing', async () => {
        const live = await givenDevice();
        const clash = deviceRecord(live.clientId, { userCode: live.userCode, createdAt: live.expiresAt - 1 });
        assert.equal(await store.devices.create(clash), false);
        assert.deepEqual(await store.devices.findByUserCode(live.userCode, T0), live);
        assert.equal(await store.devices.poll(clash.deviceCodeHash, clash.clientId, T0), null);
      });

      it('gives the user code of an expired record to a new one, which replaces it', async () => {
        const expired = await givenDevice();
        const reuse = deviceRecord(expired.clientId, {
          userCode: expired.userCode,
          createdAt: expired.expiresAt,
          expiresAt: expired.expiresAt + 10 * MINUTE,
        });
        assert.equal(await store.devices.create(reuse), true);
        assert.deepEqual(await store.devices.findByUserCode(reuse.userCode, reuse.createdAt), reuse);
        assert.equal(await store.devices.poll(expired.deviceCodeHash, expired.clientId, reuse.createdAt), null);
      });

      it('stores a user code for exactly one of 10 concurrent creators', async () => {
        const client = await givenClient();
        const code = userCode();
        const results = await Promise.all(Array.from({ length: 10 }, () => store.devices.create(deviceRecord(client.id, { userCode: code }))));
        assert.equal(results.filter(Boolean).length, 1);
      });

      it('stores each of many records created at once by itself: new codes kept, a live code refused, an expired one replaced', async () => {
        const client = await givenClient();
        const live = await givenDevice({ clientId: client.id });
        const expired = await givenDevice({ clientId: client.id, expiresAt: T0 + MINUTE });
        const fresh = [deviceRecord(client.id), deviceRecord(client.id, { scope: ['openid'], requestUserAgent: null })];
        const clash = deviceRecord(client.id, { userCode: live.userCode, createdAt: T0 + 2 * MINUTE });
        const reuse = deviceRecord(client.id, { userCode: expired.userCode, createdAt: T0 + 2 * MINUTE, expiresAt: T0 + 12 * MINUTE });
        const results = await Promise.all([...fresh, clash, reuse].map((record) => store.devices.create(record)));
        assert.deepEqual(results, [true, true, false, true]);
        for (const record of [...fresh, reuse]) {
          assert.deepEqual(await store.devices.findByUserCode(record.userCode, T0 + 2 * MINUTE), record);
        }
        assert.deepEqual(await store.devices.findByUserCode(live.userCode, T0 + 2 * MINUTE), live);
        assert.equal(await store.devices.poll(clash.deviceCodeHash, client.id, T0 + 2 * MINUTE), null);
      });

      it('fails only the record naming an unknown client among many created at once', async () => {
        const client = await givenClient();
        const [first, orphan, last] = [deviceRecord(client.id), deviceRecord('no-such-client'), deviceRecord(client.id)];
        const results = await Promise.allSettled([first, orphan, last].map((record) => store.devices.create(record)));
        assert.deepEqual(results[0], { status: 'fulfilled', value: true });
        const orphaned = results[1];
        assert.ok(orphaned?.status === 'rejected' && orphaned.reason instanceof MissingReferenceError, String(orphaned));
        assert.deepEqual(results[2], { status: 'fulfilled', value: true });
        assert.deepEqual(await store.devices.findByUserCode(last.userCode, T0), last);
        assert.equal(await store.devices.findByUserCode(orphan.userCode, T0), null);
      });

      it('stores the event given with a record only when the record is stored, alone or many at once', async () => {
        const client = await givenClient();
        const live = await givenDevice({ clientId: client.id });
        const started = (record: DeviceAuthorizationRecord): AuditEvent => ({
          id: unique('event'),
          type: 'device.started',
          at: record.createdAt,
          userId: null,
          username: null,
          clientId: record.clientId,
          grantId: null,
          ip: record.requestIp,
          userAgent: record.requestUserAgent,
          detail: { scope: record.scope.join(' ') },
        });
        const alone = deviceRecord(client.id);
        const aloneEvent = started(alone);
        assert.equal(await store.devices.create(alone, aloneEvent), true);

        const fresh = deviceRecord(client.id);
        const clash = deviceRecord(client.id, { userCode: live.userCode, createdAt: T0 + MINUTE });
        const orphan = deviceRecord('no-such-client');
        const withoutEvent = deviceRecord(client.id);
        const events = new Map([fresh, clash, orphan].map((record) => [record, started(record)]));
        const results = await Promise.allSettled([fresh, clash, orphan, withoutEvent].map((record) => store.devices.create(record, events.get(record))));
        assert.deepEqual(
          results.map((result) => (result.status === 'fulfilled' ? result.value : 'rejected')),
          [true, false, 'rejected', true],
        );
        const byId = (a: AuditEvent, b: AuditEvent) => a.id.localeCompare(b.id);
        assert.deepEqual(
          (await store.events.list({ clientId: client.id, limit: 10 })).sort(byId),
          [aloneEvent, events.get(fresh)!].sort(byId),
          'the refused and the failed record left no event',
        );
        assert.deepEqual(await store.events.list({ clientId: 'no-such-client', limit: 10 }), []);
      });

      it('records an approval once, returning the decided record; a second decision returns null', async () => {
        const record = await givenDevice();
        const user = await givenUser();
        const approval = { approve: true, userId: user.id, authTime: T0, grantId: unique('grant') } as const;
        const decided = await store.devices.decide(record, approval, T0 + MINUTE);
        assert.deepEqual(decided, {
          ...record,
          status: 'approved',
          userId: user.id,
          authTime: T0,
          grantId: approval.grantId,
          decidedAt: T0 + MINUTE,
        });
        assert.equal(await store.devices.decide(record, { approve: false }, T0 + 2 * MINUTE), null);
        assert.equal(await store.devices.decide(record, approval, T0 + 2 * MINUTE), null);
        assert.deepEqual(await store.devices.findByUserCode(record.userCode, T0 + 2 * MINUTE), decided);
      });

      it('records a denial', async () => {
        const record = await givenDevice();
        assert.deepEqual(await store.devices.decide(record, { approve: false }, T0 + MINUTE), {
          ...record,
          status: 'denied',
          decidedAt: T0 + MINUTE,
        });
      });

      it('decides nothing for an expired record or an unknown device code', async () => {
        const record = await givenDevice();
        assert.equal(await store.devices.decide(record, { approve: false }, record.expiresAt), null);
        assert.equal(await store.devices.decide({ deviceCodeHash: 'no-such-device-code' }, { approve: false }, T0), null);
        assert.deepEqual(await store.devices.findByUserCode(record.userCode, T0), record);
      });

      it('decides only the record it was asked about, not a new one given its user code after it expired', async () => {
        const shown = await givenDevice();
        const reuse = deviceRecord(shown.clientId, { userCode: shown.userCode, createdAt: shown.expiresAt, expiresAt: shown.expiresAt + 10 * MINUTE });
        assert.equal(await store.devices.create(reuse), true);
        const user = await givenUser();
        const approval = { approve: true, userId: user.id, authTime: T0, grantId: unique('grant') } as const;
        for (const decision of [approval, { approve: false } as const]) {
          assert.equal(await store.devices.decide(shown, decision, reuse.createdAt + MINUTE), null);
        }
        assert.deepEqual(await store.devices.findByUserCode(reuse.userCode, reuse.createdAt + MINUTE), reuse, 'the new request still waits');
        assert.equal((await store.devices.decide(reuse, approval, reuse.createdAt + MINUTE))?.status, 'approved');
      });

      it('records a decision for exactly one of 10 concurrent deciders', async () => {
        const record = await givenDevice();
        const user = await givenUser();
        const results = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            store.devices.decide(
              record,
              i % 2 === 0 ? { approve: true, userId: user.id, authTime: T0, grantId: `grant-${i}` } : { approve: false },
              T0 + MINUTE,
            ),
          ),
        );
        assert.equal(results.filter((result) => result !== null).length, 1);
      });

      describe('poll (RFC 8628 §3.4-3.5)', () => {
        it("returns null for an unknown device code or another client's, and records no poll", async () => {
          const record = await givenDevice();
          const other = await givenClient();
          assert.equal(await store.devices.poll('no-such-device-code', record.clientId, T0), null);
          assert.equal(await store.devices.poll(record.deviceCodeHash, other.id, T0), null);
          assert.deepEqual(await store.devices.findByUserCode(record.userCode, T0), record);
        });

        it('answers pending to a first poll, however soon after the request, and records the poll time', async () => {
          const record = await givenDevice();
          assert.deepEqual(await store.devices.poll(record.deviceCodeHash, record.clientId, T0), {
            outcome: 'pending',
            record: { ...record, lastPolledAt: T0 },
          });
        });

        it('answers pending to a poll a full interval after the previous one', async () => {
          const record = await givenDevice();
          await store.devices.poll(record.deviceCodeHash, record.clientId, T0);
          const result = await store.devices.poll(record.deviceCodeHash, record.clientId, T0 + 5 * SECOND);
          assert.deepEqual(result, { outcome: 'pending', record: { ...record, lastPolledAt: T0 + 5 * SECOND } });
        });

        it('answers slow_down to a poll sooner than the interval, and grows the interval by 5 seconds', async () => {
          const record = await givenDevice();
          await store.devices.poll(record.deviceCodeHash, record.clientId, T0);
          const result = await store.devices.poll(record.deviceCodeHash, record.clientId, T0 + 5 * SECOND - 1);
          assert.deepEqual(result, {
            outcome: 'slow_down',
            record: { ...record, interval: 10, lastPolledAt: T0 + 5 * SECOND - 1 },
          });
        });

        it('keeps answering slow_down and growing the interval while the device polls too fast', async () => {
          const record = await givenDevice();
          const at = (s: number) => T0 + s * SECOND;
          await store.devices.poll(record.deviceCodeHash, record.clientId, at(0));
          const outcomes = [];
          for (const s of [1, 2, 3]) {
            outcomes.push((await store.devices.poll(record.deviceCodeHash, record.clientId, at(s)))?.outcome);
          }
          assert.deepEqual(outcomes, ['slow_down', 'slow_down', 'slow_down']);
          assert.equal((await store.devices.findByUserCode(record.userCode, at(3)))?.interval, 20);
        });

        it('stops growing the interval at the longest a device code lives, however often it is told to slow down', async () => {
          const record = await givenDevice();
          for (let i = 0; i < 130; i++) await store.devices.poll(record.deviceCodeHash, record.clientId, T0 + i);
          assert.equal((await store.devices.findByUserCode(record.userCode, T0 + 130))?.interval, 600);
        });

        it('answers normally again once the device waits the grown interval', async () => {
          const record = await givenDevice();
          await store.devices.poll(record.deviceCodeHash, record.clientId, T0);
          await store.devices.poll(record.deviceCodeHash, record.clientId, T0 + SECOND); // slow_down: interval 10 s
          const tooSoon = await store.devices.poll(record.deviceCodeHash, record.clientId, T0 + 11 * SECOND - 1);
          assert.equal(tooSoon?.outcome, 'slow_down');
          assert.equal(tooSoon.record.interval, 15);
          const onTime = await store.devices.poll(record.deviceCodeHash, record.clientId, T0 + 26 * SECOND - 1);
          assert.deepEqual(onTime, {
            outcome: 'pending',
            record: { ...record, interval: 15, lastPolledAt: T0 + 26 * SECOND - 1 },
          });
        });

        it('issues an approved record exactly once, consuming it, then answers consumed', async () => {
          const approved = await givenApprovedDevice();
          const issued = await store.devices.poll(approved.deviceCodeHash, approved.clientId, T0 + 2 * MINUTE);
          assert.deepEqual(issued, {
            outcome: 'issue',
            record: { ...approved, status: 'consumed', lastPolledAt: T0 + 2 * MINUTE },
          });
          const again = await store.devices.poll(approved.deviceCodeHash, approved.clientId, T0 + 3 * MINUTE);
          assert.deepEqual(again, {
            outcome: 'consumed',
            record: { ...approved, status: 'consumed', lastPolledAt: T0 + 3 * MINUTE },
          });
        });

        it('answers denied to a denied record', async () => {
          const record = await givenDevice();
          await store.devices.decide(record, { approve: false }, T0 + MINUTE);
          const result = await store.devices.poll(record.deviceCodeHash, record.clientId, T0 + 2 * MINUTE);
          assert.equal(result?.outcome, 'denied');
          assert.equal(result.record.status, 'denied');
        });

        it('answers expired from the expiry on, before every other outcome', async () => {
          const pending = await givenDevice();
          const approved = await givenApprovedDevice();
          const denied = await givenDevice();
          await store.devices.decide(denied, { approve: false }, T0 + MINUTE);
          const expiry = T0 + 10 * MINUTE;
          for (const record of [pending, approved, denied]) {
            // A poll just before expiry makes the expired one also too soon: expired still wins.
            await store.devices.poll(record.deviceCodeHash, record.clientId, expiry - 1);
            const result = await store.devices.poll(record.deviceCodeHash, record.clientId, expiry);
            assert.equal(result?.outcome, 'expired', record.status);
          }
          const afterExpiry = await store.devices.poll(approved.deviceCodeHash, approved.clientId, expiry + HOUR);
          assert.equal(afterExpiry?.outcome, 'expired');
          // The first poll that found it expired keeps its time: the flow records the expiry once.
          assert.equal(afterExpiry?.record.lastPolledAt, expiry);
          const alone = await givenDevice();
          const [first, second] = [
            await store.devices.poll(alone.deviceCodeHash, alone.clientId, expiry),
            await store.devices.poll(alone.deviceCodeHash, alone.clientId, expiry + 1),
          ];
          assert.deepEqual([first?.record.lastPolledAt, second?.record.lastPolledAt], [expiry, expiry]);
        });

        it('answers consumed and denied before slow_down, without growing the interval', async () => {
          const consumed = await givenApprovedDevice();
          await store.devices.poll(consumed.deviceCodeHash, consumed.clientId, T0 + 2 * MINUTE);
          const denied = await givenDevice();
          await store.devices.decide(denied, { approve: false }, T0 + MINUTE);
          await store.devices.poll(denied.deviceCodeHash, denied.clientId, T0 + 2 * MINUTE);

          const afterConsumed = await store.devices.poll(consumed.deviceCodeHash, consumed.clientId, T0 + 2 * MINUTE + 1);
          const afterDenied = await store.devices.poll(denied.deviceCodeHash, denied.clientId, T0 + 2 * MINUTE + 1);
          assert.equal(afterConsumed?.outcome, 'consumed');
          assert.equal(afterConsumed.record.interval, 5);
          assert.equal(afterDenied?.outcome, 'denied');
          assert.equal(afterDenied.record.interval, 5);
        });

        it('answers slow_down before issue to an approved record polled too soon, and issues on the next timely poll', async () => {
          const approved = await givenDevice({ lastPolledAt: T0 + MINUTE - SECOND });
          const user = await givenUser();
          await store.devices.decide(approved, { approve: true, userId: user.id, authTime: T0, grantId: 'g' }, T0 + MINUTE);
          const tooSoon = await store.devices.poll(approved.deviceCodeHash, approved.clientId, T0 + MINUTE);
          assert.equal(tooSoon?.outcome, 'slow_down');
          assert.equal(tooSoon.record.status, 'approved');
          assert.equal(tooSoon.record.interval, 10);
          const onTime = await store.devices.poll(approved.deviceCodeHash, approved.clientId, T0 + MINUTE + 10 * SECOND);
          assert.equal(onTime?.outcome, 'issue');
          assert.equal(onTime.record.status, 'consumed');
        });

        it('gives exactly one issue to 20 concurrent polls of an approved record never polled before', async () => {
          const approved = await givenApprovedDevice();
          const results = await Promise.all(Array.from({ length: 20 }, () => store.devices.poll(approved.deviceCodeHash, approved.clientId, T0 + 2 * MINUTE)));
          const outcomes = results.map((result) => result?.outcome);
          assert.equal(outcomes.filter((outcome) => outcome === 'issue').length, 1);
          assert.equal(outcomes.filter((outcome) => outcome === 'consumed').length, 19);
        });

        it('gives exactly one issue to 20 concurrent polls of an approved record last polled long ago', async () => {
          const approved = await givenApprovedDevice({ lastPolledAt: T0 + 10 * SECOND });
          const results = await Promise.all(Array.from({ length: 20 }, () => store.devices.poll(approved.deviceCodeHash, approved.clientId, T0 + 5 * MINUTE)));
          const outcomes = results.map((result) => result?.outcome);
          assert.equal(outcomes.filter((outcome) => outcome === 'issue').length, 1);
          assert.equal(outcomes.filter((outcome) => outcome === 'consumed').length, 19);
        });

        it('answers each of many records polled at once by itself, each at its own time', async () => {
          const pending = await givenDevice();
          const approved = await givenApprovedDevice();
          const polledJustNow = await givenDevice({ lastPolledAt: T0 + 2 * MINUTE - SECOND });
          const denied = await givenDevice();
          await store.devices.decide(denied, { approve: false }, T0 + MINUTE);
          const otherClients = await givenDevice();
          const [a, b, c, d, e, unknown] = await Promise.all([
            store.devices.poll(pending.deviceCodeHash, pending.clientId, T0 + 2 * MINUTE),
            store.devices.poll(approved.deviceCodeHash, approved.clientId, T0 + 2 * MINUTE + 1),
            store.devices.poll(polledJustNow.deviceCodeHash, polledJustNow.clientId, T0 + 2 * MINUTE + 2),
            store.devices.poll(denied.deviceCodeHash, denied.clientId, T0 + 10 * MINUTE),
            store.devices.poll(otherClients.deviceCodeHash, 'another-client', T0 + 2 * MINUTE),
            store.devices.poll('no-such-hash', pending.clientId, T0 + 2 * MINUTE),
          ]);
          assert.deepEqual(a, { outcome: 'pending', record: { ...pending, lastPolledAt: T0 + 2 * MINUTE } });
          assert.deepEqual(b, { outcome: 'issue', record: { ...approved, status: 'consumed', lastPolledAt: T0 + 2 * MINUTE + 1 } });
          assert.deepEqual(c, { outcome: 'slow_down', record: { ...polledJustNow, interval: 10, lastPolledAt: T0 + 2 * MINUTE + 2 } });
          assert.equal(d?.outcome, 'expired');
          assert.equal(e, null, "another client's poll finds nothing");
          assert.equal(unknown, null);
        });
      });
    });

    describe('DPoP bindings (RFC 9449) and client requirements', () => {
      it('keeps a client that requires DPoP and PAR', async () => {
        const client = await givenClient({ requireDpop: true, requirePar: true });
        assert.deepEqual(await store.clients.get(client.id), client);
      });

      it('redeems a code bound to a DPoP key only with that key, and leaves it unconsumed otherwise', async () => {
        const code = await givenCode({ dpopJkt: 'jkt-a' });
        assert.deepEqual(await store.codes.find(code.hash), code);
        assert.equal(await store.codes.consume(code.hash, { ...bindingOf(code), dpopJkt: 'jkt-b' }, T0 + SECOND), null);
        assert.equal(await store.codes.consume(code.hash, bindingOf(code), T0 + SECOND), null);
        assert.deepEqual(await store.codes.find(code.hash), code);
        assert.deepEqual(await store.codes.consume(code.hash, { ...bindingOf(code), dpopJkt: 'jkt-a' }, T0 + SECOND), { ...code, consumedAt: T0 + SECOND });
      });

      it('redeems an unbound code with or without a key', async () => {
        const code = await givenCode();
        assert.ok(await store.codes.consume(code.hash, { ...bindingOf(code), dpopJkt: 'any' }, T0 + SECOND));
      });

      it('polls a device code bound to a key only with that key: another poll finds nothing and records nothing', async () => {
        const approved = await givenApprovedDevice({ dpopJkt: 'jkt-a' });
        assert.deepEqual(await store.devices.find(approved.deviceCodeHash), approved);
        assert.equal(await store.devices.poll(approved.deviceCodeHash, approved.clientId, T0 + 2 * MINUTE, 'jkt-b'), null);
        assert.equal(await store.devices.poll(approved.deviceCodeHash, approved.clientId, T0 + 2 * MINUTE), null);
        assert.deepEqual(await store.devices.find(approved.deviceCodeHash), approved);
        assert.deepEqual(await store.devices.poll(approved.deviceCodeHash, approved.clientId, T0 + 2 * MINUTE, 'jkt-a'), {
          outcome: 'issue',
          record: { ...approved, status: 'consumed', lastPolledAt: T0 + 2 * MINUTE },
        });
        assert.equal(await store.devices.find('no-such-hash'), null);
      });

      it('binds an unbound device code to the key of its first poll with a proof: then only that key polls it', async () => {
        const device = await givenDevice();
        assert.deepEqual(await store.devices.poll(device.deviceCodeHash, device.clientId, T0 + MINUTE), {
          outcome: 'pending',
          record: { ...device, lastPolledAt: T0 + MINUTE },
        });
        assert.deepEqual(await store.devices.poll(device.deviceCodeHash, device.clientId, T0 + 2 * MINUTE, 'jkt-a'), {
          outcome: 'pending',
          record: { ...device, lastPolledAt: T0 + 2 * MINUTE, dpopJkt: 'jkt-a' },
        });
        assert.equal(await store.devices.poll(device.deviceCodeHash, device.clientId, T0 + 3 * MINUTE, 'jkt-b'), null);
        assert.equal(await store.devices.poll(device.deviceCodeHash, device.clientId, T0 + 3 * MINUTE), null);
        assert.deepEqual(await store.devices.find(device.deviceCodeHash), { ...device, lastPolledAt: T0 + 2 * MINUTE, dpopJkt: 'jkt-a' });
      });

      it('answers bound and unbound device codes polled at once each by its own key', async () => {
        const bound = await givenApprovedDevice({ dpopJkt: 'jkt-a' });
        const stolen = await givenApprovedDevice({ dpopJkt: 'jkt-a' });
        const unbound = await givenDevice();
        const [a, b, c] = await Promise.all([
          store.devices.poll(bound.deviceCodeHash, bound.clientId, T0 + 2 * MINUTE, 'jkt-a'),
          store.devices.poll(stolen.deviceCodeHash, stolen.clientId, T0 + 2 * MINUTE, 'jkt-b'),
          store.devices.poll(unbound.deviceCodeHash, unbound.clientId, T0 + 2 * MINUTE, 'jkt-c'),
        ]);
        assert.equal(a?.outcome, 'issue');
        assert.equal(b, null);
        assert.equal(c?.outcome, 'pending');
        assert.equal((await store.devices.find(stolen.deviceCodeHash))?.status, 'approved');
      });

      it('keeps the key a refresh token is bound to', async () => {
        const token = await givenRefreshToken({ dpopJkt: 'jkt-a' });
        assert.deepEqual(await store.refreshTokens.find(token.hash), token);
      });

      it('accepts a proof once within its lifetime, again after it expired, and once among concurrent uses', async () => {
        assert.equal(await store.dpopProofs.use('proof-1', T0 + MINUTE, T0), true);
        assert.equal(await store.dpopProofs.use('proof-1', T0 + MINUTE, T0 + SECOND), false);
        assert.equal(await store.dpopProofs.use('proof-1', T0 + 2 * MINUTE, T0 + MINUTE), true);
        const results = await Promise.all(Array.from({ length: 10 }, () => store.dpopProofs.use('proof-2', T0 + MINUTE, T0)));
        assert.equal(results.filter(Boolean).length, 1);
      });

      it('answers each of many proofs used at once by itself: new ones taken, a live one refused, an expired one taken over', async () => {
        await store.dpopProofs.use('proof-live', T0 + MINUTE, T0);
        await store.dpopProofs.use('proof-expired', T0 + SECOND, T0);
        const results = await Promise.all([
          store.dpopProofs.use('proof-new-1', T0 + 2 * MINUTE, T0 + 2 * SECOND),
          store.dpopProofs.use('proof-live', T0 + 2 * MINUTE, T0 + 2 * SECOND),
          store.dpopProofs.use('proof-expired', T0 + 2 * MINUTE, T0 + 2 * SECOND),
          store.dpopProofs.use('proof-new-2', T0 + 2 * MINUTE, T0 + 2 * SECOND),
        ]);
        assert.deepEqual(results, [true, false, true, true]);
        assert.equal(await store.dpopProofs.use('proof-expired', T0 + 2 * MINUTE, T0 + 3 * SECOND), false, 'taken over until its new expiry');
      });
    });

    describe('pushed authorization requests (RFC 9126)', () => {
      async function givenPushed(overrides: Partial<PushedRequestRecord> = {}): Promise<PushedRequestRecord> {
        const record: PushedRequestRecord = {
          hash: unique('request-uri-hash'),
          clientId: overrides.clientId ?? (await givenClient()).id,
          params: { response_type: 'code', scope: 'openid', state: 'xyz', resource: ['https://a.example/', 'https://b.example/'] },
          createdAt: T0,
          expiresAt: T0 + MINUTE,
          claimedAt: null,
          browser: null,
          decidedAt: null,
          ...overrides,
        };
        await store.pushedRequests.create(record);
        return record;
      }

      it('finds a created request with every field as given', async () => {
        const record = await givenPushed();
        assert.deepEqual(await store.pushedRequests.find(record.hash), record);
        assert.equal(await store.pushedRequests.find('no-such-hash'), null);
      });

      it('is claimed once, by one browser, before it expires, and only by its client', async () => {
        const record = await givenPushed();
        assert.equal(await store.pushedRequests.claim(record.hash, 'another-client', 'browser-a', T0, T0 + HOUR), null);
        assert.equal(await store.pushedRequests.claim(record.hash, record.clientId, 'browser-a', record.expiresAt, T0 + HOUR), null);
        const claimed = { ...record, claimedAt: T0 + SECOND, browser: 'browser-a', expiresAt: T0 + HOUR };
        assert.deepEqual(await store.pushedRequests.claim(record.hash, record.clientId, 'browser-a', T0 + SECOND, T0 + HOUR), claimed);
        assert.equal(await store.pushedRequests.claim(record.hash, record.clientId, 'browser-b', T0 + SECOND, T0 + HOUR), null);
        assert.equal(await store.pushedRequests.claim(record.hash, record.clientId, 'browser-a', T0 + SECOND, T0 + HOUR), null);
        assert.deepEqual(await store.pushedRequests.resume(record.hash, record.clientId, 'browser-a', T0 + MINUTE), claimed);
        assert.equal(await store.pushedRequests.resume(record.hash, record.clientId, 'browser-b', T0 + MINUTE), null);
        assert.equal(await store.pushedRequests.resume(record.hash, record.clientId, 'browser-a', T0 + HOUR), null);
      });

      it('is decided once, by the browser that claimed it', async () => {
        const record = await givenPushed();
        assert.equal(await store.pushedRequests.decide(record.hash, record.clientId, 'browser-a', T0), null, 'not claimed yet');
        await store.pushedRequests.claim(record.hash, record.clientId, 'browser-a', T0, T0 + HOUR);
        assert.equal(await store.pushedRequests.decide(record.hash, record.clientId, 'browser-b', T0 + SECOND), null);
        const results = await Promise.all(
          Array.from({ length: 10 }, () => store.pushedRequests.decide(record.hash, record.clientId, 'browser-a', T0 + SECOND)),
        );
        assert.equal(results.filter((result) => result !== null).length, 1);
        assert.equal(await store.pushedRequests.resume(record.hash, record.clientId, 'browser-a', T0 + 2 * SECOND), null);
      });

      it('goes with its client', async () => {
        const record = await givenPushed();
        await store.clients.remove(record.clientId);
        assert.equal(await store.pushedRequests.find(record.hash), null);
      });
    });

    describe('grant use', () => {
      it('records when a grant was last used and until when its tokens live', async () => {
        const grant = await givenGrant((await givenClient()).id, (await givenUser()).id);
        assert.equal(await store.grants.recordUse(grant.id, T0 + MINUTE, T0 + HOUR), true);
        assert.deepEqual(await store.grants.get(grant.id), { ...grant, lastUsedAt: T0 + MINUTE, activeUntil: T0 + HOUR });
        assert.equal(await store.grants.recordUse(grant.id, T0 + 2 * MINUTE, T0 + 2 * HOUR), true);
        assert.deepEqual(await store.grants.get(grant.id), { ...grant, lastUsedAt: T0 + 2 * MINUTE, activeUntil: T0 + 2 * HOUR });
      });

      it('never moves the last use or the active-until time back', async () => {
        const grant = await givenGrant((await givenClient()).id, (await givenUser()).id);
        await store.grants.recordUse(grant.id, T0 + 2 * MINUTE, T0 + 2 * HOUR);
        assert.equal(await store.grants.recordUse(grant.id, T0 + MINUTE, T0 + HOUR), true);
        assert.deepEqual(await store.grants.get(grant.id), { ...grant, lastUsedAt: T0 + 2 * MINUTE, activeUntil: T0 + 2 * HOUR });
      });

      it('records no use of a revoked or unknown grant', async () => {
        const grant = await givenGrant((await givenClient()).id, (await givenUser()).id);
        await store.grants.revoke(grant.id, T0);
        assert.equal(await store.grants.recordUse(grant.id, T0 + MINUTE, T0 + HOUR), false);
        assert.deepEqual(await store.grants.get(grant.id), { ...grant, revokedAt: T0 });
        assert.equal(await store.grants.recordUse('no-such-grant', T0, T0 + HOUR), false);
      });

      it('answers the lookups, grant uses and events of one turn each as if made alone (PostgreSQL batches them)', async () => {
        const client = await givenClient();
        const [ada, bob] = [await givenUser(), await givenUser()];
        const [live, other, revoked] = [await givenGrant(client.id, ada.id), await givenGrant(client.id, bob.id), await givenGrant(client.id, ada.id)];
        await store.grants.revoke(revoked.id, T0);
        const [users, grants, uses, events] = await Promise.all([
          Promise.all([store.users.get(ada.id), store.users.get(bob.id), store.users.get('no-such-user'), store.users.get(ada.id)]),
          Promise.all([store.grants.get(live.id), store.grants.get('no-such-grant'), store.grants.get(other.id)]),
          Promise.all([
            store.grants.recordUse(live.id, T0 + MINUTE, T0 + HOUR),
            store.grants.recordUse(other.id, T0 + 2 * MINUTE, T0 + 2 * HOUR),
            store.grants.recordUse(revoked.id, T0 + MINUTE, T0 + HOUR),
            store.grants.recordUse('no-such-grant', T0, T0 + HOUR),
            // The same grant twice in one turn: the later time wins, as it would one call after the other.
            store.grants.recordUse(live.id, T0 + 3 * MINUTE, T0 + 3 * HOUR),
          ]),
          Promise.all(
            ['first', 'second', 'third'].map((name) =>
              store.events.add({
                id: unique('event'),
                type: 'code.redeemed',
                at: T0 + 5,
                userId: ada.id,
                username: name,
                clientId: client.id,
                grantId: live.id,
                ip: null,
                userAgent: null,
                detail: {},
              }),
            ),
          ),
        ]);
        assert.deepEqual(
          users.map((user) => user?.id ?? null),
          [ada.id, bob.id, null, ada.id],
        );
        assert.deepEqual(
          grants.map((grant) => grant?.id ?? null),
          [live.id, null, other.id],
        );
        assert.deepEqual(uses, [true, true, false, false, true]);
        assert.deepEqual(events, [undefined, undefined, undefined]);
        assert.deepEqual(await store.grants.get(live.id), { ...live, lastUsedAt: T0 + 3 * MINUTE, activeUntil: T0 + 3 * HOUR });
        assert.deepEqual(await store.grants.get(other.id), { ...other, lastUsedAt: T0 + 2 * MINUTE, activeUntil: T0 + 2 * HOUR });
        assert.deepEqual(await store.grants.get(revoked.id), { ...revoked, revokedAt: T0 });
        const stored = await store.events.list({ clientId: client.id, type: 'code.redeemed', limit: 10 });
        assert.deepEqual(stored.map((event) => event.username).sort(), ['first', 'second', 'third']);
      });

      it('lists grants with their use', async () => {
        const user = await givenUser();
        const grant = await givenGrant((await givenClient()).id, user.id);
        await store.grants.recordUse(grant.id, T0 + MINUTE, T0 + HOUR);
        assert.deepEqual(await store.grants.listForUser(user.id), [{ ...grant, lastUsedAt: T0 + MINUTE, activeUntil: T0 + HOUR }]);
      });
    });

    describe('refresh tokens', () => {
      it('finds a created refresh token with every field as given, and null for an unknown one', async () => {
        const token = await givenRefreshToken();
        assert.deepEqual(await store.refreshTokens.find(token.hash), token);
        assert.equal(await store.refreshTokens.find('no-such-token'), null);
      });

      it('keeps a refresh token without ID token claims, acr or amr (one from before they were kept)', async () => {
        const { amr: _amr, acr: _acr, ...old } = await givenRefreshToken({ idTokenClaims: [], amr: undefined, acr: undefined });
        assert.deepEqual(await store.refreshTokens.find(old.hash), old);
      });

      it('keeps a refresh token without claims asked for by name, or the scopes approved for them, as without them', async () => {
        const { userinfoClaims: _claims, claimsScope: _scope, ...unnamed } = await givenRefreshToken({ userinfoClaims: undefined, claimsScope: undefined });
        assert.deepEqual(await store.refreshTokens.find(unnamed.hash), unnamed);
      });

      it('finds a token with its grant and user as they are now, whatever its state, and null for an unknown one', async () => {
        const token = await givenRefreshToken();
        const found = await store.refreshTokens.findForRefresh(token.hash);
        assert.deepEqual(found?.token, token);
        assert.deepEqual(found?.grant, await store.grants.get(token.grantId));
        assert.deepEqual(found?.user, await store.users.get(token.userId));
        await store.refreshTokens.rotateWith(token.hash, token.clientId, T0 + SECOND, { activeUntil: T0 + SECOND });
        await store.grants.revoke(token.grantId, T0 + 2 * SECOND);
        const later = await store.refreshTokens.findForRefresh(token.hash);
        assert.equal(later?.token.rotatedAt, T0 + SECOND);
        assert.equal(later?.grant?.revokedAt, T0 + 2 * SECOND);
        const {
          amr: _amr,
          acr: _acr,
          userinfoClaims: _claims,
          claimsScope: _scope,
          ...old
        } = await givenRefreshToken({
          idTokenClaims: [],
          amr: undefined,
          acr: undefined,
          userinfoClaims: undefined,
          claimsScope: undefined,
        });
        assert.deepEqual((await store.refreshTokens.findForRefresh(old.hash))?.token, old);
        assert.equal(await store.refreshTokens.findForRefresh('no-such-token'), null);
      });

      it('rotates a token once: the first call rotates it, the second finds it rotated', async () => {
        const token = await givenRefreshToken();
        const rotated = { ...token, rotatedAt: T0 + SECOND };
        assert.equal(await store.refreshTokens.rotateWith(token.hash, token.clientId, T0 + SECOND, { activeUntil: T0 + SECOND }), true);
        assert.equal(await store.refreshTokens.rotateWith(token.hash, token.clientId, T0 + 2 * SECOND, { activeUntil: T0 + 2 * SECOND }), false);
        assert.deepEqual(await store.refreshTokens.find(token.hash), rotated);
      });

      it('rotates nothing and leaves the token unrotated when another client presents it', async () => {
        const token = await givenRefreshToken();
        const other = await givenClient();
        assert.equal(await store.refreshTokens.rotateWith(token.hash, other.id, T0, { activeUntil: T0 }), false);
        assert.deepEqual(await store.refreshTokens.find(token.hash), token);
      });

      it('rotates a token one millisecond before its expiry, and not from its expiry on', async () => {
        const [early, late] = [await givenRefreshToken(), await givenRefreshToken()];
        assert.equal(await store.refreshTokens.rotateWith(early.hash, early.clientId, early.expiresAt - 1, { activeUntil: early.expiresAt - 1 }), true);
        assert.equal(await store.refreshTokens.rotateWith(late.hash, late.clientId, late.expiresAt, { activeUntil: late.expiresAt }), false);
        assert.deepEqual(await store.refreshTokens.find(late.hash), late);
      });

      it('rotates nothing and leaves the token unrotated once its grant is revoked', async () => {
        const token = await givenRefreshToken();
        await store.grants.revoke(token.grantId, T0);
        assert.equal(await store.refreshTokens.rotateWith(token.hash, token.clientId, T0 + SECOND, { activeUntil: T0 + SECOND }), false);
        assert.deepEqual(await store.refreshTokens.find(token.hash), token);
      });

      it('rotates nothing for an unknown token', async () => {
        assert.equal(await store.refreshTokens.rotateWith('no-such-token', 'no-such-client', T0, { activeUntil: T0 }), false);
      });

      it('rotates a token for exactly one of 20 concurrent callers', async () => {
        const token = await givenRefreshToken();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => store.refreshTokens.rotateWith(token.hash, token.clientId, T0 + i, { activeUntil: T0 + i })),
        );
        const winner = results.indexOf(true);
        assert.equal(results.filter((result) => result).length, 1);
        assert.deepEqual(await store.refreshTokens.find(token.hash), { ...token, rotatedAt: T0 + winner });
      });

      let rotations = 0;
      const rotatedEvent = (token: RefreshTokenRecord): AuditEvent => ({
        id: `01900000-0000-7000-9000-${String(++rotations).padStart(12, '0')}`,
        type: 'refresh.rotated',
        at: T0 + SECOND,
        userId: token.userId,
        username: 'ada',
        clientId: token.clientId,
        grantId: token.grantId,
        ip: '192.0.2.1',
        userAgent: 'test',
        detail: {},
      });
      const nextOf = (token: RefreshTokenRecord): RefreshTokenRecord => ({ ...token, hash: unique('refresh-hash'), createdAt: T0 + SECOND });

      it('rotates a token once with the next token, the grant use and the event written together; the second call writes nothing', async () => {
        const token = await givenRefreshToken();
        const next = nextOf(token);
        const event = rotatedEvent(token);
        assert.equal(
          await store.refreshTokens.rotateWith(token.hash, token.clientId, T0 + SECOND, { activeUntil: T0 + HOUR, refreshToken: next, event }),
          true,
        );
        assert.deepEqual(await store.refreshTokens.find(token.hash), { ...token, rotatedAt: T0 + SECOND });
        assert.deepEqual(await store.refreshTokens.find(next.hash), next);
        const grant = await store.grants.get(token.grantId);
        assert.deepEqual([grant?.lastUsedAt, grant?.activeUntil], [T0 + SECOND, T0 + HOUR]);
        assert.deepEqual(
          (await store.events.list({ clientId: token.clientId, limit: 10 })).map((stored) => stored.id),
          [event.id],
        );
        const again = { activeUntil: T0 + 2 * HOUR, refreshToken: nextOf(token), event: rotatedEvent(token) };
        assert.equal(await store.refreshTokens.rotateWith(token.hash, token.clientId, T0 + 2 * SECOND, again), false);
        assert.equal(await store.refreshTokens.find(again.refreshToken.hash), null);
        assert.equal((await store.grants.get(token.grantId))?.activeUntil, T0 + HOUR);
        assert.equal((await store.events.list({ clientId: token.clientId, limit: 10 })).length, 1);
      });

      it('writes nothing for a token another client presents, or one whose grant is revoked', async () => {
        const token = await givenRefreshToken();
        const other = await givenClient();
        const writes = { activeUntil: T0 + HOUR, refreshToken: nextOf(token), event: rotatedEvent(token) };
        assert.equal(await store.refreshTokens.rotateWith(token.hash, other.id, T0 + SECOND, writes), false);
        await store.grants.revoke(token.grantId, T0);
        assert.equal(await store.refreshTokens.rotateWith(token.hash, token.clientId, T0 + SECOND, writes), false);
        assert.deepEqual(await store.refreshTokens.find(token.hash), token);
        assert.equal(await store.refreshTokens.find(writes.refreshToken.hash), null);
        assert.deepEqual(await store.events.list({ clientId: token.clientId, limit: 10 }), []);
      });

      it('leaves the token unrotated when a write that follows fails', async () => {
        const token = await givenRefreshToken();
        const taken = await givenRefreshToken();
        const writes = { activeUntil: T0 + HOUR, refreshToken: { ...nextOf(token), hash: taken.hash }, event: rotatedEvent(token) };
        await assert.rejects(store.refreshTokens.rotateWith(token.hash, token.clientId, T0 + SECOND, writes), DuplicateError);
        assert.deepEqual(await store.refreshTokens.find(token.hash), token);
        assert.deepEqual(await store.events.list({ clientId: token.clientId, limit: 10 }), []);
        assert.ok(await store.refreshTokens.rotateWith(token.hash, token.clientId, T0 + SECOND, { activeUntil: T0 + HOUR }));
      });

      it('rotates a token with its writes for exactly one of 20 concurrent callers, whose next token alone is stored', async () => {
        const token = await givenRefreshToken();
        const calls = Array.from({ length: 20 }, (_, i) => ({ activeUntil: T0 + HOUR, refreshToken: nextOf(token), event: rotatedEvent(token), at: T0 + i }));
        const results = await Promise.all(calls.map((call) => store.refreshTokens.rotateWith(token.hash, token.clientId, call.at, call)));
        assert.equal(results.filter((result) => result).length, 1);
        const stored = await Promise.all(calls.map((call) => store.refreshTokens.find(call.refreshToken.hash)));
        assert.equal(stored.filter((found) => found !== null).length, 1);
        assert.equal((await store.events.list({ clientId: token.clientId, limit: 30 })).length, 1);
      });

      it('removes refresh tokens with the client their grant belongs to', async () => {
        const token = await givenRefreshToken();
        await store.clients.remove(token.clientId);
        assert.equal(await store.refreshTokens.find(token.hash), null);
      });
    });

    describe('revoked access tokens', () => {
      it('knows a revoked jti, and not an unrevoked one', async () => {
        const jti = unique('jti');
        assert.equal(await store.accessTokens.isRevoked(jti), false);
        await store.accessTokens.revoke(jti, T0 + HOUR);
        assert.equal(await store.accessTokens.isRevoked(jti), true);
        assert.equal(await store.accessTokens.isRevoked(unique('jti')), false);
      });

      it('accepts revoking the same jti again, also concurrently', async () => {
        const jti = unique('jti');
        await Promise.all(Array.from({ length: 10 }, () => store.accessTokens.revoke(jti, T0 + HOUR)));
        await store.accessTokens.revoke(jti, T0 + 2 * HOUR);
        assert.equal(await store.accessTokens.isRevoked(jti), true);
      });
    });

    describe('rate limits', () => {
      it('counts hits in a fixed window and starts a new window once it has ended', async () => {
        const key = unique('login:203.0.113.7');
        const window = MINUTE;
        assert.deepEqual(await store.rateLimits.hit(key, window, T0), { hits: 1, endsAt: T0 + window });
        assert.deepEqual(await store.rateLimits.hit(key, window, T0 + SECOND), { hits: 2, endsAt: T0 + window });
        assert.deepEqual(await store.rateLimits.hit(key, window, T0 + window - 1), { hits: 3, endsAt: T0 + window });
        assert.deepEqual(await store.rateLimits.hit(key, window, T0 + window), { hits: 1, endsAt: T0 + 2 * window });
        assert.deepEqual(await store.rateLimits.hit(key, window, T0 + window + SECOND), { hits: 2, endsAt: T0 + 2 * window });
      });

      it('counts the current window without counting a hit, and 0 once it has ended', async () => {
        const key = unique('token:client');
        assert.equal(await store.rateLimits.count(key, MINUTE, T0), 0);
        await store.rateLimits.hit(key, MINUTE, T0);
        await store.rateLimits.hit(key, MINUTE, T0);
        assert.equal(await store.rateLimits.count(key, MINUTE, T0 + SECOND), 2);
        assert.equal(await store.rateLimits.count(key, MINUTE, T0 + SECOND), 2);
        assert.equal(await store.rateLimits.count(key, MINUTE, T0 + MINUTE), 0);
      });

      it('lists the open windows under a prefix, latest-ending first, and forgets one key at a time', async () => {
        const prefix = unique('lockout:');
        const userKey = `${prefix}user:a_b%c`;
        const ipKey = `${prefix}ip:203.0.113.7`;
        await store.rateLimits.hit(userKey, MINUTE, T0);
        await store.rateLimits.hit(userKey, MINUTE, T0);
        await store.rateLimits.hit(ipKey, 2 * MINUTE, T0);
        await store.rateLimits.hit(`${prefix.replace(':', '')}x:other`, MINUTE, T0);
        await store.rateLimits.hit(`${prefix}ended`, SECOND, T0);
        assert.deepEqual(await store.rateLimits.listOpen(prefix, T0 + 2 * SECOND, 10), [
          { key: ipKey, hits: 1, endsAt: T0 + 2 * MINUTE },
          { key: userKey, hits: 2, endsAt: T0 + MINUTE },
        ]);
        assert.deepEqual(
          (await store.rateLimits.listOpen(`${prefix}user:a_b`, T0, 10)).map((w) => w.key),
          [userKey],
          '_ and % are literal',
        );
        assert.deepEqual(
          (await store.rateLimits.listOpen(`${prefix}user:a%`, T0, 10)).map((w) => w.key),
          [],
        );
        assert.equal((await store.rateLimits.listOpen(prefix, T0 + SECOND, 1)).length, 1, 'bounded');
        await store.rateLimits.release(ipKey, T0 + 2 * MINUTE);
        assert.deepEqual(
          (await store.rateLimits.listOpen(prefix, T0 + 2 * SECOND, 10)).map((w) => w.key),
          [userKey],
          'a window counting nothing is no lockout',
        );
        assert.equal(await store.rateLimits.remove(userKey), true);
        assert.equal(await store.rateLimits.remove(userKey), false);
        assert.equal(await store.rateLimits.count(userKey, MINUTE, T0 + SECOND), 0);
        assert.deepEqual(await store.rateLimits.listOpen(prefix, T0 + 2 * SECOND, 10), []);
      });

      it('reads the current window, its count and its end, without counting', async () => {
        const key = unique('window');
        assert.equal(await store.rateLimits.window(key, T0), null);
        await store.rateLimits.hit(key, MINUTE, T0);
        await store.rateLimits.hit(key, MINUTE, T0 + SECOND);
        assert.deepEqual(await store.rateLimits.window(key, T0 + 2 * SECOND), { hits: 2, endsAt: T0 + MINUTE });
        assert.deepEqual(await store.rateLimits.window(key, T0 + 2 * SECOND), { hits: 2, endsAt: T0 + MINUTE });
        assert.equal(await store.rateLimits.window(key, T0 + MINUTE), null);
      });

      it('takes a hit back from the window it landed in, never below zero', async () => {
        const key = unique('attempt');
        const { endsAt } = await store.rateLimits.hit(key, MINUTE, T0);
        await store.rateLimits.hit(key, MINUTE, T0);
        await store.rateLimits.release(key, endsAt);
        assert.equal(await store.rateLimits.count(key, MINUTE, T0 + SECOND), 1);
        await store.rateLimits.release(key, endsAt);
        await store.rateLimits.release(key, endsAt);
        assert.equal(await store.rateLimits.count(key, MINUTE, T0 + SECOND), 0);
        await store.rateLimits.hit(key, MINUTE, T0 + 2 * SECOND);
        await store.rateLimits.release(key, T0 + 2 * MINUTE);
        assert.equal(await store.rateLimits.count(key, MINUTE, T0 + 2 * SECOND), 1, 'not from a window that ends otherwise');
        await store.rateLimits.release(unique('never-hit'), endsAt);
      });

      it('takes a hit back from its own window even after the next has opened, leaving the next window its count', async () => {
        const key = unique('attempt');
        await store.rateLimits.hit(key, MINUTE, T0);
        // An attempt just before the window ends, still going when the next window opens.
        const late = await store.rateLimits.hit(key, MINUTE, T0 + MINUTE - 5);
        assert.deepEqual(late, { hits: 2, endsAt: T0 + MINUTE });
        assert.deepEqual(await store.rateLimits.hit(key, MINUTE, T0 + MINUTE + 1), { hits: 1, endsAt: T0 + 2 * MINUTE + 1 });
        await store.rateLimits.release(key, late.endsAt);
        assert.equal(await store.rateLimits.count(key, MINUTE, T0 + MINUTE + 2), 1);
      });

      it('keeps keys apart', async () => {
        const [a, b] = [unique('key'), unique('key')];
        await store.rateLimits.hit(a, MINUTE, T0);
        await store.rateLimits.hit(a, MINUTE, T0);
        assert.equal((await store.rateLimits.hit(b, MINUTE, T0)).hits, 1);
        assert.equal(await store.rateLimits.count(a, MINUTE, T0), 2);
      });

      it('counts every one of 20 concurrent hits', async () => {
        const key = unique('key');
        const counts = await Promise.all(Array.from({ length: 20 }, async () => (await store.rateLimits.hit(key, MINUTE, T0)).hits));
        assert.deepEqual(
          counts.toSorted((x, y) => x - y),
          Array.from({ length: 20 }, (_, i) => i + 1),
        );
      });
    });

    describe('signing keys', () => {
      it('publishes added keys oldest first, with their JWKs as given', async () => {
        const newer = signingKey({ createdAt: T0 + HOUR, alg: 'RS256', publicJwk: { kty: 'RSA', n: 'modulus', e: 'AQAB' } });
        const older = signingKey({ createdAt: T0 });
        await store.keys.add(newer);
        await store.keys.add(older);
        const published = (await store.keys.listPublished(T0 + HOUR)).filter((key) => [older.kid, newer.kid].includes(key.kid));
        assert.deepEqual(published, [older, newer]);
      });

      it('keeps a scheduled key published until its expiry, then leaves it out', async () => {
        const key = signingKey();
        await store.keys.add(key);
        await store.keys.schedule(key.kid, T0 + 2 * HOUR, T0 + 3 * HOUR);
        const scheduled = { ...key, retiresAt: T0 + 2 * HOUR, expiresAt: T0 + 3 * HOUR };
        const publishedAt = async (now: number) => (await store.keys.listPublished(now)).find((published) => published.kid === key.kid);
        assert.deepEqual(await publishedAt(T0 + 2 * HOUR), scheduled);
        assert.deepEqual(await publishedAt(T0 + 3 * HOUR - 1), scheduled);
        assert.equal(await publishedAt(T0 + 3 * HOUR), undefined);
      });

      it('ignores scheduling an unknown key', async () => {
        await store.keys.schedule('no-such-kid', T0, T0);
        assert.equal(
          (await store.keys.listPublished(0)).some((key) => key.kid === 'no-such-kid'),
          false,
        );
      });
    });

    describe('operators: users, sessions and reset links', () => {
      it('updates the profile fields given and updatedAt, leaves the others, and clears one set to null', async () => {
        const user = await givenUser({ name: 'Ada', email: 'ada@example.com' });
        assert.equal(await store.users.update(user.id, { name: 'Ada Lovelace' }, T0 + MINUTE), true);
        assert.deepEqual(await store.users.get(user.id), { ...user, name: 'Ada Lovelace', updatedAt: T0 + MINUTE });
        assert.equal(await store.users.update(user.id, { email: null, emailVerified: false, locale: null }, T0 + 2 * MINUTE), true);
        const cleared = { ...user, name: 'Ada Lovelace', email: null, emailVerified: false, locale: null, updatedAt: T0 + 2 * MINUTE };
        assert.deepEqual(await store.users.get(user.id), cleared);
        const changes = {
          givenName: 'Augusta Ada',
          familyName: 'King',
          emailVerified: true,
          zoneinfo: 'Europe/Paris',
          picture: 'https://example.com/a.png',
          locale: 'fr-FR',
        };
        assert.equal(await store.users.update(user.id, changes, T0 + 3 * MINUTE), true);
        assert.deepEqual(await store.users.get(user.id), { ...cleared, ...changes, updatedAt: T0 + 3 * MINUTE });
        assert.equal(await store.users.update('no-such-user', { name: 'x' }, T0), false);
      });

      it('keeps whether an address is self-asserted, and clears it when the address is verified or replaced, not when it changes case', async () => {
        const asserted = { email: 'ada@example.com', emailVerified: false, emailSelfAsserted: true };
        const [kept, verified, replaced] = [
          await givenUser(asserted),
          await givenUser({ ...asserted, email: 'bea@example.com' }),
          await givenUser({ ...asserted, email: 'cy@example.com' }),
        ];
        assert.deepEqual(await store.users.get(kept.id), kept);
        assert.equal((await givenUser()).emailSelfAsserted, false);
        // Neither another field, nor an unverified address written again, nor the same one in another case changes it.
        await store.users.update(kept.id, { name: 'Ada', emailVerified: false }, T0 + MINUTE);
        await store.users.update(kept.id, { email: 'ADA@Example.com' }, T0 + 2 * MINUTE);
        assert.equal((await store.users.get(kept.id))?.emailSelfAsserted, true);
        await store.users.update(verified.id, { emailVerified: true }, T0 + MINUTE);
        await store.users.update(replaced.id, { email: 'cy@example.org' }, T0 + MINUTE);
        for (const user of [verified, replaced]) assert.equal((await store.users.get(user.id))?.emailSelfAsserted, false, user.email!);
        // Cleared for good: unverified again, it is not the maker's own claim any more.
        await store.users.update(verified.id, { emailVerified: false }, T0 + 2 * MINUTE);
        assert.equal((await store.users.get(verified.id))?.emailSelfAsserted, false);
      });

      it('keeps every standard claim (OIDC Core §5.1), a new user without them at none, and changes, clears and keeps each as given', async () => {
        const bare = newUserRecord({ id: unique('user'), username: unique('bare'), passwordHash: 'x', createdAt: T0 });
        await store.users.create(bare);
        assert.deepEqual(await store.users.get(bare.id), bare);
        assert.deepEqual(
          [bare.middleName, bare.nickname, bare.profile, bare.website, bare.gender, bare.birthdate, bare.phoneNumber, bare.phoneNumberVerified, bare.address],
          [null, null, null, null, null, null, null, false, null],
        );
        const user = await givenUser();
        assert.deepEqual(await store.users.get(user.id), user, 'read back as created');
        const address = { formatted: 'Ockham Park\nSurrey', country: 'GB' };
        const changes = {
          nickname: 'Countess',
          website: null,
          birthdate: '0000-12-10',
          phoneNumber: '+1 (425) 555-1212;ext=5678',
          phoneNumberVerified: false,
          address,
        };
        assert.equal(await store.users.update(user.id, changes, T0 + MINUTE), true);
        assert.deepEqual(await store.users.get(user.id), { ...user, ...changes, updatedAt: T0 + MINUTE });
        assert.equal(await store.users.update(user.id, { address: null, gender: 'diverse' }, T0 + 2 * MINUTE), true);
        assert.deepEqual(await store.users.get(user.id), { ...user, ...changes, address: null, gender: 'diverse', updatedAt: T0 + 2 * MINUTE });
      });

      it('replaces the names in other languages (OIDC Core §5.2) when given, and keeps them when not', async () => {
        const user = await givenUser();
        const names = { 'ja-Hani-JP': { name: '山田 太郎', given_name: '太郎' }, 'zh-Hans': { family_name: '山田' } };
        assert.equal(await store.users.update(user.id, { localizedNames: names }, T0 + MINUTE), true);
        assert.deepEqual((await store.users.get(user.id))?.localizedNames, names);
        assert.equal(await store.users.update(user.id, { name: 'Taro Yamada' }, T0 + 2 * MINUTE), true);
        assert.deepEqual(await store.users.get(user.id), { ...user, name: 'Taro Yamada', localizedNames: names, updatedAt: T0 + 2 * MINUTE });
        assert.equal(await store.users.update(user.id, { localizedNames: {} }, T0 + 3 * MINUTE), true);
        assert.deepEqual((await store.users.get(user.id))?.localizedNames, {});
      });

      it('replaces the password hash, and returns false for an unknown id', async () => {
        const user = await givenUser();
        assert.equal(await store.users.setPasswordHash(user.id, '$argon2id$new'), true);
        assert.equal((await store.users.get(user.id))?.passwordHash, '$argon2id$new');
        assert.equal(await store.users.setPasswordHash('no-such-user', 'x'), false);
      });

      it("ends every session of one user, but the one kept, and no one else's", async () => {
        const [user, other] = [await givenUser(), await givenUser()];
        const [first, second, kept] = [await givenSession(user.id), await givenSession(user.id), await givenSession(user.id)];
        const others = await givenSession(other.id);
        assert.deepEqual(
          (await store.sessions.removeForUser(user.id, kept.idHash)).map((session) => session.idHash).sort(),
          [first.idHash, second.idHash].sort(),
        );
        assert.equal(await store.sessions.get(first.idHash, T0), null);
        assert.equal(await store.sessions.get(second.idHash, T0), null);
        assert.deepEqual(await store.sessions.get(kept.idHash, T0), kept);
        assert.deepEqual(await store.sessions.get(others.idHash, T0), others);
        assert.deepEqual(await store.sessions.removeForUser(user.id), [kept]);
        assert.equal(await store.sessions.get(kept.idHash, T0), null);
      });

      it('removes a user with their grants, codes, refresh tokens, device decisions and sessions, in one transaction', async () => {
        const client = await givenClient();
        const user = await givenUser();
        const grant = await givenGrant(client.id, user.id);
        const code = await givenCode({ clientId: client.id, userId: user.id, grantId: grant.id });
        const refresh = await givenRefreshToken({ clientId: client.id, userId: user.id, grantId: grant.id });
        const device = await givenDevice({ clientId: client.id });
        await store.devices.decide(device, { approve: true, userId: user.id, authTime: T0, grantId: grant.id }, T0);
        const session = await givenSession(user.id);
        await store.passwordResets.create({ tokenHash: unique('reset'), userId: user.id, createdAt: T0, expiresAt: T0 + HOUR, usedAt: null, mailedTo: null });
        const kept = await givenGrant(client.id, (await givenUser()).id);

        await store.transaction(async (tx) => {
          await tx.sessions.removeForUser(user.id);
          await tx.devices.removeForUser(user.id);
          assert.equal(await tx.grants.removeForUser(user.id), 1);
          assert.equal(await tx.users.remove(user.id), true);
        });
        assert.equal(await store.users.get(user.id), null);
        assert.equal(await store.grants.get(grant.id), null);
        assert.equal(await store.codes.find(code.hash), null);
        assert.equal(await store.refreshTokens.find(refresh.hash), null);
        assert.equal(await store.devices.findByUserCode(device.userCode, T0), null);
        assert.equal(await store.sessions.get(session.idHash, T0), null);
        assert.deepEqual(await store.grants.get(kept.id), kept);
        assert.equal(await store.users.remove(user.id), false);
      });

      it('uses a reset link up once: one of two racing callers gets it, and never an expired one', async () => {
        const user = await givenUser();
        const reset = { tokenHash: unique('reset'), userId: user.id, createdAt: T0, expiresAt: T0 + HOUR, usedAt: null, mailedTo: null };
        await store.passwordResets.create(reset);
        assert.deepEqual(await store.passwordResets.find(reset.tokenHash, T0), reset);
        const [a, b] = await Promise.all([store.passwordResets.consume(reset.tokenHash, T0 + 1), store.passwordResets.consume(reset.tokenHash, T0 + 1)]);
        assert.deepEqual(
          [a, b].filter((record) => record !== null),
          [{ ...reset, usedAt: T0 + 1 }],
        );
        assert.equal(await store.passwordResets.find(reset.tokenHash, T0 + 2), null);

        const late = { ...reset, tokenHash: unique('reset') };
        await store.passwordResets.create(late);
        assert.equal(await store.passwordResets.find(late.tokenHash, late.expiresAt), null);
        assert.equal(await store.passwordResets.consume(late.tokenHash, late.expiresAt), null);
      });

      it("keeps the address a reset link was mailed to, as given, and none for an operator's link", async () => {
        const user = await givenUser();
        const mailed = { tokenHash: unique('reset'), userId: user.id, createdAt: T0, expiresAt: T0 + HOUR, usedAt: null, mailedTo: 'Ada@Example.com' };
        const operators = { ...mailed, tokenHash: unique('reset'), mailedTo: null };
        for (const reset of [mailed, operators]) await store.passwordResets.create(reset);
        assert.deepEqual(await store.passwordResets.find(mailed.tokenHash, T0), mailed);
        assert.deepEqual(await store.passwordResets.consume(mailed.tokenHash, T0 + 1), { ...mailed, usedAt: T0 + 1 });
        assert.deepEqual(await store.passwordResets.consume(operators.tokenHash, T0 + 1), { ...operators, usedAt: T0 + 1 });
      });

      it('opens an invitation link until the moment it expires, and once', async () => {
        const invitation = {
          tokenHash: unique('invitation'),
          email: 'invited@example.com',
          role: null,
          clientId: null,
          organizationId: null,
          organizationRole: null,
          createdAt: T0,
          expiresAt: T0 + HOUR,
          usedAt: null,
        };
        await store.invitations.create(invitation);
        assert.deepEqual(await store.invitations.find(invitation.tokenHash, invitation.expiresAt - 1), invitation);
        assert.equal(await store.invitations.find(invitation.tokenHash, invitation.expiresAt), null, 'expired at its expiresAt');
        assert.equal(await store.invitations.consume(invitation.tokenHash, invitation.expiresAt), null);
        assert.deepEqual(await store.invitations.consume(invitation.tokenHash, T0 + 1), { ...invitation, usedAt: T0 + 1 });
        assert.equal(await store.invitations.find(invitation.tokenHash, T0 + 2), null, 'used once');
      });

      it("spends every unused reset link of a user at once, and no one else's", async () => {
        const user = await givenUser();
        const other = await givenUser();
        const link = (userId: string) => ({ tokenHash: unique('reset'), userId, createdAt: T0, expiresAt: T0 + HOUR, usedAt: null, mailedTo: null });
        const [first, second, others] = [link(user.id), link(user.id), link(other.id)];
        for (const reset of [first, second, others]) await store.passwordResets.create(reset);
        await store.passwordResets.spendAllForUser(user.id, T0 + 1);
        assert.equal(await store.passwordResets.find(first.tokenHash, T0 + 2), null);
        assert.equal(await store.passwordResets.consume(second.tokenHash, T0 + 2), null);
        assert.deepEqual(await store.passwordResets.find(others.tokenHash, T0 + 2), others);
      });

      it('counts the device requests still waiting for a decision', async () => {
        const at = Date.UTC(2031, 0, 1);
        const before = await store.devices.countPending(at);
        const device = await givenDevice({ createdAt: at, expiresAt: at + 10 * MINUTE });
        await givenDevice({ createdAt: at - HOUR, expiresAt: at - 1 });
        assert.equal(await store.devices.countPending(at), before + 1);
        await store.devices.decide(device, { approve: false }, at);
        assert.equal(await store.devices.countPending(at), before);
      });
    });

    describe('events', () => {
      const event = (overrides: Partial<AuditEvent>): AuditEvent => auditEvent({ id: unique('event'), type: 'signin.succeeded', at: T0, ...overrides });

      it('returns stored events with every field, newest first, filtered by user, username, client, type and time', async () => {
        const [userId, clientId] = [unique('user-id'), unique('client-id')];
        const signIn = event({ userId, username: 'alice', ip: '192.0.2.1', userAgent: 'Firefox', at: T0 + 1 });
        const consent = event({
          type: 'consent.given',
          userId,
          clientId,
          grantId: unique('grant'),
          at: T0 + 2,
          detail: { scope: 'openid', n: 1, ok: true, none: null },
        });
        const failed = event({ type: 'signin.failed', username: 'alice', at: T0 + 3, detail: { reason: 'unknown_user' } });
        const other = event({ type: 'consent.given', userId: unique('user-id'), clientId, at: T0 + 4 });
        for (const stored of [signIn, consent, failed, other]) await store.events.add(stored);

        assert.deepEqual(await store.events.list({ userId, limit: 10 }), [consent, signIn]);
        assert.deepEqual(await store.events.list({ userId, username: 'alice', limit: 10 }), [failed, consent, signIn]);
        assert.deepEqual(await store.events.list({ username: 'alice', limit: 10 }), [failed, signIn], 'by the username recorded alone');
        assert.deepEqual(await store.events.list({ clientId, limit: 10 }), [other, consent]);
        assert.deepEqual(await store.events.list({ clientId, type: 'consent.given', since: T0 + 3, limit: 10 }), [other]);
        assert.deepEqual(await store.events.list({ userId, limit: 1 }), [consent]);
      });

      it('pages after an event, newest first, through events of the same millisecond in id order', async () => {
        const [clientId, page] = [unique('client-id'), unique('page')];
        const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((suffix, i) => event({ id: `${page}-${suffix}`, clientId, at: T0 + (i < 3 ? 10 : 11) }));
        for (const stored of [a!, b!, c!, d!]) await store.events.add(stored);
        const first = await store.events.list({ clientId, limit: 2 });
        assert.deepEqual(first, [d, c]);
        const second = await store.events.list({ clientId, limit: 2, before: { at: first[1]!.at, id: first[1]!.id } });
        assert.deepEqual(second, [b, a]);
        assert.deepEqual(await store.events.list({ clientId, limit: 2, before: { at: a!.at, id: a!.id } }), []);
      });

      it('counts events by type from a time on', async () => {
        // Far from every other case's events, so that only these are counted.
        const from = Date.UTC(2090, 0, 1);
        for (const [type, at] of [
          ['signin.succeeded', from - 1],
          ['signin.succeeded', from],
          ['signin.succeeded', from + 5],
          ['signin.failed', from + 1],
          ['device.started', from + 2],
        ] as const) {
          await store.events.add(event({ type, at }));
        }
        assert.deepEqual(
          await store.events.countByType(from),
          new Map([
            ['signin.succeeded', 2],
            ['signin.failed', 1],
            ['device.started', 1],
          ]),
        );
        assert.deepEqual(await store.events.countByType(from + 3), new Map([['signin.succeeded', 1]]));
        assert.deepEqual(await store.events.countByType(from + 6), new Map());
      });

      it('purges events older than their own cutoff, only when one is given', async () => {
        const start = Date.UTC(2002, 0, 1);
        const userId = unique('user-id');
        const [old, recent] = [event({ userId, at: start - 1 }), event({ userId, at: start })];
        await store.events.add(old);
        await store.events.add(recent);
        await store.purgeExpired(start);
        assert.equal((await store.events.list({ userId, limit: 10 })).length, 2, 'not without eventsBefore');
        assert.equal(await store.purgeExpired(start - 10 * 365 * 24 * HOUR, { eventsBefore: start }), 1);
        assert.deepEqual(await store.events.list({ userId, limit: 10 }), [recent]);
      });
    });
    secondFactorContract({ store: () => store, unique, givenUser, givenClient, givenGrant });
    identityProvidersContract({ store: () => store, unique, givenUser });
    webhooksContract({ store: () => store, unique });
    mailContract({ store: () => store, unique });
    ssfContract({ store: () => store, unique, givenClient: () => givenClient() });
    samlContract({ store: () => store, unique });
    scimContract({ store: () => store, unique, givenUser });
    scimSearchContract({ store: () => store, unique, givenUser });
    trustedIssuersContract({ store: () => store, unique });
    organizationsContract({ store: () => store, unique, givenUser: () => givenUser(), givenClient: () => givenClient() });

    describe('purgeExpired', () => {
      it('deletes codes, device records, sessions and rate-limit windows that expired before the cutoff, and nothing else', async () => {
        const start = Date.UTC(2001, 0, 1);
        const cutoff = start + HOUR;
        const expired = { expiresAt: cutoff - 1 };
        const atCutoff = { expiresAt: cutoff };

        const client = await givenClient({ createdAt: start });
        const user = await givenUser({ createdAt: start });
        const grant = await givenGrant(client.id, user.id, { createdAt: start });
        const code = { clientId: client.id, userId: user.id, grantId: grant.id, createdAt: start };
        const [codeGone, codeKept] = [await givenCode({ ...code, ...expired }), await givenCode({ ...code, ...atCutoff })];
        const device = { clientId: client.id, createdAt: start };
        const [deviceGone, deviceKept] = [await givenDevice({ ...device, ...expired }), await givenDevice({ ...device, ...atCutoff })];
        const session = { createdAt: start };
        const [sessionGone, sessionKept] = [await givenSession(user.id, { ...session, ...expired }), await givenSession(user.id, { ...session, ...atCutoff })];
        const [windowGone, windowKept] = [unique('key'), unique('key')];
        await store.rateLimits.hit(windowGone, HOUR, start - 1);
        await store.rateLimits.hit(windowKept, HOUR, start);
        const key = signingKey({ createdAt: start, expiresAt: start + 1 });
        await store.keys.add(key);

        assert.equal(await store.purgeExpired(cutoff), 5);

        assert.equal(await store.codes.find(codeGone.hash), null);
        assert.deepEqual(await store.codes.find(codeKept.hash), codeKept);
        assert.equal(await store.devices.poll(deviceGone.deviceCodeHash, client.id, start), null);
        assert.deepEqual(await store.devices.findByUserCode(deviceKept.userCode, start), deviceKept);
        assert.equal(await store.sessions.get(sessionGone.idHash, start), null);
        assert.deepEqual(await store.sessions.get(sessionKept.idHash, start), sessionKept);
        assert.equal(await store.rateLimits.count(windowGone, HOUR, start), 0);
        assert.equal(await store.rateLimits.count(windowKept, HOUR, start), 1);
        // A key that left the JWKS before the cutoff goes too.
        assert.ok(!(await store.keys.listPublished(start)).some((published) => published.kid === key.kid));
        // Clients and users are not purged, nor grants without a cutoff of their own.
        assert.deepEqual(await store.clients.get(client.id), client);
        assert.deepEqual(await store.users.get(user.id), user);
        assert.deepEqual(await store.grants.get(grant.id), grant);
        // Everything left expires later than any cutoff a previous purge could have used.
        assert.equal(await store.purgeExpired(cutoff), 0);
      });

      it('deletes, given a grant cutoff, grants revoked, spent or never used before it, with their codes and refresh tokens, and nothing else', async () => {
        // Earlier than any other case's records: the store is shared, and the count is exact.
        const start = Date.UTC(1975, 0, 1);
        const cutoff = start + 7 * 24 * HOUR;
        const client = await givenClient({ createdAt: start });
        const user = await givenUser({ createdAt: start });
        const grant = (overrides: Partial<GrantRecord>) => givenGrant(client.id, user.id, { createdAt: start, ...overrides });
        const revokedGone = await grant({ revokedAt: cutoff - 1 });
        const revokedKept = await grant({ revokedAt: cutoff });
        const spentGone = await grant({});
        await store.grants.recordUse(spentGone.id, start, cutoff - 1);
        const spentKept = await grant({});
        await store.grants.recordUse(spentKept.id, start, cutoff);
        const unusedGone = await grant({ createdAt: cutoff - 1 });
        const unusedKept = await grant({ createdAt: cutoff });
        // Under a purged grant: a code and a refresh token that live on past the cutoff.
        const code = await givenCode({ clientId: client.id, userId: user.id, grantId: revokedGone.id, expiresAt: cutoff + HOUR });
        const token = await givenRefreshToken({ clientId: client.id, userId: user.id, grantId: spentGone.id, expiresAt: cutoff + HOUR });

        assert.equal(await store.purgeExpired(start - HOUR, { grantsBefore: cutoff }), 3);
        for (const gone of [revokedGone, spentGone, unusedGone]) assert.equal(await store.grants.get(gone.id), null);
        for (const kept of [revokedKept, spentKept, unusedKept]) assert.ok(await store.grants.get(kept.id));
        assert.equal(await store.codes.find(code.hash), null);
        assert.equal(await store.refreshTokens.find(token.hash), null);
        assert.equal(await store.purgeExpired(start - HOUR, { grantsBefore: cutoff }), 0);
      });

      it('keeps a live remembered grant past the grant cutoff, spent or never used, until it is revoked', async () => {
        // Earlier than any other case's records, as above, so that the counts are exact.
        const start = Date.UTC(1974, 0, 1);
        const cutoff = start + 7 * 24 * HOUR;
        const user = await givenUser({ createdAt: start });
        const remembered = async () => {
          const client = await givenClient({ createdAt: start });
          return store.grants.remember({ id: unique('grant'), userId: user.id, clientId: client.id, scope: ['openid'], authTime: start }, start);
        };
        // The person's consent: its tokens expired long ago, or it never issued any.
        const spent = await remembered();
        await store.grants.recordUse(spent.id, start, cutoff - 1);
        const unused = await remembered();
        assert.equal(await store.purgeExpired(start - HOUR, { grantsBefore: cutoff }), 0);
        assert.ok(await store.grants.get(spent.id));
        assert.ok(await store.grants.get(unused.id));
        // Revoked (the account page), it goes like any other.
        assert.equal(await store.grants.revoke(spent.id, cutoff - 1), true);
        assert.equal(await store.purgeExpired(start - HOUR, { grantsBefore: cutoff }), 1);
        assert.equal(await store.grants.get(spent.id), null);
        assert.ok(await store.grants.get(unused.id));
      });

      it(`deletes more expired rows than one batch of ${PURGE_BATCH_SIZE} holds`, async () => {
        const start = Date.UTC(1990, 0, 1);
        const user = await givenUser({ createdAt: start });
        const total = PURGE_BATCH_SIZE * 2 + 7;
        const sessions = Array.from({ length: total }, (_, i) => ({
          idHash: unique('session-hash'),
          sid: unique('sid'),
          userId: user.id,
          authTime: start,
          createdAt: start,
          expiresAt: start + i,
          ip: null,
          userAgent: null,
        }));
        for (let i = 0; i < total; i += 100) {
          await Promise.all(sessions.slice(i, i + 100).map((session) => store.sessions.create(session)));
        }
        assert.equal(await store.purgeExpired(start + HOUR), total);
        for (const session of [sessions.at(0)!, sessions.at(-1)!]) assert.equal(await store.sessions.get(session.idHash, start - 1), null);
      });

      it('deletes refresh tokens and revoked access-token ids that expired before the cutoff, rotated or not, and nothing else', async () => {
        const start = Date.UTC(1995, 0, 1);
        const cutoff = start + HOUR;
        const client = await givenClient({ createdAt: start });
        const user = await givenUser({ createdAt: start });
        const grant = await givenGrant(client.id, user.id, { createdAt: start });
        const token = { clientId: client.id, userId: user.id, grantId: grant.id, createdAt: start };
        const gone = await givenRefreshToken({ ...token, expiresAt: cutoff - 1 });
        const rotatedGone = await givenRefreshToken({ ...token, expiresAt: cutoff - 1, rotatedAt: start });
        const kept = await givenRefreshToken({ ...token, expiresAt: cutoff });
        const rotatedKept = await givenRefreshToken({ ...token, expiresAt: cutoff, rotatedAt: start });
        const [jtiGone, jtiKept] = [unique('jti'), unique('jti')];
        await store.accessTokens.revoke(jtiGone, cutoff - 1);
        await store.accessTokens.revoke(jtiKept, cutoff);
        const [assertionGone, assertionKept] = [unique('assertion'), unique('assertion')];
        await store.clientAssertions.use(assertionGone, cutoff - 1, start);
        await store.clientAssertions.use(assertionKept, cutoff, start);

        assert.equal(await store.purgeExpired(cutoff), 4);
        assert.equal(await store.clientAssertions.use(assertionGone, cutoff + HOUR, start), true, 'purged: free again');
        assert.equal(await store.clientAssertions.use(assertionKept, cutoff + HOUR, start), false, 'kept');

        assert.equal(await store.refreshTokens.find(gone.hash), null);
        assert.equal(await store.refreshTokens.find(rotatedGone.hash), null);
        assert.deepEqual(await store.refreshTokens.find(kept.hash), kept);
        assert.deepEqual(await store.refreshTokens.find(rotatedKept.hash), rotatedKept);
        assert.equal(await store.accessTokens.isRevoked(jtiGone), false);
        assert.equal(await store.accessTokens.isRevoked(jtiKept), true);
        assert.deepEqual(await store.grants.get(grant.id), grant);
      });
    });

    describe('purgeExpired, DPoP proofs and pushed requests', () => {
      it('deletes proofs and pushed requests that expired before the cutoff, and nothing else', async () => {
        const start = Date.UTC(2000, 0, 1);
        const cutoff = start + HOUR;
        // Whatever earlier cases left expired by then goes first, so the count is of these rows.
        await store.purgeExpired(cutoff);
        const client = await givenClient({ createdAt: start });
        await store.dpopProofs.use('purged-proof', cutoff - 1, start);
        await store.dpopProofs.use('kept-proof', cutoff, start);
        const pushed = (hash: string, expiresAt: number) =>
          store.pushedRequests.create({ hash, clientId: client.id, params: {}, createdAt: start, expiresAt, claimedAt: null, browser: null, decidedAt: null });
        await pushed('purged-request', cutoff - 1);
        await pushed('kept-request', cutoff);
        assert.equal(await store.purgeExpired(cutoff), 2);
        assert.equal(await store.pushedRequests.find('purged-request'), null);
        assert.ok(await store.pushedRequests.find('kept-request'));
        assert.equal(await store.dpopProofs.use('purged-proof', cutoff + HOUR, start), true, 'its record is gone');
        assert.equal(await store.dpopProofs.use('kept-proof', cutoff + HOUR, start), false);
      });
    });

    describe('self-registration (RFC 7591, RFC 7592, metadata documents)', () => {
      it('keeps who registered a client and whether it is verified, and an update changes only the latter', async () => {
        const client = await givenClient({ registeredBy: 'dynamic' });
        assert.deepEqual(await store.clients.get(client.id), { ...client, version: 1, tokensRevokedAt: null });
        const { id: _id, createdAt: _createdAt, registeredBy: _by, ...changes } = client;
        const updated = await store.clients.update(client.id, { ...changes, verified: true });
        assert.deepEqual([updated?.registeredBy, updated?.verified], ['dynamic', true]);
        const own = await givenClient();
        const read = await store.clients.get(own.id);
        assert.deepEqual([read?.registeredBy, read?.verified], [undefined, undefined], "the operator's, not verified: absent");
      });

      it("lists the operator's own clients apart from the self-registered ones", async () => {
        const own = await givenClient();
        const registered = await givenClient({ registeredBy: 'metadata_document' });
        const listed = await store.clients.listOperatorClients();
        assert.deepEqual(
          listed.find((client) => client.id === own.id),
          own,
        );
        assert.equal(
          listed.some((client) => client.id === registered.id),
          false,
        );
        assert.ok(listed.every((client) => client.registeredBy === undefined));
      });

      it('marks a self-registered client used once, and purges those made before the cutoff and never used, with what was issued to them', async () => {
        const start = Date.UTC(2001, 0, 1);
        const cutoff = start + HOUR;
        const unused = await givenClient({ registeredBy: 'dynamic', createdAt: start });
        const used = await givenClient({ registeredBy: 'metadata_document', createdAt: start });
        const approved = await givenClient({ registeredBy: 'dynamic', createdAt: start });
        const recent = await givenClient({ registeredBy: 'dynamic', createdAt: cutoff });
        const own = await givenClient({ createdAt: start });
        await store.registrationTokens.set(unused.id, 'unused-token', start);
        await store.clients.markUsed(used.id, start + 5);
        await store.clients.markUsed(used.id, start + 9);
        assert.equal((await store.clients.get(used.id))?.usedAt, start + 5, 'the first use stays');
        await store.clients.markUsed(own.id, start + 5);
        assert.equal((await store.clients.get(own.id))?.usedAt, undefined, "the operator's clients are not marked");
        // A grant whose mark is not written (yet): the client is kept all the same.
        await givenGrant(approved.id, (await givenUser()).id);
        await store.purgeExpired(start, { unusedClientsBefore: cutoff });
        assert.equal(await store.clients.get(unused.id), null);
        assert.equal(await store.registrationTokens.get(unused.id), null, 'its registration access token went with it');
        for (const kept of [used, approved, recent, own]) assert.ok(await store.clients.get(kept.id), kept.id);
      });

      it('rotates a registration access token once: of two rotations from the same token, one wins', async () => {
        const client = await givenClient({ registeredBy: 'dynamic' });
        assert.equal(await store.registrationTokens.get(client.id), null);
        await store.registrationTokens.set(client.id, 'hash-1', T0);
        assert.equal(await store.registrationTokens.get(client.id), 'hash-1');
        const results = await Promise.all(['hash-2', 'hash-3'].map((next) => store.registrationTokens.rotate(client.id, 'hash-1', next, T0 + SECOND)));
        assert.deepEqual([...results].sort(), [false, true]);
        assert.ok(['hash-2', 'hash-3'].includes((await store.registrationTokens.get(client.id))!));
        assert.equal(await store.registrationTokens.rotate(client.id, 'hash-1', 'hash-4', T0), false, 'the old token rotates nothing');
        await store.clients.remove(client.id);
        assert.equal(await store.registrationTokens.get(client.id), null, 'removed with its client');
      });

      it('spends an initial access token up to its uses and not after it expires, gives a use back, and lists the live ones', async () => {
        const token = { id: unique('iat'), tokenHash: unique('iat-hash'), createdAt: T0, expiresAt: T0 + HOUR, maxUses: 2, uses: 0 };
        await store.initialAccessTokens.create(token);
        const spent = await Promise.all([1, 2, 3].map(() => store.initialAccessTokens.use(token.tokenHash, T0 + SECOND)));
        assert.equal(spent.filter((result) => result !== null).length, 2, 'two uses, among three concurrent tries');
        await store.initialAccessTokens.refund(token.id);
        assert.deepEqual(await store.initialAccessTokens.use(token.tokenHash, T0 + SECOND), { ...token, uses: 2 });
        const unlimited = { ...token, id: unique('iat'), tokenHash: unique('iat-hash'), maxUses: null };
        await store.initialAccessTokens.create(unlimited);
        assert.equal(await store.initialAccessTokens.use(unlimited.tokenHash, T0 + HOUR), null, 'expired at its expiry');
        assert.ok((await store.initialAccessTokens.list(T0)).some((listed) => listed.id === unlimited.id));
        assert.ok(!(await store.initialAccessTokens.list(T0 + HOUR)).some((listed) => listed.id === unlimited.id));
        assert.equal(await store.initialAccessTokens.remove(unlimited.id), true);
        assert.equal(await store.initialAccessTokens.remove(unlimited.id), false);
      });

      it('caches a metadata document or its refusal by URL until it expires, the later replacing the earlier', async () => {
        const url = `https://${unique('app')}.example/client.json`;
        assert.equal(await store.metadataDocuments.get(url, T0), null);
        const refusal = { url, document: null, problem: 'too large', fetchedAt: T0, expiresAt: T0 + MINUTE };
        await store.metadataDocuments.put(refusal);
        assert.deepEqual(await store.metadataDocuments.get(url, T0 + SECOND), refusal);
        assert.equal(await store.metadataDocuments.get(url, T0 + MINUTE), null);
        const taken = {
          url,
          document: { client_id: url, redirect_uris: ['https://app.example/cb'] },
          problem: null,
          fetchedAt: T0 + MINUTE,
          expiresAt: T0 + HOUR,
        };
        await store.metadataDocuments.put(taken);
        assert.deepEqual(await store.metadataDocuments.get(url, T0 + MINUTE), taken);
      });
    });

    describe('resources (RFC 8707)', () => {
      const resource = (overrides: Partial<ResourceRecord> = {}): ResourceRecord => {
        const id = unique('api');
        return {
          identifier: `https://${id}.example/`,
          name: `API ${id}`,
          scopes: [
            { name: `${id}:read`, description: 'See your things' },
            { name: `${id}:write`, description: 'Change your things' },
          ],
          accessTokenTtl: 600,
          introspectionSecretHash: `hash-${id}`,
          signingAlg: 'ES256',
          createdAt: T0,
          ...overrides,
        };
      };
      const register = (record: ResourceRecord) => store.transaction((tx) => tx.resources.create(record));

      it('gives each list asked for in one turn what was registered before it, in an array of its own (PostgreSQL reads them once)', async () => {
        const api = resource();
        await register(api);
        const lists = await Promise.all([store.resources.list(), store.resources.list(), store.resources.list()]);
        for (const list of lists) assert.ok(list.some((each) => each.identifier === api.identifier));
        lists[0]!.length = 0;
        assert.ok(lists[1]!.some((each) => each.identifier === api.identifier));
        const later = resource();
        await register(later);
        assert.ok((await store.resources.list()).some((each) => each.identifier === later.identifier));
      });

      it('stores a resource with its scopes in order, and reads it back by identifier and in the list', async () => {
        const api = resource();
        const other = resource({ accessTokenTtl: null, introspectionSecretHash: null, signingAlg: 'RS256', scopes: [], createdAt: T0 + 1 });
        await register(api);
        await register(other);
        assert.deepEqual(await store.resources.get(api.identifier), api);
        assert.deepEqual(await store.resources.get(other.identifier), other);
        const listed = await store.resources.list();
        assert.deepEqual(
          listed.filter((item) => item.identifier === api.identifier || item.identifier === other.identifier),
          [api, other],
        );
        assert.equal(await store.resources.get('https://unknown.example/'), null);
      });

      it('refuses a taken identifier with DuplicateError, keeping the first', async () => {
        const api = resource();
        await register(api);
        await assert.rejects(register({ ...resource(), identifier: api.identifier }), DuplicateError);
        assert.deepEqual(await store.resources.get(api.identifier), api);
      });

      it('refuses a scope name another resource holds with DuplicateError, storing nothing of the second', async () => {
        const api = resource();
        await register(api);
        const second = resource();
        const clash = { ...second, scopes: [second.scopes[0]!, { name: api.scopes[1]!.name, description: 'Mine too' }] };
        await assert.rejects(register(clash), DuplicateError);
        assert.equal(await store.resources.get(clash.identifier), null);
        assert.deepEqual(await store.resources.get(api.identifier), api);
        // Nothing of the refused resource remains: its first scope name is still free.
        await register(second);
        assert.deepEqual(await store.resources.get(second.identifier), second);
      });

      it('changes the signing algorithm of a resource, and returns false for an unknown one', async () => {
        const api = resource({ signingAlg: 'RS256' });
        await register(api);
        assert.equal(await store.resources.update(api.identifier, { signingAlg: 'ES256' }), true);
        assert.deepEqual(await store.resources.get(api.identifier), { ...api, signingAlg: 'ES256' });
        assert.equal(await store.resources.update(api.identifier, {}), true);
        assert.deepEqual(await store.resources.get(api.identifier), { ...api, signingAlg: 'ES256' });
        assert.equal(await store.resources.update('https://unknown.example/', { signingAlg: 'RS256' }), false);
      });

      it('changes the name, token lifetime and scopes of a resource; a scope name another resource holds is refused', async () => {
        const api = resource();
        await register(api);
        const scopes = [
          { name: api.scopes[1]!.name, description: 'Change things' },
          { name: `${api.scopes[0]!.name}-new`, description: 'New' },
        ];
        assert.equal(await store.transaction((tx) => tx.resources.update(api.identifier, { name: 'Renamed', accessTokenTtl: null, scopes })), true);
        assert.deepEqual(await store.resources.get(api.identifier), { ...api, name: 'Renamed', accessTokenTtl: null, scopes });
        // The dropped name is free again.
        const taker = resource({ scopes: [{ name: api.scopes[0]!.name, description: 'Mine now' }] });
        await register(taker);
        await assert.rejects(
          store.transaction((tx) => tx.resources.update(api.identifier, { name: 'Again', scopes: [...scopes, taker.scopes[0]!] })),
          DuplicateError,
        );
        assert.deepEqual(
          await store.resources.get(api.identifier),
          { ...api, name: 'Renamed', accessTokenTtl: null, scopes },
          'the transaction took nothing of it',
        );
        assert.equal(await store.transaction((tx) => tx.resources.update('https://unknown.example/', { scopes })), false);
      });

      it('takes the scope names an update drops, and only those, out of every grant, the rest in order', async () => {
        const api = resource();
        await register(api);
        const [read, write] = api.scopes.map((scope) => scope.name);
        const client = await givenClient();
        const user = await givenUser();
        const holding = await givenGrant(client.id, user.id, { scope: ['openid', read!, 'profile', write!] });
        const untouched = await givenGrant(client.id, user.id, { scope: ['openid', write!] });
        assert.equal(await store.transaction((tx) => tx.resources.update(api.identifier, { name: 'Renamed' })), true);
        assert.deepEqual(await store.grants.get(holding.id), holding, 'no scopes given: nothing dropped');
        assert.equal(await store.transaction((tx) => tx.resources.update(api.identifier, { scopes: [api.scopes[1]!] })), true);
        assert.deepEqual(await store.grants.get(holding.id), { ...holding, scope: ['openid', 'profile', write!] });
        assert.deepEqual(await store.grants.get(untouched.id), untouched);
      });

      it('removes a resource with its scopes once, freeing its scope names', async () => {
        const api = resource();
        await register(api);
        const [read, write] = api.scopes.map((scope) => scope.name);
        // Its scope names, and only those, leave grants and clients' registrations, the rest in order.
        const client = await givenClient({ scopes: ['openid', read!, 'profile', write!, 'offline_access'] });
        const other = await givenClient();
        const user = await givenUser();
        const holding = await givenGrant(client.id, user.id, { scope: ['openid', write!, 'profile', read!], revokedAt: T0 + 1 });
        const untouched = await givenGrant(client.id, user.id, { scope: ['openid', `${read}-not-it`] });
        assert.equal(await store.transaction((tx) => tx.resources.remove(api.identifier)), true);
        assert.deepEqual(await store.grants.get(holding.id), { ...holding, scope: ['openid', 'profile'] });
        assert.deepEqual(await store.grants.get(untouched.id), untouched);
        assert.deepEqual(await store.clients.get(client.id), { ...client, scopes: ['openid', 'profile', 'offline_access'], version: 2 });
        assert.deepEqual(await store.clients.get(other.id), other);
        assert.equal(await store.resources.remove(api.identifier), false);
        assert.equal(await store.resources.get(api.identifier), null);
        assert.ok(!(await store.resources.list()).some((item) => item.identifier === api.identifier));
        const again = { ...resource(), scopes: api.scopes };
        await register(again);
        assert.deepEqual(await store.resources.get(again.identifier), again);
      });
    });

    describe('refused writes, alike on every store', () => {
      it('refuses a grant, code, session or refresh token whose key is taken with DuplicateError, keeping the first', async () => {
        const code = await givenCode();
        const grant = await store.grants.get(code.grantId);
        assert.ok(grant);
        const token = await givenRefreshToken();
        const session = await givenSession(code.userId);
        await assert.rejects(store.grants.create({ ...grant, scope: ['email'] }), DuplicateError);
        await assert.rejects(store.codes.create({ ...code, redirectUri: 'https://evil.example/' }), DuplicateError);
        await assert.rejects(store.refreshTokens.create({ ...token, expiresAt: T0 + 2 * HOUR }), DuplicateError);
        await assert.rejects(store.sessions.create({ ...session, expiresAt: T0 + 2 * HOUR }), DuplicateError);
        assert.deepEqual(await store.grants.get(grant.id), grant);
        assert.deepEqual(await store.codes.find(code.hash), code);
        assert.deepEqual(await store.refreshTokens.find(token.hash), token);
        assert.deepEqual(await store.sessions.get(session.idHash, T0), session);
      });

      it('refuses a record that names an unknown client, user or grant with MissingReferenceError, storing nothing', async () => {
        const code = await givenCode();
        const orphan = { ...code, hash: unique('code-hash') };
        await assert.rejects(store.codes.create({ ...orphan, grantId: 'no-such-grant' }), MissingReferenceError);
        await assert.rejects(store.codes.create({ ...orphan, clientId: 'no-such-client' }), MissingReferenceError);
        await assert.rejects(store.codes.create({ ...orphan, userId: 'no-such-user' }), MissingReferenceError);
        const session = {
          idHash: unique('session-hash'),
          sid: unique('sid'),
          userId: 'no-such-user',
          authTime: T0,
          createdAt: T0,
          expiresAt: T0 + HOUR,
          ip: null,
          userAgent: null,
        };
        await assert.rejects(store.sessions.create(session), MissingReferenceError);
        assert.equal(await store.codes.find(orphan.hash), null);
      });
    });

    describe('transaction', () => {
      /** A grant and a code under it, for a new client and user, not yet stored. */
      async function unstoredGrantAndCode(): Promise<{ grant: GrantRecord; code: AuthorizationCodeRecord }> {
        const [client, user] = [await givenClient(), await givenUser()];
        const grant: GrantRecord = {
          id: unique('grant'),
          userId: user.id,
          clientId: client.id,
          scope: ['openid'],
          kind: GRANT_AUTHORIZATION_CODE,
          authTime: T0,
          createdAt: T0,
          revokedAt: null,
          device: null,
          remembered: false,
          renewedAt: null,
          lastUsedAt: null,
          activeUntil: null,
        };
        const code: AuthorizationCodeRecord = {
          hash: unique('code-hash'),
          clientId: client.id,
          userId: user.id,
          grantId: grant.id,
          redirectUri: 'https://app.example/callback',
          scope: ['openid'],
          nonce: null,
          codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
          sid: null,
          authTime: T0,
          createdAt: T0,
          expiresAt: T0 + MINUTE,
          consumedAt: null,
          dpopJkt: null,
          idTokenClaims: [],
        };
        return { grant, code };
      }

      it('commits both writes when the work returns, and answers what it returned', async () => {
        const { grant, code } = await unstoredGrantAndCode();
        const result = await store.transaction(async (tx) => {
          await tx.grants.create(grant);
          await tx.codes.create(code);
          return 'approved';
        });
        assert.equal(result, 'approved');
        assert.deepEqual(await store.grants.get(grant.id), grant);
        assert.deepEqual(await store.codes.find(code.hash), code);
      });

      it('shows the work its own writes before they are committed', async () => {
        const { grant, code } = await unstoredGrantAndCode();
        await store.transaction(async (tx) => {
          await tx.grants.create(grant);
          assert.deepEqual(await tx.grants.get(grant.id), grant);
          await tx.codes.create(code);
          assert.deepEqual(await tx.codes.consume(code.hash, bindingOf(code), T0 + 1), { ...code, consumedAt: T0 + 1 });
        });
        assert.deepEqual(await store.codes.find(code.hash), { ...code, consumedAt: T0 + 1 });
      });

      it('keeps neither write when the work throws, and rethrows its error', async () => {
        const { grant, code } = await unstoredGrantAndCode();
        const failure = new Error('the approval failed');
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.grants.create(grant);
            await tx.codes.create(code);
            throw failure;
          }),
          (error) => error === failure,
        );
        assert.equal(await store.grants.get(grant.id), null);
        assert.equal(await store.codes.find(code.hash), null);
      });

      it('undoes the first write when the second fails', async () => {
        const { grant, code } = await unstoredGrantAndCode();
        const taken = await givenCode();
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.grants.create(grant);
            await tx.codes.create({ ...code, hash: taken.hash });
          }),
        );
        assert.equal(await store.grants.get(grant.id), null);
        assert.deepEqual(await store.codes.find(taken.hash), taken);
      });

      it('neither undoes nor loses the writes other callers make while it is open', async () => {
        const { grant, code } = await unstoredGrantAndCode();
        const other = { ...grant, id: unique('grant') };
        let outside: Promise<void> | undefined;
        const failure = new Error('the approval failed');
        await assert.rejects(
          store.transaction(async (tx) => {
            await tx.grants.create(grant);
            // Another request's write, made while this transaction is open.
            outside = store.grants.create(other);
            await tx.codes.create(code);
            throw failure;
          }),
          (error) => error === failure,
        );
        await outside;
        assert.equal(await store.grants.get(grant.id), null);
        assert.deepEqual(await store.grants.get(other.id), other);
      });

      it('runs concurrent transactions each whole', async () => {
        const pairs = await Promise.all(Array.from({ length: 10 }, () => unstoredGrantAndCode()));
        const results = await Promise.allSettled(
          pairs.map(({ grant, code }, i) =>
            store.transaction(async (tx) => {
              await tx.grants.create(grant);
              await tx.codes.create(code);
              if (i % 2 === 1) throw new Error('abandoned');
            }),
          ),
        );
        assert.deepEqual(
          results.map((result) => result.status),
          pairs.map((_, i) => (i % 2 === 1 ? 'rejected' : 'fulfilled')),
        );
        for (const [i, { grant, code }] of pairs.entries()) {
          assert.deepEqual(await store.grants.get(grant.id), i % 2 === 1 ? null : grant);
          assert.deepEqual(await store.codes.find(code.hash), i % 2 === 1 ? null : code);
        }
      });
    });
  });
}
