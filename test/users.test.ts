/**
 * Operators manage users from the command line (`tessera user …`): a disabled or removed
 * user is signed out and their tokens stop working at once on every instance; a reset link
 * sets a password once; a person changes their own password at /account.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FormBrowser } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { text } from './helpers/device.ts';
import { deviceSignIn, OFFLINE_SCOPES, refreshRaw, signInRaw, withRefresh } from './helpers/lifecycle.ts';
import { newUserRecord } from '../src/store/types.ts';
import { basic, postForm, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';

describe('tessera user: operators manage accounts', () => {
  let dir: string;
  let database: string;
  let one: TestServer;
  let two: TestServer;
  let app: TestClient;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-users-'));
    database = join(dir, 'tessera.db');
    // Two instances sharing one store, as behind a load balancer.
    one = await startTestServer({ database });
    two = await startTestServer({ database });
    app = await one.addClient({ name: 'Photo Printer', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() });
  });
  after(async () => {
    await one.close();
    await two.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const cli = (args: string[], stdin = '') => runTessera(args, { TESSERA_DATABASE: database, TESSERA_ISSUER: one.url }, stdin);
  const introspect = async (server: TestServer, token: string) =>
    (await postForm(`${server.url}/oauth/introspect`, { token }, { authorization: basic(app.clientId, app.clientSecret) })).body['active'];

  /** A browser signed in at `server`, showing /account. */
  async function signedInBrowser(server: TestServer, user: TestUser): Promise<FormBrowser> {
    const browser = new FormBrowser(server.url);
    const page = await browser.signIn(await browser.follow(await browser.request('/login?return_to=%2Faccount')), user);
    assert.equal(page.status, 200);
    assert.match(page.html, /Connected apps and devices/);
    return browser;
  }

  // Both instances read sessions, users and grants from the store on every request; the
  // same with two processes on PostgreSQL: test/multi-instance.test.ts.
  it('disabling a user ends their browser session and their refresh token and introspection fail at once', async () => {
    const user = await one.addUser({ username: 'mallory' });
    const tokens = await signInRaw(one, app, user, 'openid offline_access');
    // Signed in at the other instance: sessions live in the shared store.
    const browser = await signedInBrowser(two, user);
    assert.equal(await introspect(one, tokens['access_token'] as string), true);

    const disabled = await cli(['user', 'disable', 'mallory']);
    assert.equal(disabled.code, 0, disabled.stderr);
    assert.match(disabled.stdout, /Disabled mallory/);

    const refreshed = await refreshRaw(one, app, tokens['refresh_token'] as string);
    assert.equal(refreshed.status, 400);
    assert.equal(refreshed.body['error'], 'invalid_grant');
    assert.equal(await introspect(one, tokens['access_token'] as string), false);
    assert.equal(await introspect(one, tokens['refresh_token'] as string), false);
    const account = await browser.request('/account');
    assert.equal(account.status, 303, 'the session is gone: sent to sign in');
    assert.equal(account.location, '/login?return_to=%2Faccount');

    // Enabled again: the old session stays ended, and the person signs in afresh.
    assert.equal((await cli(['user', 'enable', 'mallory'])).code, 0);
    assert.equal((await browser.request('/account')).status, 303);
    // ...and the tokens issued before stay dead: their grant was revoked, not paused.
    assert.equal(await introspect(one, tokens['access_token'] as string), false);
    const userinfo = await fetch(`${one.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${tokens['access_token'] as string}` } });
    assert.equal(userinfo.status, 401);
    assert.equal((await refreshRaw(one, app, tokens['refresh_token'] as string)).body['error'], 'invalid_grant');
    await signedInBrowser(two, user);
    const listed = JSON.parse((await cli(['user', 'show', 'mallory', '--json'])).stdout) as Record<string, unknown>;
    assert.equal(listed['disabled'], false);
    assert.equal((listed['last_sign_in'] as Record<string, unknown>)['ip'], '127.0.0.1');
  });

  it('removing a user ends everything issued to them and their sign-in, and keeps their events', async () => {
    const user = await one.addUser({ username: 'trent' });
    const device = await deviceSignIn(one, app, user);
    const browser = await signedInBrowser(two, user);
    assert.equal((await cli(['user', 'remove', 'trent'])).code, 0);

    assert.equal((await refreshRaw(one, app, device.refresh_token!)).body['error'], 'invalid_grant');
    assert.equal(await introspect(one, device.access_token), false);
    assert.equal((await browser.request('/account')).status, 303);
    const again = new FormBrowser(one.url);
    const login = await again.follow(await again.request('/login'));
    assert.equal((await again.submit(login, '/login', { username: 'trent', password: user.password })).status, 401);
    assert.equal((await cli(['user', 'show', 'trent'])).code, 1);
    const events = JSON.parse((await cli(['events', '--user', 'trent', '--json'])).stdout) as { type: string }[];
    assert.ok(events.some((event) => event.type === 'user.removed'));
    assert.ok(
      events.some((event) => event.type === 'device.approved'),
      'what they did stays on record',
    );
  });

  it('lists, shows and updates users, as text and JSON', async () => {
    await one.addUser({ username: 'grace', name: 'Grace Hopper', email: 'grace@example.com' });
    const list = JSON.parse((await cli(['user', 'list', '--json'])).stdout) as { username: string; email: string | null }[];
    assert.ok(list.some((user) => user.username === 'grace' && user.email === 'grace@example.com'));
    assert.match((await cli(['user', 'list'])).stdout, /^grace$/m);

    const updated = await cli(['user', 'update', 'grace', '--name', 'Rear Admiral Hopper', '--email', '']);
    assert.equal(updated.code, 0, updated.stderr);
    const shown = JSON.parse((await cli(['user', 'show', 'grace', '--json'])).stdout) as Record<string, unknown>;
    assert.equal(shown['name'], 'Rear Admiral Hopper');
    assert.equal(shown['email'], null);
    assert.match((await cli(['user', 'show', 'grace'])).stdout, /name: Rear Admiral Hopper/);
  });

  it('sets the standard claims (OIDC Core §5.1) with user add and update, shows them, and userinfo sends them', async () => {
    const added = await cli(
      [
        'user',
        'add',
        '--username',
        'ada',
        '--password-stdin',
        '--name',
        'Ada Lovelace',
        '--email',
        'ada@example.com',
        '--email-verified',
        '--given-name',
        'Ada',
        '--family-name',
        'Lovelace',
        '--locale',
        'en-GB',
        '--zoneinfo',
        'Europe/London',
        '--picture',
        'https://example.com/ada.png',
      ],
      'ada has a long password\n',
    );
    assert.equal(added.code, 0, added.stderr);
    const ada = { username: 'ada', password: 'ada has a long password', id: '' };
    const tokens = await signInRaw(one, app, ada, 'openid profile email');
    const userinfo = async () =>
      (await fetch(`${one.url}/oauth/userinfo`, { headers: { authorization: `Bearer ${String(tokens['access_token'])}` } })).json() as Promise<
        Record<string, unknown>
      >;
    const before = await userinfo();
    assert.deepEqual(
      { ...before, sub: undefined, updated_at: undefined },
      {
        sub: undefined,
        updated_at: undefined,
        name: 'Ada Lovelace',
        given_name: 'Ada',
        family_name: 'Lovelace',
        preferred_username: 'ada',
        picture: 'https://example.com/ada.png',
        locale: 'en-GB',
        zoneinfo: 'Europe/London',
        email: 'ada@example.com',
        email_verified: true,
      },
    );

    const updated = await cli(['user', 'update', 'ada', '--no-email-verified', '--locale', '', '--given-name', 'Augusta Ada']);
    assert.equal(updated.code, 0, updated.stderr);
    const after = await userinfo();
    assert.equal(after['email_verified'], false);
    assert.equal(after['locale'], undefined, 'cleared: left out, not null (OIDC Core §5.3.2)');
    assert.equal(after['given_name'], 'Augusta Ada');
    assert.ok((after['updated_at'] as number) >= (before['updated_at'] as number));
    const shown = JSON.parse((await cli(['user', 'show', 'ada', '--json'])).stdout) as Record<string, unknown>;
    assert.equal(shown['given_name'], 'Augusta Ada');
    assert.equal(shown['email_verified'], false);
    assert.match(
      (await cli(['user', 'show', 'ada'])).stdout,
      /given name: Augusta Ada\n {2}family name: Lovelace\n {2}email: ada@example\.com \(not verified\)\n {2}locale: -\n {2}time zone: Europe\/London\n/,
    );

    for (const [option, value] of [
      ['--locale', 'English'],
      ['--zoneinfo', 'Mars/Olympus'],
      ['--picture', 'javascript:alert(1)'],
    ]) {
      const refused = await cli(['user', 'update', 'ada', option!, value!]);
      assert.equal(refused.code, 2, `${option} ${value}`);
      assert.match(refused.stderr, new RegExp(`^tessera: ${option} "`), refused.stderr);
    }
    assert.equal((await cli(['user', 'update', 'ada', '--email-verified', '--no-email-verified'])).code, 2);
  });

  it('gives a person a console role with user update --role, shows it, records it, takes it away with none, and refuses an unknown role', async () => {
    await one.addUser({ username: 'hedy', name: 'Hedy Lamarr' });
    const given = await cli(['user', 'update', 'hedy', '--role', 'support']);
    assert.equal(given.code, 0, given.stderr);
    assert.equal(given.stdout, 'Updated hedy. Their console role: support.\n');
    assert.equal((JSON.parse((await cli(['user', 'show', 'hedy', '--json'])).stdout) as Record<string, unknown>)['role'], 'support');
    assert.match((await cli(['user', 'show', 'hedy'])).stdout, /^ {2}console role: support$/m);
    assert.match((await cli(['user', 'list'])).stdout, /^hedy {2}\(console: support\)$/m);
    const typo = await cli(['user', 'update', 'hedy', '--role', 'superuser']);
    assert.equal(typo.code, 2);
    assert.match(typo.stderr, /^tessera: --role superuser: one of admin, support, viewer, or none/);
    assert.equal((await cli(['user', 'update', 'hedy', '--role', 'none'])).stdout, 'Updated hedy. They have no console role.\n');
    assert.equal((JSON.parse((await cli(['user', 'show', 'hedy', '--json'])).stdout) as Record<string, unknown>)['role'], null);
    const events = JSON.parse((await cli(['events', '--user', 'hedy', '--type', 'user.role_changed', '--json'])).stdout) as {
      detail: Record<string, unknown>;
    }[];
    assert.deepEqual(
      events.map((event) => [event.detail['role'], event.detail['previous_role']]),
      [
        [null, 'support'],
        ['support', null],
      ],
    );
  });

  it('answers a command on an unknown user with one line and exit 1', async () => {
    for (const args of [
      ['user', 'show', 'nobody'],
      ['user', 'disable', 'nobody'],
      ['user', 'enable', 'nobody'],
      ['user', 'remove', 'nobody'],
      ['user', 'update', 'nobody', '--name', 'x'],
      ['user', 'reset-link', 'nobody'],
    ]) {
      const result = await cli(args);
      assert.equal(result.code, 1, args.join(' '));
      assert.equal(result.stderr, 'tessera: no user named nobody\n');
    }
    const password = await cli(['user', 'set-password', 'nobody', '--password-stdin'], 'a long password\n');
    assert.equal(password.code, 1);
    assert.equal(password.stderr, 'tessera: no user named nobody\n');
    assert.equal((await cli(['user', 'update', 'grace'])).code, 2, 'nothing to update is a usage error');
    assert.equal((await cli(['user', 'reset-link', 'grace', '--ttl', 'soon'])).code, 2);
  });

  it('sets a password from standard input: the old one stops working and sessions end', async () => {
    const user = await one.addUser({ username: 'oscar' });
    const browser = await signedInBrowser(one, user);
    const set = await cli(['user', 'set-password', 'oscar', '--password-stdin'], 'a brand new password\n');
    assert.equal(set.code, 0, set.stderr);
    assert.equal((await browser.request('/account')).status, 303);
    await signedInBrowser(one, { ...user, password: 'a brand new password' });
    const old = new FormBrowser(one.url);
    const page = await old.follow(await old.request('/login'));
    assert.equal((await old.submit(page, '/login', { username: 'oscar', password: user.password })).status, 401);
    assert.equal((await cli(['user', 'set-password', 'oscar', '--password-stdin'], 'short\n')).code, 1);
  });

  it('prints a reset link that sets a new password once, on a page on the issuer', async () => {
    const user = await one.addUser({ username: 'peggy' });
    const browserBefore = await signedInBrowser(one, user);
    const made = await cli(['user', 'reset-link', 'peggy', '--ttl', '600']);
    assert.equal(made.code, 0, made.stderr);
    const link = /^(http\S+)$/m.exec(made.stdout)?.[1];
    assert.ok(link?.startsWith(`${one.url}/reset-password?token=`), made.stdout);
    const token = new URL(link!).searchParams.get('token')!;
    assert.equal(JSON.stringify(await one.store.events.list({ limit: 100 })).includes(token), false, 'the token is in no event');

    const browser = new FormBrowser(one.url);
    const form = await browser.request(link!);
    assert.equal(form.status, 200);
    assert.match(text(form), /Set a new password for peggy/);
    const tooShort = await browser.submit(form, '/reset-password', { new_password: 'short' });
    assert.equal(tooShort.status, 400);
    assert.match(text(tooShort), /at least 8 characters/);
    const done = await browser.submit(tooShort, '/reset-password', { new_password: 'peggy has a new password' });
    assert.equal(done.status, 200, done.html);
    assert.match(text(done), /Password changed/);

    // Once only: the same link, opened or posted again, is refused.
    const reopened = await new FormBrowser(one.url).request(link!);
    assert.equal(reopened.status, 400);
    assert.match(text(reopened), /This link cannot be used/);
    const replayed = await browser.submit(form, '/reset-password', { new_password: 'someone else again' });
    assert.equal(replayed.status, 400);
    assert.equal((await browserBefore.request('/account')).status, 303, 'sessions from before the reset have ended');
    await signedInBrowser(two, { ...user, password: 'peggy has a new password' });
  });

  it('makes only the newest reset link work: a link given out earlier stops working when another is made', async () => {
    const user = await one.addUser({ username: 'quentin' });
    const linkOf = async () => {
      const made = await cli(['user', 'reset-link', 'quentin']);
      assert.equal(made.code, 0, made.stderr);
      return /^(http\S+)$/m.exec(made.stdout)![1]!;
    };
    const first = await linkOf();
    const second = await linkOf();
    assert.equal((await new FormBrowser(one.url).request(first)).status, 400, 'the older link is spent');
    const browser = new FormBrowser(one.url);
    const form = await browser.request(second);
    assert.equal(form.status, 200);
    assert.match(text(await browser.submit(form, '/reset-password', { new_password: 'quentin starts again' })), /Password changed/);
    assert.equal((await new FormBrowser(one.url).request(second)).status, 400, 'and the newer once used');
    await signedInBrowser(two, { ...user, password: 'quentin starts again' });
  });

  it('ends the reset links of a user who is disabled: enabling them again does not bring a link back', async () => {
    const user = await one.addUser({ username: 'rosalind' });
    const made = await cli(['user', 'reset-link', 'rosalind']);
    assert.equal(made.code, 0, made.stderr);
    const link = /^(http\S+)$/m.exec(made.stdout)![1]!;
    assert.equal((await cli(['user', 'disable', 'rosalind'])).code, 0);
    const whileDisabled = await new FormBrowser(one.url).request(link);
    assert.equal(whileDisabled.status, 400);
    assert.equal((await cli(['user', 'enable', 'rosalind'])).code, 0);
    const afterEnabled = await new FormBrowser(one.url).request(link);
    assert.equal(afterEnabled.status, 400, 'the link given out before the account was disabled stays spent');
    assert.match(text(afterEnabled), /This link cannot be used/);
    // A new link, made after enabling, works.
    const fresh = /^(http\S+)$/m.exec((await cli(['user', 'reset-link', 'rosalind'])).stdout)![1]!;
    const browser = new FormBrowser(one.url);
    const form = await browser.request(fresh);
    assert.equal(form.status, 200);
    assert.match(text(await browser.submit(form, '/reset-password', { new_password: 'rosalind starts again' })), /Password changed/);
    await signedInBrowser(two, { ...user, password: 'rosalind starts again' });
  });

  it('refuses a name with a line break, ESC or a bidirectional override from the command line, as a usage error', async () => {
    for (const args of [
      ['user', 'add', '--username', 'forger', '--password-stdin', '--name', 'Ada\n  console role: admin'],
      ['user', 'add', '--username', 'forger', '--password-stdin', '--given-name', 'Ada\u001b[2J'],
      ['user', 'add', '--username', 'forger', '--password-stdin', '--family-name-in', 'ja-Kana-JP=\u202Eevol'],
      ['client', 'add', '--name', 'Photo\rPrinter', '--redirect-uri', 'https://app.example/cb'],
      ['provider', 'add', 'oidc', '--name', 'Corp\u2066SSO', '--issuer', 'https://sso.example.com', '--client-id', 'x'],
      ['resource', 'add', '--identifier', 'https://api.example.com', '--name', 'Photos', '--scope', 'photos:read=See\u200Fyour photos'],
    ]) {
      const result = await cli(args, 'forger has a long password\n');
      assert.equal(result.code, 2, `${args.join(' ')}: ${result.stdout}${result.stderr}`);
      assert.match(result.stderr, /^tessera: .*must not contain control or bidirectional formatting characters.*\n$/);
      assert.doesNotMatch(result.stderr, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u200f\u202e\u2066]/u, 'nor does the refusal print them');
    }
    assert.equal((await cli(['user', 'show', 'forger'])).code, 1, 'nothing was made');
  });

  it('escapes everything the command prints: a name stored before these checks forges no line in user list or show, and no command prints a control character', async () => {
    // As a database from an older version, or a provider's claim from before they were stripped, may hold.
    const forged = 'Ada\n  console role: admin\u001b[2J\r\u202Enimda\u0085';
    await one.store.users.create(
      newUserRecord({ id: 'sub-forged', username: 'forged', passwordHash: '!', name: forged, email: 'forged@example.com', createdAt: Date.now() }),
    );
    const app = await one.addClient({ name: 'Plain' });
    await one.store.clients.update(app.clientId, { ...(await one.store.clients.get(app.clientId))!, name: forged });
    const noControls = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/u;
    const show = await cli(['user', 'show', 'forged']);
    assert.equal(show.code, 0, show.stderr);
    assert.match(show.stdout, /^ {2}name: Ada\\n {2}console role: admin\\e\[2J\\r\\u202Enimda\\u0085$/m);
    assert.deepEqual(
      show.stdout.split('\n').filter((line) => line.includes('console role')),
      ['  name: Ada\\n  console role: admin\\e[2J\\r\\u202Enimda\\u0085', '  console role: none'],
    );
    assert.doesNotMatch(show.stdout, noControls);
    const list = await cli(['user', 'list']);
    assert.doesNotMatch(list.stdout, noControls);
    assert.equal(list.stdout.split('\n').filter((line) => /console role/.test(line)).length, 1, 'one line, the escaped name');
    // client list escapes nothing itself: the command's one output does.
    const clients = await cli(['client', 'list']);
    assert.equal(clients.code, 0, clients.stderr);
    assert.doesNotMatch(clients.stdout, noControls);
    assert.match(clients.stdout, /console role: admin\\e\[2J\\r\\u202Enimda\\u0085/);
    // --json stays JSON, and reads back the same name.
    const json = await cli(['user', 'show', 'forged', '--json']);
    assert.doesNotMatch(json.stdout, noControls);
    assert.equal((JSON.parse(json.stdout) as { name: string }).name, forged);
  });

  it('lets a signed-in person change their own password at /account, ending their other sessions only', async () => {
    const user = await one.addUser({ username: 'victor' });
    const elsewhere = await signedInBrowser(two, user);
    const browser = await signedInBrowser(one, user);
    const account = await browser.request('/account');
    const wrong = await browser.submit(account, '/account/password', { current_password: 'not it', new_password: 'victor changed it' });
    assert.equal(wrong.status, 400);
    assert.match(text(wrong), /The current password is incorrect/);
    const changed = await browser.follow(
      await browser.submit(account, '/account/password', { current_password: user.password, new_password: 'victor changed it' }),
    );
    assert.equal(changed.status, 200);
    assert.match(text(changed), /Password changed/);
    assert.equal((await elsewhere.request('/account')).status, 303, 'the other browser is signed out');
    assert.equal((await browser.request('/account')).status, 200, 'this one stays signed in');
  });

  it('holds wrong current passwords at /account to the sign-in limits: the eleventh from one address is refused, 429 with Retry-After', async () => {
    const user = await one.addUser({ username: 'mallory-target' });
    const browser = await signedInBrowser(one, user);
    let page = await browser.request('/account');
    const statuses = [];
    for (let i = 0; i < 11; i++) {
      page = await browser.submit(page, '/account/password', { current_password: `guess ${i}`, new_password: 'taken over by mallory' });
      statuses.push(page.status);
    }
    assert.deepEqual(statuses, [...Array(10).fill(400), 429]);
    assert.ok(Number(page.headers.get('retry-after')) > 60, `Retry-After ${page.headers.get('retry-after')}`);
    assert.match(text(page), /Too many wrong passwords from your connection\. Wait 15 minutes/);
    // Even the right one waits out the window from there: the limit does not tell right from wrong.
    const right = await browser.submit(page, '/account/password', { current_password: user.password, new_password: 'changed after all' });
    assert.equal(right.status, 429);
  });
});
