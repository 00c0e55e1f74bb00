/**
 * "Forgot password?" without HTTP or SMTP: the same answer whether the address has an account
 * or not, a link mailed to each enabled account with it (read from the outbox, opened as the
 * dispatcher opens it) that resets the password, none to a disabled one, and the hourly
 * budgets. test/recovery.test.ts follows the same through the pages and a real SMTP server.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { hashSecret } from '../core/crypto.ts';
import type { UserRecord } from '../store/types.ts';
import { FLOW_ISSUER, flowWorld, queuedMail, type FlowWorld } from '../../test/helpers/flows.ts';
import type { MailMessage } from './mail/outbox.ts';
import { RECOVERY_KEYS, requestRecovery } from './recovery.ts';
import { resetPassword, type AccountDeps } from './users.ts';

const PER_ADDRESS = 4;

describe('recovering an account by e-mail ("Forgot password?")', () => {
  let world: FlowWorld;
  let deps: AccountDeps;

  before(async () => {
    world = await flowWorld({ TESSERA_RECOVERY_PER_ADDRESS: String(PER_ADDRESS), TESSERA_RECOVERY_PER_EMAIL: '1000' });
    deps = { ...world.deps, mail: world.mail };
  });
  after(() => world.close());

  /** The recovery messages queued so far. */
  async function recoveryMail(): Promise<MailMessage[]> {
    return queuedMail(
      world,
      (await world.store.events.list({ limit: 500 })).filter((event) => event.type === 'user.reset_link_created' && event.detail['by'] === 'email'),
    );
  }

  const ask = (email: string, ip = '198.51.100.20') => requestRecovery(deps, { email, ip, locale: 'en' });
  const forUser = async (user: UserRecord) => (await recoveryMail()).filter((message) => message.values['username'] === user.username);

  it('answers the same whether the address has an account or not, and mails a link only to an enabled account with it', async () => {
    const ada = await world.addUser({ username: 'ada', email: 'ada@example.com' });
    const gone = await world.addUser({ username: 'gone', email: 'gone@example.com', disabled: true });
    for (const [typed, email] of [
      ['  Ada@Example.com ', 'Ada@Example.com'],
      ['gone@example.com', 'gone@example.com'],
      ['nobody@example.com', 'nobody@example.com'],
    ]) {
      assert.deepEqual(await ask(typed!), { kind: 'sent', email }, `${typed}: the same answer`);
    }
    const [forAda, ...more] = await forUser(ada);
    assert.deepEqual([forAda?.kind, forAda?.to.address, more.length], ['recovery', 'ada@example.com', 0]);
    assert.deepEqual(await forUser(gone), [], 'none for a disabled account');
    assert.equal((await recoveryMail()).length, 1, 'none for an address of no account');

    // The link resets the password, once.
    const link = new URL(String(forAda!.values['link']));
    assert.equal(link.origin, new URL(FLOW_ISSUER).origin, 'built from the issuer');
    const token = link.searchParams.get('token')!;
    assert.equal((await resetPassword({ ...deps, passwords: world.passwords }, token, 'a brand new passphrase', '198.51.100.20')).kind, 'done');
    assert.deepEqual(await resetPassword({ ...deps, passwords: world.passwords }, token, 'another new passphrase', '198.51.100.20'), {
      kind: 'invalid_link',
    });
  });

  it("keeps a person's mailed link live when someone asks for theirs again: only using one ends the others", async () => {
    world.clock.advance(3600 * 1000);
    const bob = await world.addUser({ username: 'bob', email: 'bob@example.com' });
    assert.equal((await ask('bob@example.com', '198.51.100.21')).kind, 'sent');
    const [own] = await forUser(bob);
    // Someone else, elsewhere, asks for Bob's address twice: each link goes to Bob's mailbox too.
    for (const _ of [1, 2]) assert.equal((await ask('bob@example.com', '203.0.113.99')).kind, 'sent');
    const links = (await forUser(bob)).map((message) => new URL(String(message.values['link'])).searchParams.get('token')!);
    assert.equal(links.length, 3);
    const tokenOf = (message: MailMessage | undefined) => new URL(String(message!.values['link'])).searchParams.get('token')!;
    assert.equal((await resetPassword({ ...deps, passwords: world.passwords }, tokenOf(own), 'bob picks a new passphrase', '198.51.100.21')).kind, 'done');
    for (const token of links.slice(1))
      assert.equal(
        (await resetPassword({ ...deps, passwords: world.passwords }, token, 'another passphrase here', '203.0.113.99')).kind,
        'invalid_link',
        'used once: the others end',
      );
  });

  it('refuses an address that cannot take mail, and is not offered without a mail server', async () => {
    for (const address of ['not an address', 'ada@example.com\nBcc: all@example.com', '']) assert.deepEqual(await ask(address), { kind: 'invalid' }, address);
    assert.deepEqual(await requestRecovery({ ...deps, mail: undefined }, { email: 'ada@example.com', ip: '198.51.100.20', locale: 'en' }), {
      kind: 'unavailable',
    });
  });

  it(`counts every request from one network address, ${PER_ADDRESS} an hour, found or not, then tells how long to wait`, async () => {
    const ip = '203.0.113.50';
    for (let i = 0; i < PER_ADDRESS; i++) assert.equal((await ask(`someone${i}@example.com`, ip)).kind, 'sent');
    const limited = await ask('someone-else@example.com', ip);
    assert.equal(limited.kind, 'limited');
    if (limited.kind === 'limited') assert.ok(limited.retryAfterSeconds > 0 && limited.retryAfterSeconds <= 3600);
    assert.equal((await ask('someone-else@example.com', '203.0.113.51')).kind, 'sent', 'another address has its own budget');
    world.clock.advance(3600 * 1000);
    assert.equal((await ask('someone-else@example.com', ip)).kind, 'sent', 'an hour later');
  });

  it('counts the requests for one e-mail address, in any case, under a counter that names no one: the database keeps no address asked for', async () => {
    world.clock.advance(3600 * 1000);
    for (const email of ['Eve@Example.com', 'eve@example.com']) assert.equal((await ask(email, '203.0.113.60')).kind, 'sent');
    const open = await world.store.rateLimits.listOpen('recovery:', world.clock.now(), 100);
    assert.deepEqual(
      open.filter((window) => window.key.startsWith(RECOVERY_KEYS.email)).map((window) => [window.key, window.hits]),
      [[`${RECOVERY_KEYS.email}${hashSecret('eve@example.com')}`, 2]],
      'one counter, under the hash of the address lower-cased',
    );
    assert.deepEqual(
      open.filter((window) => window.key.toLowerCase().includes('eve@example.com')),
      [],
      'no counter names the address',
    );
  });
});
