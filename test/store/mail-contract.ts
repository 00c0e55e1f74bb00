/**
 * The store contract for mail in the outbox, run inside `storeContract` against every store: a
 * message is queued in its event's transaction (and goes when that transaction rolls back),
 * claimed by one caller at a time, settled only by the try that holds it, dropped from the row
 * once delivered, dead after its window, and purged with its event.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuditEvent } from '../../src/core/events.ts';
import { newUserRecord, type Store } from '../../src/store/types.ts';
import { auditEvent } from './fixtures.ts';

const T0 = Date.UTC(2026, 3, 1);
const SECOND = 1000;

export interface MailContractHelpers {
  readonly store: () => Store;
  readonly unique: (prefix: string) => string;
}

export function mailContract({ store: current, unique }: MailContractHelpers): void {
  const event = (at = T0): AuditEvent => auditEvent({ id: unique('event'), type: 'recovery.requested', at, detail: { accounts: 1 } });
  const sealed = { enc: 'A256GCM', kek: 'k', iv: 'i', ciphertext: 'c', tag: 't' };
  /** Queues one message for a new event, in one transaction, and returns its id. */
  const queued = async (at = T0): Promise<{ id: string; eventId: string }> => {
    const store = current();
    const announced = event(at);
    const id = unique('mail');
    await store.transaction(async (tx) => {
      await tx.events.add(announced);
      await tx.mail.enqueue({ id, eventId: announced.id, kind: 'recovery', message: sealed }, at);
    });
    return { id, eventId: announced.id };
  };
  /** Claims until the message `id` is the one claimed (others queued by other cases may come first). */
  const claimed = async (id: string, now: number, leaseUntil: number) => {
    for (let i = 0; i < 1000; i++) {
      const mail = await current().mail.claim(now, leaseUntil);
      if (mail === null) return null;
      if (mail.id === id) return mail;
      // Another case's message: let it be, out of the way.
      await current().mail.settle(mail.id, mail.attempts, { kind: 'delivered' }, now);
    }
    return null;
  };

  describe('mail in the outbox', () => {
    it('keeps a message queued in its event’s transaction, and none when the transaction rolls back', async () => {
      const store = current();
      const { id, eventId } = await queued();
      const [mail] = await store.mail.forEvent(eventId);
      assert.equal(mail?.id, id);
      assert.equal(mail?.state, 'pending');
      assert.equal(mail?.attempts, 0);
      assert.deepEqual(mail?.message, sealed);

      const lost = event();
      await assert.rejects(
        store.transaction(async (tx) => {
          await tx.events.add(lost);
          await tx.mail.enqueue({ id: unique('mail'), eventId: lost.id, kind: 'recovery', message: sealed }, T0);
          throw new Error('rolled back');
        }),
        /rolled back/,
      );
      assert.deepEqual(await store.mail.forEvent(lost.id), []);
    });

    it('gives a due message to one of two callers at once, and to none while its lease holds', async () => {
      const store = current();
      const { id, eventId } = await queued();
      const mine = await claimed(id, T0 + SECOND, T0 + 60 * SECOND);
      assert.equal(mine?.attempts, 1);
      const [again, other] = await Promise.all([store.mail.claim(T0 + 2 * SECOND, T0 + 60 * SECOND), store.mail.claim(T0 + 2 * SECOND, T0 + 60 * SECOND)]);
      assert.ok(again?.id !== id && other?.id !== id, 'a leased message is not claimed again');
      // Settled by the try that holds it only.
      assert.equal(await store.mail.settle(id, 7, { kind: 'delivered' }, T0 + 3 * SECOND), null);
      assert.equal(await store.mail.settle(id, 1, { kind: 'delivered' }, T0 + 3 * SECOND), 'delivered');
      const [done] = await store.mail.forEvent(eventId);
      assert.equal(done?.state, 'delivered');
      assert.equal(done?.deliveredAt, T0 + 3 * SECOND);
      assert.equal(done?.message, null, 'a delivered message’s text is not kept');
    });

    it('tries a failed message again after its delay, gives it up after its window, and counts what waits', async () => {
      const store = current();
      const { id, eventId } = await queued();
      const first = await claimed(id, T0 + SECOND, T0 + 60 * SECOND);
      assert.equal(
        await store.mail.settle(
          id,
          first!.attempts,
          { kind: 'failed', error: 'connection refused', nextAttemptAt: T0 + 10 * SECOND, deadBefore: T0 - SECOND },
          T0 + 2 * SECOND,
        ),
        'pending',
      );
      assert.ok((await store.mail.countByState()).pending >= 1);
      assert.equal(await claimed(id, T0 + 5 * SECOND, T0 + 60 * SECOND), null, 'not before its next attempt');
      const second = await claimed(id, T0 + 10 * SECOND, T0 + 60 * SECOND);
      assert.equal(second?.attempts, 2);
      // Given back uncounted (a server stopping), then tried and given up.
      await store.mail.release(id, 2, T0 + 11 * SECOND);
      const third = await claimed(id, T0 + 11 * SECOND, T0 + 60 * SECOND);
      assert.equal(third?.attempts, 2);
      assert.equal(
        await store.mail.settle(
          id,
          2,
          { kind: 'failed', error: '451 try again later', nextAttemptAt: T0 + 99 * SECOND, deadBefore: T0 + SECOND },
          T0 + 12 * SECOND,
        ),
        'dead',
      );
      const [dead] = await store.mail.forEvent(eventId);
      assert.equal(dead?.state, 'dead');
      assert.equal(dead?.lastError, '451 try again later');
      assert.ok((await store.mail.countByState()).dead >= 1);
    });

    it('uses a sign-up link up once, for one of two callers, only before it expires, and purges it after', async () => {
      const store = current();
      const tokenHash = unique('sign-up');
      const record = {
        tokenHash,
        userId: null,
        username: unique('user'),
        name: 'Ada',
        email: 'ada@example.com',
        passwordHash: 'hash',
        passkey: null,
        locale: 'en',
        returnTo: '/account',
        browser: 'hash-of-the-csrf-cookie',
        createdAt: T0,
        expiresAt: T0 + 60 * SECOND,
        usedAt: null,
      };
      await store.signUps.create(record);
      assert.deepEqual(await store.signUps.find(tokenHash, T0 + SECOND), record, 'read back as written, the browser that signed up with it');
      assert.equal(await store.signUps.find(tokenHash, T0 + 60 * SECOND), null, 'expired');
      const [one, two] = await Promise.all([store.signUps.consume(tokenHash, T0 + SECOND), store.signUps.consume(tokenHash, T0 + SECOND)]);
      assert.equal([one, two].filter((taken) => taken !== null).length, 1);
      assert.equal((one ?? two)?.browser, 'hash-of-the-csrf-cookie', 'the one that uses it up learns the browser too');
      assert.equal(await store.signUps.find(tokenHash, T0 + SECOND), null, 'used');
      const late = { ...record, tokenHash: unique('sign-up') };
      await store.signUps.create(late);
      assert.equal(await store.signUps.consume(late.tokenHash, T0 + 61 * SECOND), null);
      await store.purgeExpired(T0 + 120 * SECOND);
      assert.equal(await store.signUps.find(late.tokenHash, T0), null, 'purged once expired');
    });

    it('keeps a sign-up with a passkey, the passkey read back as written, and one with no browser (a sign-up from before version 54)', async () => {
      const store = current();
      const passkey = {
        id: unique('credential'),
        userId: unique('account'),
        name: 'Passkey',
        publicKey: 'cHVibGlj',
        counter: 0,
        transports: ['internal', 'hybrid'],
        deviceType: 'multiDevice' as const,
        backedUp: true,
      };
      const record = {
        tokenHash: unique('sign-up'),
        userId: null,
        username: unique('user'),
        name: null,
        email: 'grace@example.com',
        passwordHash: '!',
        passkey,
        locale: null,
        returnTo: '/account',
        browser: null,
        createdAt: T0,
        expiresAt: T0 + 60 * SECOND,
        usedAt: null,
      };
      await store.signUps.create(record);
      assert.deepEqual(await store.signUps.find(record.tokenHash, T0 + SECOND), record);
      assert.deepEqual((await store.signUps.consume(record.tokenHash, T0 + SECOND))?.passkey, passkey);
    });

    it('uses an e-mail change once, for one of two callers, knows the newest waiting, spends them all, and purges them after', async () => {
      const store = current();
      const user = newUserRecord({ id: unique('user'), username: unique('user'), passwordHash: '!', createdAt: T0 });
      await store.users.create(user);
      const change = { tokenHash: unique('email-change'), userId: user.id, email: 'new@example.com', createdAt: T0, expiresAt: T0 + 60 * SECOND, usedAt: null };
      const newer = { ...change, tokenHash: unique('email-change'), email: 'newer@example.com', createdAt: T0 + SECOND };
      await store.emailChanges.create(change);
      await store.emailChanges.create(newer);
      assert.deepEqual(await store.emailChanges.find(change.tokenHash, T0 + SECOND), change);
      assert.deepEqual(await store.emailChanges.pendingFor(user.id, T0 + 2 * SECOND), newer);
      assert.equal(await store.emailChanges.find(change.tokenHash, T0 + 60 * SECOND), null, 'expired');
      const [one, two] = await Promise.all([
        store.emailChanges.consume(change.tokenHash, T0 + SECOND),
        store.emailChanges.consume(change.tokenHash, T0 + SECOND),
      ]);
      assert.equal([one, two].filter((taken) => taken !== null).length, 1);
      assert.equal(await store.emailChanges.consume(change.tokenHash, T0 + SECOND), null, 'used');
      await store.emailChanges.spendAllForUser(user.id, T0 + 2 * SECOND);
      assert.equal(await store.emailChanges.pendingFor(user.id, T0 + 2 * SECOND), null);
      assert.equal(await store.emailChanges.consume(newer.tokenHash, T0 + 2 * SECOND), null, 'spent');
      const late = { ...change, tokenHash: unique('email-change') };
      await store.emailChanges.create(late);
      await store.purgeExpired(T0 + 120 * SECOND);
      assert.equal(await store.emailChanges.find(late.tokenHash, T0), null, 'purged once expired');
    });

    it('goes with its event when the audit trail is purged', async () => {
      const store = current();
      const { eventId } = await queued(T0 - 400 * 24 * 3600 * SECOND);
      assert.equal((await store.mail.forEvent(eventId)).length, 1);
      await store.purgeExpired(T0 - 500 * 24 * 3600 * SECOND, { eventsBefore: T0 - 300 * 24 * 3600 * SECOND });
      assert.deepEqual(await store.mail.forEvent(eventId), []);
    });
  });
}
