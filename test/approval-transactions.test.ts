/**
 * Writes that belong together stand or fall together: when the process dies between the
 * two (here, the second write fails inside the transaction), neither remains. Run
 * against every store under test.
 */

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../src/config/index.ts';
import { ManualClock } from '../src/core/clock.ts';
import { Events, type AuditEvent } from '../src/core/events.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN } from '../src/core/protocol.ts';
import { approveAuthorization } from '../src/flows/authorization-code/approve.ts';
import { decideDeviceRequest } from '../src/flows/device/verification.ts';
import type { FlowDeps } from '../src/flows/types.ts';
import { openStore } from '../src/store/open.ts';
import { newUserRecord, type ClientRecord, type SessionRecord, type Store, type Stores, type UserRecord } from '../src/store/types.ts';
import { TokenIssuer } from '../src/tokens/issue.ts';
import { KeyManager } from '../src/tokens/keys.ts';
import { storesUnderTest } from './helpers/device.ts';
import { pendingDevice, clientRecord } from './store/fixtures.ts';

const T0 = Date.UTC(2026, 0, 1);

/** The store, with `crash` applied to the handle every transaction is given. */
function crashing(store: Store, crash: (tx: Stores) => Stores): Store {
  return { ...store, transaction: (work) => store.transaction((tx) => work(crash(tx))) };
}

const died = (): never => {
  throw new Error('the process died here');
};

