/**
 * The upgrade to self-asserted addresses (migration 51) over a database whose accounts were made
 * before it, run against each store: only an account that sign-up made, still unverified, whose
 * address nothing in the audit trail verified or may have replaced, is marked.
 */
import assert from 'node:assert/strict';
import type { AuditEvent } from '../../src/core/events.ts';
import { newUserRecord, type Store } from '../../src/store/types.ts';
import { auditEvent } from './fixtures.ts';

const T0 = Date.UTC(2026, 0, 1);

/** What a database had before migration 51: no column, the version not applied. */
export const BEFORE_SELF_ASSERTED_EMAILS = ['ALTER TABLE users DROP COLUMN email_self_asserted', 'DELETE FROM schema_migrations WHERE version = 51'];

/**
 * `open` opens the store (migrating what the database lacks); `exec` runs statements on the
 * database while no store has it open.
 */
export async function checkSelfAssertedEmailsUpgrade(open: () => Promise<Store>, exec: (statements: readonly string[]) => Promise<void>): Promise<void> {
  // By username: how the account was made, whether its address is verified, and what the trail says happened since.
  const people: readonly { name: string; by: string; verified: boolean; since?: Pick<AuditEvent, 'type' | 'detail'> }[] = [
    { name: 'ada', by: 'sign_up', verified: false },
    { name: 'bea', by: 'operator', verified: false },
    { name: 'cy', by: 'sign_up', verified: true },
    { name: 'dee', by: 'sign_up', verified: false, since: { type: 'user.email_verified', detail: { by: 'sign_up' } } },
    { name: 'eli', by: 'sign_up', verified: false, since: { type: 'user.updated', detail: { fields: 'email', by: 'operator' } } },
    { name: 'fay', by: 'sign_up', verified: false, since: { type: 'user.updated', detail: { fields: 'scim', by: 'scim' } } },
    { name: 'gus', by: 'sign_up', verified: false, since: { type: 'user.updated', detail: { fields: 'name', by: 'operator' } } },
  ];
  let store = await open();
  for (const [i, person] of people.entries()) {
    const id = `self-asserted-${person.name}`;
    await store.users.create(
      newUserRecord({ id, username: id, passwordHash: '!', email: `${id}@example.com`, emailVerified: person.verified, createdAt: T0 + i }),
    );
    const about = { userId: id, username: id };
    await store.events.add(auditEvent({ id: `${id}-created`, type: 'user.created', at: T0 + i, ...about, detail: { by: person.by } }));
    if (person.since) await store.events.add(auditEvent({ id: `${id}-since`, at: T0 + 10 + i, ...about, ...person.since }));
  }
  await store.close();
  await exec(BEFORE_SELF_ASSERTED_EMAILS);
  store = await open();
  try {
    const marked = [];
    for (const person of people) if ((await store.users.get(`self-asserted-${person.name}`))?.emailSelfAsserted) marked.push(person.name);
    assert.deepEqual(marked, ['ada', 'gus'], 'made by sign-up, unverified, its address neither verified nor possibly replaced since');
  } finally {
    await store.close();
  }
}
