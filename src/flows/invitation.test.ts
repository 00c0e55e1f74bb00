/**
 * Accepting an invitation without HTTP: the account made with the invited address (verified),
 * console role, app and organization, once, before the link expires; with a password or with
 * a passkey whose challenge is bound to the invitation; what is refused, and under which
 * name. test/invitations.test.ts follows the same through the pages and the mail.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { verifyPassword } from '../core/password.ts';
import { SoftwarePasskey } from '../../test/helpers/authenticator.ts';
import { FLOW_ISSUER, flowWorld, type FlowWorld } from '../../test/helpers/flows.ts';
import { acceptInvitation, invitationPasskeyOptions } from './invitation.ts';
import { inviteUser, INVITATION_TTL_RANGE } from './manage/invitations.ts';
import { addOrganization } from './manage/organizations.ts';
import type { SignUpDeps } from './sign-up.ts';

const PASSWORD = 'correct horse battery staple';
const BROWSER = 'the-invited-browser';

describe('accepting an invitation', () => {
  let world: FlowWorld;
  let deps: SignUpDeps;
  let invited = 0;

  before(async () => {
    world = await flowWorld();
    deps = world.deps;
  });
  after(() => world.close());

  /** A fresh invitation (to a fresh address unless given) and its link's token. */
  async function invitation(input: Partial<Parameters<typeof inviteUser>[1]> = {}): Promise<{ token: string; email: string }> {
    invited += 1;
    const made = await inviteUser(world.manage, { email: `invited${invited}@example.com`, ...input });
    return { token: new URL(made.url).searchParams.get('token')!, email: made.email };
  }

  const accept = (token: string, fields: Partial<Parameters<typeof acceptInvitation>[1]> = {}) => {
    invited += 1;
    return acceptInvitation(deps, {
      token,
      username: `newcomer${invited}`,
      name: 'New Comer',
      password: PASSWORD,
      ip: '198.51.100.4',
      locale: 'en',
      ...fields,
    });
  };

  it('makes the account with the address, role and app the invitation names, the address verified, once', async () => {
    const { client } = await world.addClient({ client_name: 'Garden', redirect_uris: ['https://garden.example/cb'] });
    const { token, email } = await invitation({ role: 'support', clientId: client.id });
    const done = await accept(token, { username: '  Ada.Lovelace ', name: 'Ada Lovelace' });
    assert.equal(done.kind, 'done');
    if (done.kind !== 'done') return;
    assert.deepEqual(
      [done.user.username, done.user.email, done.user.emailVerified, done.user.role, done.user.name, done.clientId],
      ['ada.lovelace', email, true, 'support', 'Ada Lovelace', client.id],
    );
    assert.ok(await verifyPassword(PASSWORD, (await world.store.users.get(done.user.id))!.passwordHash), 'the password chosen');
    const created = (await world.store.events.list({ userId: done.user.id, limit: 10 })).find((event) => event.type === 'user.created');
    assert.deepEqual(created?.detail, { by: 'invitation', role: 'support' });
    assert.deepEqual(await accept(token), { kind: 'invalid_link' }, 'one account a link');
  });

  it('makes the account a member of the organization it was invited into, in the same transaction', async () => {
    const organization = await addOrganization(world.manage, { name: 'Analytical Engines' });
    const { token } = await invitation({ organization: organization.id, organizationRole: 'admin' });
    const done = await accept(token);
    assert.equal(done.kind, 'done');
    if (done.kind !== 'done') return;
    const members = await world.store.organizations.members(organization.id);
    assert.deepEqual(
      members.map((member) => [member.userId, member.role]),
      [[done.user.id, 'admin']],
    );
  });

  it('refuses what it must, under the name the page shows, and uses the link up for none of them', async () => {
    const { token } = await invitation();
    const taken = await world.addUser({ username: 'taken' });
    const cases: [string, Partial<Parameters<typeof acceptInvitation>[1]>, unknown][] = [
      ['a username with a space', { username: 'ada lovelace' }, { kind: 'invalid', field: 'username' }],
      ['no name', { name: '   ' }, { kind: 'invalid', field: 'name' }],
      ['a name of control characters', { name: '\r\n\t' }, { kind: 'invalid', field: 'name' }],
      ['a name of 201 characters', { name: 'x'.repeat(201) }, { kind: 'invalid', field: 'name' }],
      ['a password too short', { password: 'short' }, { kind: 'invalid', field: 'password' }],
      ["someone else's username, in capitals", { username: taken.username.toUpperCase() }, { kind: 'taken' }],
    ];
    for (const [what, fields, expected] of cases) assert.deepEqual(await accept(token, fields), expected, what);
    assert.equal((await accept(token)).kind, 'done', 'the link was still good');
  });

  it('refuses a link made up, too long, expired, or whose address an account took meanwhile', async () => {
    assert.deepEqual(await accept('made-up'), { kind: 'invalid_link' });
    assert.deepEqual(await accept('x'.repeat(129)), { kind: 'invalid_link' });
    const { token } = await invitation({ ttlSeconds: INVITATION_TTL_RANGE.min });
    world.clock.advance(INVITATION_TTL_RANGE.min * 1000);
    assert.deepEqual(await accept(token), { kind: 'invalid_link' }, 'expired');
    const { token: later, email } = await invitation();
    await world.addUser({ username: 'quicker', email });
    assert.deepEqual(await accept(later), { kind: 'invalid_link' }, 'the address is one account’s');
  });

  it('makes one account of one link, whoever of several concurrent acceptances wins', async () => {
    const { token } = await invitation();
    const outcomes = await Promise.all(Array.from({ length: 4 }, () => accept(token)));
    assert.deepEqual(outcomes.map((outcome) => outcome.kind).sort(), ['done', 'invalid_link', 'invalid_link', 'invalid_link']);
  });

  it('makes the account with a passkey answered for its own options, and refuses one made for another invitation', async () => {
    const first = await invitation();
    const second = await invitation();
    const origin = new URL(FLOW_ISSUER).origin;
    /** The options for `token`'s page and a new authenticator's answer to them, as the page posts it. */
    const answered = async (token: string) => {
      const asked = await invitationPasskeyOptions(deps, { token, username: 'grace', name: 'Grace Hopper' }, BROWSER);
      assert.equal(asked.kind, 'options');
      const options = JSON.parse(JSON.stringify(asked.kind === 'options' ? asked.options : null));
      const passkey = new SoftwarePasskey();
      const fields = passkey.newAccountFields(options, origin);
      // As the page's form posts it: the user handle, base64url, which the route decodes to the account id.
      const accountId = Buffer.from(fields.passkey_user, 'base64url').toString('utf8');
      return { passkey, options, answer: { accountId, response: fields.response, browser: BROWSER, name: 'Phone' } };
    };
    const { passkey, options, answer } = await answered(first.token);
    // The answer on the other invitation's page: its challenge is bound to the first, so there it is no challenge at all.
    assert.deepEqual(await accept(second.token, { username: 'grace', name: 'Grace Hopper', passkey: answer, password: '' }), {
      kind: 'passkey',
      problem: 'challenge',
    });
    const done = await accept(first.token, { username: 'grace', name: 'Grace Hopper', passkey: answer, password: '' });
    assert.equal(done.kind, 'done', JSON.stringify(done));
    if (done.kind !== 'done') return;
    assert.equal(Buffer.from(options.user.id, 'base64url').toString('utf8'), done.user.id, 'the account is the one the passkey was made for');
    assert.deepEqual(
      (await world.store.passkeys.listForUser(done.user.id)).map((made) => made.id),
      [passkey.id],
    );
    assert.equal((await world.store.users.get(done.user.id))?.passwordHash, '!', 'no password');
    assert.equal((await accept(second.token, { username: 'grace', name: 'Grace Hopper' })).kind, 'taken');
  });
});
