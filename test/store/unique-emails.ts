/**
 * The upgrade to unique e-mail addresses (migration 37) over a database that holds accounts
 * sharing one, run against each store: the address stays with the account that verified it
 * (the oldest of those), else the oldest; the others lose it and are listed, until they are
 * changed again; afterwards no door can give an address to a second account.
 */
import assert from 'node:assert/strict';
import { DuplicateError, newUserRecord, type Store } from '../../src/store/types.ts';

const T0 = Date.UTC(2026, 0, 1);

/** What a database had before migration 37: the plain index, no list, the version not applied. */
export const BEFORE_UNIQUE_EMAILS = [
  'DROP INDEX users_email_unique',
  'DROP TABLE cleared_emails',
  'CREATE INDEX users_email ON users (lower(email))',
  'DELETE FROM schema_migrations WHERE version = 37',
];

/**
 * `open` opens the store (migrating what the database lacks); `exec` runs statements on the
 * database while no store has it open.
 */
export async function checkUniqueEmailsUpgrade(open: () => Promise<Store>, exec: (statements: readonly string[]) => Promise<void>): Promise<void> {
  const people = [
    { name: 'ada', email: 'shared@example.com', verified: false },
    { name: 'bob', email: 'SHARED@example.com', verified: true },
    { name: 'cy', email: 'shared@EXAMPLE.com', verified: true },
    { name: 'dee', email: 'other@example.com', verified: false },
    { name: 'eve', email: 'OTHER@example.com', verified: false },
    { name: 'fay', email: 'fay@example.com', verified: true },
  ];
  let store = await open();
  for (const [i, person] of people.entries())
    await store.users.create(
      newUserRecord({
        id: `upgrade-${person.name}`,
        username: person.name,
        passwordHash: '!',
        email: `${person.name}-placeholder@example.com`,
        emailVerified: person.verified,
        createdAt: T0 + i,
      }),
    );
  await store.close();
  await exec([...BEFORE_UNIQUE_EMAILS, ...people.map((person) => `UPDATE users SET email = '${person.email}' WHERE id = 'upgrade-${person.name}'`)]);
  store = await open();
  try {
    const emailOf = async (name: string) => {
      const user = await store.users.get(`upgrade-${name}`);
      return { email: user?.email ?? null, verified: user?.emailVerified ?? null };
    };
    assert.deepEqual(await emailOf('bob'), { email: 'SHARED@example.com', verified: true }, 'the oldest account that verified it keeps it');
    assert.deepEqual(await emailOf('ada'), { email: null, verified: false }, 'an older account that never verified it loses it');
    assert.deepEqual(await emailOf('cy'), { email: null, verified: false });
    assert.deepEqual(await emailOf('dee'), { email: 'other@example.com', verified: false }, 'none verified: the oldest keeps it');
    assert.deepEqual(await emailOf('eve'), { email: null, verified: false });
    assert.deepEqual(await emailOf('fay'), { email: 'fay@example.com', verified: true }, 'an address nobody shares is left alone');
    const cleared = await store.users.clearedEmails();
    assert.deepEqual(
      cleared
        .map(({ username, email, emailVerified, keptBy }) => ({ username, email, emailVerified, keptBy }))
        .sort((a, b) => a.username.localeCompare(b.username)),
      [
        { username: 'ada', email: 'shared@example.com', emailVerified: false, keptBy: 'bob' },
        { username: 'cy', email: 'shared@EXAMPLE.com', emailVerified: true, keptBy: 'bob' },
        { username: 'eve', email: 'OTHER@example.com', emailVerified: false, keptBy: 'dee' },
      ],
    );
    // Changed since (an operator gave an address, or decided on none): off the list.
    const ada = await store.users.get('upgrade-ada');
    await store.users.update('upgrade-ada', { name: 'Ada' }, Math.max(Date.now(), (ada?.updatedAt ?? 0) + 1));
    assert.deepEqual((await store.users.clearedEmails()).map((row) => row.username).sort(), ['cy', 'eve']);
    // And from now on the address is one account's, whichever door tries.
    await assert.rejects(
      store.users.create(newUserRecord({ id: 'upgrade-gus', username: 'gus', passwordHash: '!', email: 'Other@Example.COM', createdAt: T0 + 9 })),
      (error: unknown) => error instanceof DuplicateError && error.field === 'email',
    );
    await assert.rejects(
      store.users.update('upgrade-eve', { email: 'shared@example.COM' }, T0 + 10),
      (error: unknown) => error instanceof DuplicateError && error.field === 'email',
    );
  } finally {
    await store.close();
  }
}
