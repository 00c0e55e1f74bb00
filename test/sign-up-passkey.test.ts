/**
 * Sign-up with a passkey over HTTP, with a software authenticator (helpers/authenticator.ts):
 * with TESSERA_SIGN_UP_VERIFY=later the account is made at once with the passkey and no
 * password, the browser signed in to it, its address unverified until the link; the passkey
 * then signs in. An answer made
 * for another account id, another origin or a used challenge makes nothing. Someone who signs
 * up first with another person's address and a passkey loses the passkey once that person sets
 * a password through the link mailed to the address (pre-hijacked accounts). With the link
 * first, the link is used only in the browser that signed up, where the passkey is. The real
 * browser path is test/sign-up-passkey-browser.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { verifyPassword } from '../src/core/password.ts';
import { assertOtherOriginSpendsChallenge, SoftwarePasskey } from './helpers/authenticator.ts';
import { FormBrowser, type Page, pageText } from './helpers/browser.ts';
import { startWithMail } from './helpers/fixtures.ts';
import type { TestSmtpServer } from './helpers/smtp.ts';
import { closeAll, type TestServer } from './helpers/server.ts';

describe('sign-up with a passkey', () => {
  let smtp: TestSmtpServer;
  let server: TestServer;

  before(async () => {
    ({ server, smtp } = await startWithMail({
      issuerHost: 'localhost',
      env: {
        TESSERA_SIGN_UP: 'open',
        TESSERA_SIGN_UP_VERIFY: 'later',
        TESSERA_SIGN_UP_PER_EMAIL: '20',
      },
    }));
  });
  after(() => closeAll(server, smtp));

  async function options(browser: FormBrowser, form: Page, fields: Record<string, string>): Promise<{ status: number; json: Record<string, any> }> {
    const csrf = browser.form(form, '/sign-up').fields['csrf_token']!;
    const answer = await browser.request('/sign-up/passkey/options', { form: { csrf_token: csrf, ...fields } });
    return { status: answer.status, json: JSON.parse(answer.html) };
  }

  it('makes the account at once with the passkey and no password, its address unverified, and the passkey signs in', async () => {
    const browser = new FormBrowser(server.url);
    const form = await browser.request('/sign-up');
    assert.match(form.html, /id="passkey-sign-up-button"/);
    const fields = { username: 'ada', name: 'Ada Lovelace', email: 'ada@example.com' };
    const asked = await options(browser, form, fields);
    assert.equal(asked.status, 200);
    assert.equal(asked.json['rp']['id'], 'localhost');
    assert.equal(asked.json['authenticatorSelection']['residentKey'], 'required');
    const passkey = new SoftwarePasskey();
    const response = passkey.register(asked.json, server.url);
    const mailed = smtp.received.length;
    const answer = await browser.submit(form, '/sign-up', { ...fields, response: JSON.stringify(response), passkey_user: asked.json['user']['id'] });
    assert.equal(answer.status, 200, answer.html.slice(0, 800));

    const user = await server.store.users.findByUsername('ada');
    assert.ok(user, 'made at once');
    assert.equal(user.emailVerified, false);
    assert.equal(Buffer.from(asked.json['user']['id'], 'base64url').toString('utf8'), user.id, 'the user handle is the sub');
    assert.equal(await verifyPassword('a long enough password', user.passwordHash), false);
    const [stored] = await server.store.passkeys.listForUser(user.id);
    assert.equal(stored?.id, passkey.id);
    assert.equal((await browser.request('/account')).status, 200, 'the browser that made it is signed in to it');

    // The passkey signs in.
    const signIn = new FormBrowser(server.url);
    const login = await signIn.follow(await signIn.request('/account'));
    const signedIn = await signIn.passkeySignIn(login, (options) => passkey.authenticate(options, server.url));
    assert.equal(signedIn.status, 303, signedIn.html.slice(0, 500));
    // No password to give as the current one: the account page says how to set one instead.
    const account = await signIn.follow(signedIn);
    assert.match(account.html, /Your account has no password: you sign in with a passkey, or through another service\./);
    assert.match(account.html, /To set one, use “Forgot password\?” on the sign-in page/);
    assert.doesNotMatch(account.html, /name="current_password"/);

    // Its address is verified when the link is followed, in one step in the browser signed in at sign-up.
    const link = /(http\S+\/sign-up\/verify\?token=\S+)/.exec((await smtp.next(mailed + 1)).parsed.text ?? '')?.[1];
    assert.ok(link);
    const confirm = await browser.request(link);
    assert.equal((await browser.submit(confirm, '/sign-up/verify', {})).status, 200);
    assert.equal((await server.store.users.findByUsername('ada'))?.emailVerified, true);
  });

  it('makes nothing from an answer for another account id, from another origin, or to a used challenge', async () => {
    const browser = new FormBrowser(server.url);
    const form = await browser.request('/sign-up');
    const fields = { username: 'grace', name: 'Grace Hopper', email: 'grace@example.com' };
    const asked = await options(browser, form, fields);
    const other = await options(browser, form, { ...fields, username: 'grace2' });
    const passkey = new SoftwarePasskey();

    const swapped = await browser.submit(form, '/sign-up', {
      ...fields,
      ...passkey.newAccountFields(asked.json, server.url),
      passkey_user: other.json['user']['id'],
    });
    assert.equal(swapped.status, 400, 'the challenge was given for another account id');
    assert.match(swapped.html, /The passkey could not be made\. Try again, or choose a password\./);

    await assertOtherOriginSpendsChallenge((answer) => browser.submit(form, '/sign-up', { ...fields, ...answer }), other.json, server.url);
    assert.equal(await server.store.users.findByUsername('grace'), null);

    const garbage = await browser.submit(form, '/sign-up', { ...fields, response: 'not json', passkey_user: 'x' });
    assert.equal(garbage.status, 400);
  });

  it('refuses the options for a bad or taken username with the words the form would say', async () => {
    await server.addUser({ username: 'taken' });
    const browser = new FormBrowser(server.url);
    const form = await browser.request('/sign-up');
    const taken = await options(browser, form, { username: 'taken', name: 'Someone', email: 'someone@example.com' });
    assert.equal(taken.status, 409);
    assert.deepEqual(taken.json, { field: 'username', error: 'That username is taken. Choose another.' });
    const bad = await options(browser, form, { username: 'no spaces', name: 'Someone', email: 'someone@example.com' });
    assert.equal(bad.status, 400);
    assert.equal(bad.json['field'], 'username');
    const forged = await browser.request('/sign-up/passkey/options', { form: { csrf_token: 'wrong', username: 'x', name: 'x', email: 'x@example.com' } });
    assert.notEqual(forged.status, 200, 'a request without this browser’s CSRF token');
  });

  it("removes an attacker's passkey from an account made with someone else's address once its owner sets a password through the link mailed to it", async () => {
    const before = smtp.received.length;
    /** The `count`-th message since this test began, which must be to Lin, about `subject`: its text. */
    const mail = async (count: number, subject: string) => {
      const message = await smtp.next(before + count);
      assert.deepEqual([message.to, message.parsed.subject], [['lin@example.com'], subject]);
      return message.parsed.text ?? '';
    };

    // The attacker signs up first with Lin's address and a passkey: the account is made at once, unverified.
    const attacker = new FormBrowser(server.url);
    const form = await attacker.request('/sign-up');
    const fields = { username: 'mallory', name: 'Lin', email: 'lin@example.com' };
    const asked = await options(attacker, form, fields);
    const passkey = new SoftwarePasskey();
    const made = await attacker.submit(form, '/sign-up', { ...fields, ...passkey.newAccountFields(asked.json, server.url) });
    assert.equal(made.status, 200, made.html.slice(0, 800));
    const account = (await server.store.users.findByUsername('mallory'))!;
    assert.equal((await server.store.passkeys.listForUser(account.id)).length, 1);
    await mail(1, 'Confirm your e-mail address for Tessera');

    // Lin signs up later: the address has an account, and the notice names it and "Forgot password?".
    const lin = new FormBrowser(server.url);
    const signUpForm = await lin.request('/sign-up');
    assert.equal(
      (await lin.submit(signUpForm, '/sign-up', { username: 'lin', name: 'Lin', email: 'lin@example.com', password: 'lin picks a password' })).status,
      200,
    );
    assert.match(await mail(2, 'You already have an account on Tessera'), /which already has one: mallory\./);

    const forgot = await lin.request('/forgot-password');
    assert.equal((await lin.submit(forgot, '/forgot-password', { email: 'lin@example.com' })).status, 200);
    const link = /(https?:\/\/\S+\/reset-password\?token=\S+)/.exec(await mail(3, 'Set a new password for Tessera'))?.[1];
    assert.ok(link);
    const resetForm = await lin.request(link);
    const done = await lin.submit(resetForm, '/reset-password', { new_password: 'lin has her own password now' });
    assert.equal(done.status, 200);
    assert.match(done.html, /Password changed/);
    assert.match(
      done.html,
      /Your e-mail address had not been confirmed before, so someone else could have set up this account with it\. To be safe, its passkeys, one-time codes, sign-ins through other services and approvals of apps were removed\. You can add new ones on your account page\./,
    );

    assert.equal((await server.store.users.get(account.id))?.emailVerified, true, 'Lin received the link: the address is hers, verified');
    assert.deepEqual(await server.store.passkeys.listForUser(account.id), []);
    const again = new FormBrowser(server.url);
    const login = await again.follow(await again.request('/account'));
    const refused = await again.passkeySignIn(login, (challenge) => passkey.authenticate(challenge, server.url));
    assert.notEqual(refused.status, 303, "the attacker's passkey signs in no more");
  });
});