for (const { name, skip, fresh } of storesUnderTest()) {
  describe(`writes that belong together (${name})`, { skip }, () => {
    const clock = new ManualClock(T0);
    const config = loadConfig({});
    let store: Store;
    let keys: KeyManager;
    let tokens: TokenIssuer;
    let drop: () => Promise<void> = async () => {};
    let users = 0;

    before(async () => {
      const database = await fresh();
      drop = database.drop;
      store = await openStore(database.database ?? ':memory:');
      keys = new KeyManager(store.keys, clock, { leadTimeSeconds: 3600, maxTokenLifetimeSeconds: 3600 });
      await keys.ensureKeys();
      tokens = new TokenIssuer(keys, clock, config.issuer, config.lifetimes, store);
    });
    after(async () => {
      await store?.close();
      await drop();
    });

    async function given(): Promise<{ client: ClientRecord; user: UserRecord; session: SessionRecord }> {
      users += 1;
      const client = clientRecord({
        id: `client-${users}`,
        name: 'TV App',
        redirectUris: ['https://app.example/callback'],
        scopes: ['openid', 'offline_access'],
        grantTypes: [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN],
        createdAt: T0,
      });
      const user: UserRecord = newUserRecord({ id: `user-${users}`, username: `user-${users}@example.com`, passwordHash: 'x', createdAt: T0 });
      await store.clients.create(client);
      await store.users.create(user);
      return {
        client,
        user,
        session: {
          idHash: `session-${users}`,
          sid: `sid-${users}`,
          ip: null,
          userAgent: null,
          userId: user.id,
          authTime: T0,
          createdAt: T0,
          expiresAt: T0 + 3_600_000,
        },
      };
    }

    const published: AuditEvent[] = [];
    const deps = (over: Store): FlowDeps => ({
      store: over,
      clock,
      config,
      tokens,
      events: new Events(clock, over.events, [(event) => published.push(event)]),
    });

    it('approving a code request leaves neither the grant nor the code when the code cannot be written', async () => {
      const { client, user, session } = await given();
      const request = {
        client,
        redirectUri: 'https://app.example/callback',
        scope: ['openid'],
        resources: [],
        access: { openid: [{ name: 'openid', description: 'Sign you in and know who you are' }], apis: [] },
        state: 'xyz',
        responseMode: 'query' as const,
        nonce: null,
        codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        prompt: [],
        maxAge: null,
        dpopJkt: null,
      };
      const broken = crashing(store, (tx) => ({ ...tx, codes: { ...tx.codes, create: died } }));
      await assert.rejects(approveAuthorization(deps(broken), request, session), /died/);
      assert.deepEqual(await store.grants.listForUser(user.id), []);

      const response = await approveAuthorization(deps(store), request, session);
      assert.equal((await store.grants.listForUser(user.id)).length, 1, 'the same approval stands when nothing fails');
      assert.ok(response.params['code']);
    });

    it('approving a device leaves neither the grant nor the decision when the decision cannot be written', async () => {
      const { client, user, session } = await given();
      const userCode = `WDJBMJH${'BCDFGHJKLM'[users % 10]}`;
      await store.devices.create(pendingDevice(client.id, { deviceCodeHash: `device-${users}`, userCode }));
      const attempt = { input: userCode, ip: '198.51.100.1', browser: null };
      const broken = crashing(store, (tx) => ({ ...tx, devices: { ...tx.devices, decide: died } }));
      await assert.rejects(decideDeviceRequest(deps(broken), attempt, { approve: true, session }), /died/);
      assert.deepEqual(await store.grants.listForUser(user.id), []);
      assert.equal((await store.devices.findByUserCode(userCode, T0))?.status, 'pending');

      const decided = await decideDeviceRequest(deps(store), attempt, { approve: true, session });
      assert.equal(decided.kind, 'done');
      assert.deepEqual(
        (await store.grants.listForUser(user.id)).map((grant) => grant.id),
        [decided.kind === 'done' ? decided.record.grantId : ''],
      );
    });

    it('approving a code request leaves no grant, no code and no event when the event cannot be written, and logs nothing', async () => {
      const { client, user, session } = await given();
      const request = {
        client,
        redirectUri: 'https://app.example/callback',
        scope: ['openid'],
        state: null,
        responseMode: 'query' as const,
        nonce: null,
        codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        prompt: [],
        maxAge: null,
        resources: [],
        access: { openid: [{ name: 'openid', description: 'Sign you in and know who you are' }], apis: [] },
        dpopJkt: null,
      };
      published.length = 0;
      const broken = crashing(store, (tx) => ({
        ...tx,
        events: { ...tx.events, add: (event) => (event.type === 'code.issued' ? died() : tx.events.add(event)) },
      }));
      await assert.rejects(approveAuthorization(deps(broken), request, session), /died/);
      assert.deepEqual(await store.grants.listForUser(user.id), []);
      assert.deepEqual(await store.events.list({ userId: user.id, limit: 10 }), [], 'not even the consent event written before the crash');
      assert.equal(published.length, 0, 'nothing reached the log');

      await approveAuthorization(deps(store), request, session);
      const [grant] = await store.grants.listForUser(user.id);
      const stored = await store.events.list({ userId: user.id, limit: 10 });
      assert.deepEqual(stored.map((event) => event.type).sort(), ['code.issued', 'consent.given']);
      assert.ok(stored.every((event) => event.grantId === grant!.id && event.clientId === client.id));
      assert.deepEqual(published.map((event) => event.id).sort(), stored.map((event) => event.id).sort(), 'logged once committed');
    });

    it('approving a device leaves no grant and no decision when its event cannot be written', async () => {
      const { client, user, session } = await given();
      const userCode = `XDJBMJH${'BCDFGHJKLM'[users % 10]}`;
      await store.devices.create(pendingDevice(client.id, { deviceCodeHash: `device-${users}`, userCode }));
      const attempt = { input: userCode, ip: '198.51.100.1', browser: null };
      const broken = crashing(store, (tx) => ({ ...tx, events: { ...tx.events, add: died } }));
      await assert.rejects(decideDeviceRequest(deps(broken), attempt, { approve: true, session }), /died/);
      assert.deepEqual(await store.grants.listForUser(user.id), []);
      assert.equal((await store.devices.findByUserCode(userCode, T0))?.status, 'pending');
    });

    it("issuing tokens leaves no refresh token when the grant's use cannot be recorded", async () => {
      const { client, user } = await given();
      const grant = {
        id: `grant-${users}`,
        userId: user.id,
        clientId: client.id,
        scope: ['openid', 'offline_access'],
        kind: GRANT_AUTHORIZATION_CODE,
        authTime: T0,
        createdAt: T0,
        revokedAt: null,
        device: null,
      } as const;
      await store.grants.create(grant);
      const written: string[] = [];
      const broken = crashing(store, (tx) => ({
        ...tx,
        refreshTokens: {
          ...tx.refreshTokens,
          create: (token) => {
            written.push(token.hash);
            return tx.refreshTokens.create(token);
          },
        },
        grants: { ...tx.grants, recordUse: died },
      }));
      const issuance = { client, user, scope: grant.scope, grantId: grant.id, authTime: T0 };
      await assert.rejects(new TokenIssuer(keys, clock, config.issuer, config.lifetimes, broken).issue(issuance), /died/);
      assert.equal(written.length, 1);
      assert.equal(await store.refreshTokens.find(written[0]!), null);
      assert.equal((await store.grants.get(grant.id))?.lastUsedAt, null);

      const issued = await tokens.issue(issuance);
      assert.ok(issued.refresh_token);
      assert.equal((await store.grants.get(grant.id))?.lastUsedAt, T0);
    });
  });
}
