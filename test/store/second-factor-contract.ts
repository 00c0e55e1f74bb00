/**
 * The store contract for passkeys and one-time codes (migration 11), run inside
 * `storeContract` against every store: each single use is one statement with one winner.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GRANT_AUTHORIZATION_CODE } from '../../src/core/protocol.ts';
import { DuplicateError, type ClientRecord, type GrantRecord, type PasskeyRecord, type Store, type UserRecord } from '../../src/store/types.ts';

const T0 = Date.UTC(2026, 0, 1);
const MINUTE = 60_000;

export interface ContractHelpers {
  readonly store: () => Store;
  readonly unique: (prefix: string) => string;
  readonly givenUser: () => Promise<UserRecord>;
  readonly givenClient: (overrides?: Partial<ClientRecord>) => Promise<ClientRecord>;
  readonly givenGrant: (clientId: string, userId: string, overrides?: Partial<GrantRecord>) => Promise<GrantRecord>;
}

export function secondFactorContract({ store: current, unique, givenUser, givenClient, givenGrant }: ContractHelpers): void {
  const passkeyFor = (userId: string, overrides: Partial<PasskeyRecord> = {}): PasskeyRecord => ({
    id: unique('credential'),
    userId,
    name: 'Work laptop',
    publicKey: 'pQECAyYgASFYIA',
    counter: 0,
    transports: ['internal', 'hybrid'],
    deviceType: 'singleDevice',
    backedUp: false,
    createdAt: T0,
    lastUsedAt: null,
    ...overrides,
  });

  describe('how a session signed in, and a client that requires a passkey', () => {
    it("keeps a session's amr, and a session made without one has none", async () => {
      const store = current();
      const user = await givenUser();
      const session = {
        idHash: unique('session'),
        sid: unique('sid'),
        userId: user.id,
        authTime: T0,
        createdAt: T0,
        expiresAt: T0 + MINUTE,
        ip: null,
        userAgent: null,
      };
      await store.sessions.create({ ...session, amr: ['hwk', 'mfa'] });
      assert.deepEqual(await store.sessions.get(session.idHash, T0), { ...session, amr: ['hwk', 'mfa'] });
      const plain = { ...session, idHash: unique('session'), sid: unique('sid') };
      await store.sessions.create(plain);
      assert.deepEqual(await store.sessions.get(plain.idHash, T0), plain);
    });

    it("keeps a grant's amr and acr", async () => {
      const client = await givenClient();
      const user = await givenUser();
      const grant = await givenGrant(client.id, user.id, { amr: ['pwd', 'otp', 'mfa'], acr: 'urn:tessera:acr:mfa', kind: GRANT_AUTHORIZATION_CODE });
      assert.deepEqual(await current().grants.get(grant.id), grant);
    });

    it('keeps requirePhishingResistant, and an update sets and clears it', async () => {
      const store = current();
      const client = await givenClient({ requirePhishingResistant: true });
      assert.deepEqual(await store.clients.get(client.id), client);
      const { id: _id, createdAt: _createdAt, requirePhishingResistant: _required, ...changes } = client;
      assert.equal((await store.clients.update(client.id, changes))?.requirePhishingResistant, undefined);
      assert.equal((await store.clients.get(client.id))?.requirePhishingResistant, undefined);
      assert.equal((await store.clients.update(client.id, { ...changes, requirePhishingResistant: true }))?.requirePhishingResistant, true);
      assert.equal((await store.clients.get(client.id))?.requirePhishingResistant, true);
    });
  });

  describe('passkeys', () => {
    it("returns a created passkey with every field as given, lists a user's own, and refuses a taken credential id", async () => {
      const store = current();
      const user = await givenUser();
      const first = passkeyFor(user.id);
      const second = passkeyFor(user.id, { createdAt: T0 + 1, deviceType: 'multiDevice', backedUp: true, counter: 4_000_000_000 });
      await store.passkeys.create(first);
      await store.passkeys.create(second);
      await store.passkeys.create(passkeyFor((await givenUser()).id));
      assert.deepEqual(await store.passkeys.get(first.id), first);
      assert.deepEqual(await store.passkeys.listForUser(user.id), [first, second]);
      await assert.rejects(store.passkeys.create({ ...first, name: 'Again' }), DuplicateError);
      assert.equal((await store.passkeys.get(first.id))?.name, 'Work laptop');
      assert.equal(await store.passkeys.get(unique('credential')), null);
    });

    it('records a use only when the counter moves forward, or stays 0 on an authenticator without one', async () => {
      const store = current();
      const user = await givenUser();
      const counting = passkeyFor(user.id, { counter: 5 });
      await store.passkeys.create(counting);
      assert.equal(await store.passkeys.recordUse(counting.id, { counter: 5, backedUp: false }, T0), null, 'the same counter');
      assert.equal(await store.passkeys.recordUse(counting.id, { counter: 4, backedUp: false }, T0), null, 'backwards');
      assert.deepEqual(await store.passkeys.recordUse(counting.id, { counter: 6, backedUp: true }, T0 + 1), {
        ...counting,
        counter: 6,
        backedUp: true,
        lastUsedAt: T0 + 1,
      });
      const counterless = passkeyFor(user.id);
      await store.passkeys.create(counterless);
      assert.equal((await store.passkeys.recordUse(counterless.id, { counter: 0, backedUp: false }, T0))?.lastUsedAt, T0);
      assert.equal((await store.passkeys.recordUse(counterless.id, { counter: 0, backedUp: false }, T0 + 1))?.lastUsedAt, T0 + 1);
      assert.equal(await store.passkeys.recordUse(unique('credential'), { counter: 1, backedUp: false }, T0), null);
    });

    it('records a use for exactly one of 10 concurrent sign-ins with the same counter', async () => {
      const store = current();
      const passkey = passkeyFor((await givenUser()).id, { counter: 1 });
      await store.passkeys.create(passkey);
      const results = await Promise.all(Array.from({ length: 10 }, () => store.passkeys.recordUse(passkey.id, { counter: 2, backedUp: false }, T0)));
      assert.equal(results.filter((result) => result !== null).length, 1);
    });

    it("removes a user's own passkey only, and all of a user's at once", async () => {
      const store = current();
      const user = await givenUser();
      const other = await givenUser();
      const mine = passkeyFor(user.id);
      const theirs = passkeyFor(other.id);
      await store.passkeys.create(mine);
      await store.passkeys.create(theirs);
      await store.passkeys.create(passkeyFor(user.id));
      assert.equal(await store.passkeys.remove(theirs.id, user.id), false);
      assert.ok(await store.passkeys.get(theirs.id));
      assert.equal(await store.passkeys.remove(mine.id, user.id), true);
      assert.equal(await store.passkeys.remove(mine.id, user.id), false);
      assert.equal(await store.passkeys.removeAllForUser(user.id), 1);
      assert.deepEqual(await store.passkeys.listForUser(user.id), []);
      assert.equal((await store.passkeys.listForUser(other.id)).length, 1);
    });
  });

  describe('WebAuthn challenges', () => {
    it('gives a challenge once, for its purpose, until it expires', async () => {
      const store = current();
      const user = await givenUser();
      const challenge = { challengeHash: unique('challenge'), purpose: 'register' as const, userId: user.id, createdAt: T0, expiresAt: T0 + 5 * MINUTE };
      await store.webauthnChallenges.create(challenge);
      assert.equal(await store.webauthnChallenges.consume(challenge.challengeHash, 'authenticate', T0), null, 'another purpose');
      assert.equal(await store.webauthnChallenges.consume(challenge.challengeHash, 'register', T0 + 5 * MINUTE), null, 'expired');
      assert.deepEqual(await store.webauthnChallenges.consume(challenge.challengeHash, 'register', T0 + 5 * MINUTE - 1), challenge);
      assert.equal(await store.webauthnChallenges.consume(challenge.challengeHash, 'register', T0), null, 'used');
    });

    it('gives a challenge to exactly one of 20 concurrent answers', async () => {
      const store = current();
      const challenge = { challengeHash: unique('challenge'), purpose: 'authenticate' as const, userId: null, createdAt: T0, expiresAt: T0 + MINUTE };
      await store.webauthnChallenges.create(challenge);
      const results = await Promise.all(Array.from({ length: 20 }, () => store.webauthnChallenges.consume(challenge.challengeHash, 'authenticate', T0)));
      assert.equal(results.filter((result) => result !== null).length, 1);
    });
  });

  describe('TOTP secrets and recovery codes', () => {
    it('replaces an unconfirmed secret, confirms once, and then keeps the confirmed one', async () => {
      const store = current();
      const user = await givenUser();
      assert.equal(await store.totp.begin(user.id, 'FIRSTSECRET', T0), true);
      assert.equal(await store.totp.begin(user.id, 'SECONDSECRET', T0 + 1), true);
      assert.deepEqual(await store.totp.get(user.id), { userId: user.id, secret: 'SECONDSECRET', createdAt: T0 + 1, confirmedAt: null, lastStep: null });
      assert.equal(await store.totp.useStep(user.id, 10), false, 'an unconfirmed secret accepts no code');
      assert.deepEqual(await store.totp.confirm(user.id, 100, T0 + 2), {
        userId: user.id,
        secret: 'SECONDSECRET',
        createdAt: T0 + 1,
        confirmedAt: T0 + 2,
        lastStep: 100,
      });
      assert.equal(await store.totp.confirm(user.id, 101, T0 + 3), null);
      assert.equal(await store.totp.begin(user.id, 'THIRDSECRET', T0 + 4), false);
      assert.equal((await store.totp.get(user.id))?.secret, 'SECONDSECRET');
      assert.equal(await store.totp.remove(user.id), true);
      assert.equal(await store.totp.get(user.id), null);
      assert.equal(await store.totp.remove(user.id), false);
    });

    it('accepts each time step once, and none before the last accepted, for exactly one of 10 concurrent uses', async () => {
      const store = current();
      const user = await givenUser();
      await store.totp.begin(user.id, 'SECRET', T0);
      await store.totp.confirm(user.id, 100, T0);
      assert.equal(await store.totp.useStep(user.id, 100), false, 'the confirming code');
      assert.equal(await store.totp.useStep(user.id, 99), false);
      const results = await Promise.all(Array.from({ length: 10 }, () => store.totp.useStep(user.id, 101)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await store.totp.useStep(user.id, 102), true);
    });

    it("uses each recovery code once, only its own user's, and replaces the set", async () => {
      const store = current();
      const user = await givenUser();
      const other = await givenUser();
      await store.recoveryCodes.replace(user.id, ['h1', 'h2', 'h3'], T0);
      await store.recoveryCodes.replace(other.id, ['h9'], T0);
      assert.equal(await store.recoveryCodes.countUnused(user.id), 3);
      assert.equal(await store.recoveryCodes.consume(user.id, 'h9', T0), false, "another user's code");
      const results = await Promise.all(Array.from({ length: 10 }, () => store.recoveryCodes.consume(user.id, 'h2', T0)));
      assert.equal(results.filter(Boolean).length, 1);
      assert.equal(await store.recoveryCodes.countUnused(user.id), 2);
      await store.recoveryCodes.replace(user.id, ['n1', 'n2'], T0);
      assert.equal(await store.recoveryCodes.consume(user.id, 'h1', T0), false, 'an old code');
      assert.equal(await store.recoveryCodes.countUnused(user.id), 2);
      await store.recoveryCodes.removeAllForUser(user.id);
      assert.equal(await store.recoveryCodes.countUnused(user.id), 0);
      assert.equal(await store.recoveryCodes.countUnused(other.id), 1);
    });
  });

  describe('sign-ins waiting for a code', () => {
    it('returns one until it expires, and gives it once', async () => {
      const store = current();
      const user = await givenUser();
      const pending = { idHash: unique('pending'), userId: user.id, amr: ['pwd' as const], createdAt: T0, expiresAt: T0 + 5 * MINUTE };
      await store.pendingSignIns.create(pending);
      assert.deepEqual(await store.pendingSignIns.get(pending.idHash, T0), pending);
      assert.equal(await store.pendingSignIns.get(pending.idHash, T0 + 5 * MINUTE), null);
      const results = await Promise.all(Array.from({ length: 10 }, () => store.pendingSignIns.consume(pending.idHash, T0)));
      assert.equal(results.filter((result) => result !== null).length, 1);
      assert.equal(await store.pendingSignIns.get(pending.idHash, T0), null);
    });

    it('keeps the methods the first step proved, none as none', async () => {
      const store = current();
      const user = await givenUser();
      const upstream = { idHash: unique('pending'), userId: user.id, amr: ['hwk' as const, 'mfa' as const], createdAt: T0, expiresAt: T0 + 5 * MINUTE };
      const silent = { idHash: unique('pending'), userId: user.id, amr: [], createdAt: T0, expiresAt: T0 + 5 * MINUTE };
      await store.pendingSignIns.create(upstream);
      await store.pendingSignIns.create(silent);
      assert.deepEqual((await store.pendingSignIns.consume(upstream.idHash, T0))?.amr, ['hwk', 'mfa']);
      assert.deepEqual((await store.pendingSignIns.get(silent.idHash, T0))?.amr, []);
    });

    it('purges expired challenges and waiting sign-ins', async () => {
      const store = current();
      const user = await givenUser();
      const long = Date.UTC(2019, 0, 1);
      await store.webauthnChallenges.create({
        challengeHash: unique('challenge'),
        purpose: 'authenticate',
        userId: null,
        createdAt: long,
        expiresAt: long + MINUTE,
      });
      const pending = { idHash: unique('pending'), userId: user.id, amr: ['pwd' as const], createdAt: long, expiresAt: long + MINUTE };
      await store.pendingSignIns.create(pending);
      assert.equal(await store.purgeExpired(long + 2 * MINUTE), 2);
      assert.equal(await store.pendingSignIns.get(pending.idHash, long), null);
    });
  });
}