describe('sign-up with a passkey, the link first (TESSERA_SIGN_UP_VERIFY=first)', () => {
  let smtp: TestSmtpServer;
  let server: TestServer;

  before(async () => {
    ({ server, smtp } = await startWithMail({ issuerHost: 'localhost', env: { TESSERA_SIGN_UP: 'open', TESSERA_SIGN_UP_PER_EMAIL: '20' } }));
  });
  after(() => closeAll(server, smtp));

  it('sends another browser back to the one that signed up, with no button, and makes the account there', async () => {
    const laptop = new FormBrowser(server.url);
    const form = await laptop.request('/sign-up');
    const fields = { username: 'kit', name: 'Kit', email: 'kit@example.com' };
    const csrf = laptop.form(form, '/sign-up').fields['csrf_token']!;
    const asked = JSON.parse((await laptop.request('/sign-up/passkey/options', { form: { csrf_token: csrf, ...fields } })).html);
    const passkey = new SoftwarePasskey();
    assert.equal((await laptop.submit(form, '/sign-up', { ...fields, ...passkey.newAccountFields(asked, server.url) })).status, 200);
    const link = /(http\S+\/sign-up\/verify\?token=\S+)/.exec((await smtp.next(1)).parsed.text ?? '')?.[1];
    assert.ok(link);

    // Another browser: the passkey is not there, so no button, and the page says where to open the link.
    const phone = new FormBrowser(server.url);
    const elsewhere = await phone.request(link);
    assert.equal(elsewhere.status, 200);
    assert.match(
      pageText(elsewhere.html),
      /The account kit is to be made with a passkey, which is kept on the device and in the browser where you signed up\. Open this link there to confirm it\./,
    );
    assert.doesNotMatch(elsewhere.html, /action="\/sign-up\/verify"/, 'no confirm button');
    // A confirmation posted anyway makes nothing and leaves the link.
    const phoneCsrf = phone.form(await phone.request('/sign-up'), '/sign-up').fields['csrf_token']!;
    const token = new URL(link).searchParams.get('token')!;
    const forced = await phone.request('/sign-up/verify', { form: { csrf_token: phoneCsrf, token, password: '' } });
    assert.equal(forced.status, 403);
    assert.match(pageText(forced.html), /Open this link there to confirm it\./);
    assert.equal(await server.store.users.findByUsername('kit'), null);

    // The browser that signed up: its button, one click, and the account has the passkey.
    const confirm = await laptop.request(link);
    assert.doesNotMatch(confirm.html, /type="password"/);
    assert.equal((await laptop.submit(confirm, '/sign-up/verify', {})).status, 200);
    const user = await server.store.users.findByUsername('kit');
    assert.equal(user?.emailVerified, true);
    assert.equal((await server.store.passkeys.listForUser(user!.id))[0]?.id, passkey.id);
  });
});
