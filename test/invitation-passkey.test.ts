/**
 * Accepting an invitation with a passkey over HTTP, with a software authenticator
 * (helpers/authenticator.ts): the account is made with the passkey and no password, in the
 * transaction that uses the invitation up, a member of the organization it names; the passkey
 * then signs in. The challenge is bound to this browser, the account id its options named and
 * the invitation: an answer for another account id, from another browser, posted with another
 * invitation, from another origin or to a used challenge makes nothing. The real browser path
 * is test/organizations-browser.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { verifyPassword } from '../src/core/password.ts';
import { inviteUser } from '../src/flows/manage/invitations.ts';
import { addOrganization } from '../src/flows/manage/organizations.ts';
import { assertOtherOriginSpendsChallenge, SoftwarePasskey } from './helpers/authenticator.ts';
import { FormBrowser, type Page } from './helpers/browser.ts';
import { manageDeps } from './helpers/manage.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

describe('accepting an invitation with a passkey', () => {
  let server: TestServer;
  let organizationId: string;

  before(async () => {
    // A passkey's RP ID must be a domain: the issuer is http://localhost:<port>.
    server = await startTestServer({ issuerHost: 'localhost', env: { TESSERA_SIGN_UP: 'invite' } });
    organizationId = (await addOrganization(manageDeps(server), { name: 'Globex' })).id;
  });
  after(async () => {
    await server.close();
  });

  async function invite(email: string): Promise<string> {
    return (await inviteUser(manageDeps(server), { email, organization: 'Globex', organizationRole: 'admin' })).url;
  }

  async function options(browser: FormBrowser, page: Page, fields: Record<string, string>): Promise<{ status: number; json: Record<string, any> }> {
    const form = browser.form(page, '/invitation').fields;
    const answer = await browser.request('/invitation/passkey/options', { form: { csrf_token: form['csrf_token']!, token: form['token']!, ...fields } });
    return { status: answer.status, json: JSON.parse(answer.html) };
  }

  it('makes the account with the passkey and no password, a member of the organization, the link used up; the passkey signs in', async () => {
    const link = await invite('hedy@globex.example');
    const browser = new FormBrowser(server.url);
    const page = await browser.request(link);
    assert.equal(page.status, 200);
    assert.match(page.html, /id="passkey-sign-up-button"/);
    assert.match(page.html, /id="password"/, 'the password stays, as the alternative');
    const fields = { username: 'hedy', name: 'Hedy Lamarr' };
    const asked = await options(browser, page, fields);
    assert.equal(asked.status, 200, JSON.stringify(asked.json));
    assert.equal(asked.json['rp']['id'], 'localhost');
    assert.equal(asked.json['user']['name'], 'hedy');
    assert.equal(asked.json['authenticatorSelection']['residentKey'], 'required');
    const passkey = new SoftwarePasskey();
    const done = await browser.submit(page, '/invitation', {
      ...fields,
      ...passkey.newAccountFields(asked.json, server.url),
    });
    assert.equal(done.status, 200, done.html.slice(0, 800));

    const user = await server.store.users.findByUsername('hedy');
    assert.ok(user);
    assert.equal(user.email, 'hedy@globex.example');
    assert.equal(user.emailVerified, true, 'the link went to the address');
    assert.equal(Buffer.from(asked.json['user']['id'], 'base64url').toString('utf8'), user.id, 'the user handle is the sub');
    assert.equal(await verifyPassword('', user.passwordHash), false, 'no password');
    const [stored] = await server.store.passkeys.listForUser(user.id);
    assert.equal(stored?.id, passkey.id);
    assert.deepEqual(
      (await server.store.organizations.membershipsOf(user.id)).map((membership) => [membership.organization.id, membership.role]),
      [[organizationId, 'admin']],
    );
    const [added] = await server.store.events.list({ type: 'passkey.added', limit: 1 });
    assert.equal(added?.detail?.['by'], 'invitation');

    // Used up: the link leads nowhere now.
    assert.equal((await browser.request(link)).status, 400);

    // The passkey signs in.
    const signIn = new FormBrowser(server.url);
    const login = await signIn.follow(await signIn.request('/account'));
    const signedIn = await signIn.passkeySignIn(login, (options) => passkey.authenticate(options, server.url));
    assert.equal(signedIn.status, 303, signedIn.html.slice(0, 500));
    assert.match((await signIn.follow(signedIn)).html, /Your account has no password/);
  });

  it('makes nothing from an answer for another account id, another browser, another invitation, another origin, or a used challenge', async () => {
    const link = await invite('grace@globex.example');
    const otherLink = await invite('other@globex.example');
    const browser = new FormBrowser(server.url);
    const page = await browser.request(link);
    const fields = { username: 'grace', name: 'Grace Hopper' };
    const asked = await options(browser, page, fields);
    const other = await options(browser, page, { ...fields, username: 'grace2' });
    assert.equal(other.status, 200);
    const passkey = new SoftwarePasskey();
    const refused = /The passkey could not be made\. Try again, or choose a password\./;

    const swapped = await browser.submit(page, '/invitation', {
      ...fields,
      ...passkey.newAccountFields(asked.json, server.url),
      passkey_user: other.json['user']['id'],
    });
    assert.equal(swapped.status, 400, 'the challenge was given for another account id');
    assert.match(swapped.html, refused);

    // The same answer, from a browser that did not ask for it.
    const stranger = new FormBrowser(server.url);
    const strangerPage = await stranger.request(link);
    const elsewhere = await stranger.submit(strangerPage, '/invitation', {
      ...fields,
      ...passkey.newAccountFields(other.json, server.url),
    });
    assert.equal(elsewhere.status, 400, 'another browser');
    assert.match(elsewhere.html, refused);

    // Options asked on one invitation's page, the answer posted with another's token.
    const third = await options(browser, page, { ...fields, username: 'grace3' });
    const otherPage = await browser.request(otherLink);
    const crossed = await browser.submit(otherPage, '/invitation', {
      ...fields,
      username: 'grace3',
      ...passkey.newAccountFields(third.json, server.url),
    });
    assert.equal(crossed.status, 400, 'the challenge was given for another invitation');
    assert.match(crossed.html, refused);

    const fourth = await options(browser, page, { ...fields, username: 'grace4' });
    await assertOtherOriginSpendsChallenge((answer) => browser.submit(page, '/invitation', { ...fields, ...answer }), fourth.json, server.url);

    const garbage = await browser.submit(page, '/invitation', { ...fields, response: 'not json', passkey_user: 'x' });
    assert.equal(garbage.status, 400);
    for (const username of ['grace', 'grace2', 'grace3', 'grace4']) assert.equal(await server.store.users.findByUsername(username), null, username);

    // Both invitations are still good: a password makes the account.
    const withPassword = await browser.submit(page, '/invitation', { ...fields, password: 'compiler pioneer' });
    assert.equal(withPassword.status, 200, withPassword.html.slice(0, 800));
    const grace = await server.store.users.findByUsername('grace');
    assert.ok(grace);
    assert.equal(await verifyPassword('compiler pioneer', grace.passwordHash), true);
    assert.equal((await browser.request(otherLink)).status, 200);
  });

  it('refuses the options for a bad or taken username, a dead link, or another browser’s CSRF token, with the words the form would say', async () => {
    await server.addUser({ username: 'taken' });
    const browser = new FormBrowser(server.url);
    const page = await browser.request(await invite('someone@globex.example'));
    const taken = await options(browser, page, { username: 'taken', name: 'Someone' });
    assert.equal(taken.status, 409);
    assert.deepEqual(taken.json, { field: 'username', error: 'That username is taken. Choose another.' });
    const bad = await options(browser, page, { username: 'no spaces', name: 'Someone' });
    assert.equal(bad.status, 400);
    assert.equal(bad.json['field'], 'username');
    const dead = await options(browser, page, { token: 'no-such-invitation', username: 'someone', name: 'Someone' });
    assert.equal(dead.status, 400);
    assert.equal(dead.json['field'], null);
    const forged = await browser.request('/invitation/passkey/options', {
      form: { csrf_token: 'wrong', token: browser.form(page, '/invitation').fields['token']!, username: 'x', name: 'x' },
    });
    assert.notEqual(forged.status, 200, 'a request without this browser’s CSRF token');
  });

  it('offers no passkey where the issuer is an address, not a domain name', async () => {
    const plain = await startTestServer();
    try {
      const link = (await inviteUser(manageDeps(plain), { email: 'ip@example.com' })).url;
      const browser = new FormBrowser(plain.url);
      const page = await browser.request(link);
      assert.equal(page.status, 200);
      assert.doesNotMatch(page.html, /passkey-sign-up-button/);
      const csrf = browser.form(page, '/invitation').fields['csrf_token']!;
      assert.equal((await browser.request('/invitation/passkey/options', { form: { csrf_token: csrf, username: 'ip', name: 'Ip' } })).status, 404);
    } finally {
      await plain.close();
    }
  });
});
