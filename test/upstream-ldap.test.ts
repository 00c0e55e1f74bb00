/**
 * Signing in with a directory password: OpenLDAP's slapd, started here
 * with a throwaway configuration and seeded with people and groups. In Chromium: the sign-in
 * page's button, the directory's form, and an app getting tokens whose claims (and `groups`,
 * under scope `groups`) came from the directory. The password goes through the limits of
 * every password; a username cannot change the search filter (RFC 4515); a directory that is
 * down or hangs is a page in people's words, not a crash; the bind password is sealed at rest.
 */
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { newTotpSecret, timeStep, totpAt } from '../src/flows/second-factor/totp.ts';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { FormBrowser, type Page } from './helpers/browser.ts';
import { catchRedirect, chromiumUnavailable, launchChromium } from './helpers/chromium.ts';
import { runTessera } from './helpers/cli.ts';
import { closeAll, closeServer, listenOnFreePort, startTestServer, type TestClient, type TestServer } from './helpers/server.ts';
import { authorizationAttempt, redeemAttempt } from './helpers/fixtures.ts';
import { LDAP_ADMIN, LDAP_ADMIN_PASSWORD, LDAP_SUFFIX, slapdUnavailable, startSlapd, type Slapd } from './helpers/slapd.ts';
import { within } from './helpers/wait.ts';

const PEOPLE = `ou=people,${LDAP_SUFFIX}`;
const GROUPS = `ou=groups,${LDAP_SUFFIX}`;
const person = (uid: string, cn: string, sn: string, mail: string, password: string) => `dn: uid=${uid},${PEOPLE}
objectClass: inetOrgPerson
uid: ${uid}
cn: ${cn}
sn: ${sn}
givenName: ${cn.split(' ')[0]}
mail: ${mail}
userPassword: ${password}
`;
const group = (cn: string, ...members: string[]) => `dn: cn=${cn},${GROUPS}
objectClass: groupOfNames
cn: ${cn}
${members.map((uid) => `member: uid=${uid},${PEOPLE}`).join('\n')}
`;
const SEED = [
  `dn: ${PEOPLE}\nobjectClass: organizationalUnit\nou: people\n`,
  `dn: ${GROUPS}\nobjectClass: organizationalUnit\nou: groups\n`,
  person('alice', 'Alice Liddell', 'Liddell', 'alice@example.com', 'alice in wonderland'),
  person('bob', 'Bob Builder', 'Builder', 'bob@example.com', 'can we fix it'),
  person('carol', 'Carol Danvers', 'Danvers', 'carol@example.com', 'higher further faster'),
  person('dave', 'Dave Lister', 'Lister', 'dave@example.com', 'dave the rave'),
  group('staff', 'alice', 'bob'),
  group('admins', 'alice'),
  group('others', 'bob'),
].join('\n');

const ldapUnavailable = slapdUnavailable() ?? chromiumUnavailable();

describe('signing in with a directory password (OpenLDAP slapd)', { skip: ldapUnavailable }, () => {
  let slapd: Slapd;
  let server: TestServer;
  let app: TestClient;
  let config: oidc.Configuration;
  let browser: Browser;
  let env: Record<string, string>;

  before(async () => {
    slapd = await startSlapd(SEED);
    server = await startTestServer({ env: { TESSERA_SITE_NAME: 'Acme', TESSERA_UPSTREAM_TIMEOUT: '2', TESSERA_SIGN_IN_FAILURES_PER_USER_ADDRESS: '3' } });
    env = { TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url };
    const added = await runTessera(
      [
        'provider',
        'add',
        'ldap',
        '--id',
        'directory',
        '--name',
        'Example Directory',
        '--url',
        slapd.url,
        '--bind-dn',
        LDAP_ADMIN,
        '--bind-password-stdin',
        '--user-search-base',
        PEOPLE,
        '--user-filter',
        '(&(objectClass=inetOrgPerson)(uid={username}))',
        '--group-search-base',
        GROUPS,
        '--group-filter',
        '(member={dn})',
      ],
      env,
      `${LDAP_ADMIN_PASSWORD}\n`,
    );
    assert.equal(added.code, 0, added.stderr);
    app = await server.addClient({ name: 'Garden Planner', scopes: ['openid', 'profile', 'email', 'groups'] });
    config = await oidc.discovery(new URL(server.url), app.clientId, undefined, oidc.ClientSecretBasic(app.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    browser = await launchChromium();
  });
  after(async () => {
    try {
      await closeAll(browser, server);
    } finally {
      await slapd?.stop();
    }
  });

  /** The directory's own form, as a person's browser gets it. */
  async function directoryForm(visitor: FormBrowser): Promise<Page> {
    const page = await visitor.request('/login/upstream/directory?return_to=%2Faccount');
    assert.equal(page.status, 200, page.html.slice(0, 300));
    assert.match(page.html, /<h1>Sign in with Example Directory<\/h1>/);
    return page;
  }

  async function failures(reason: string) {
    return (await server.store.events.list({ type: 'signin.failed', limit: 100 })).filter(
      (event) => event.detail['reason'] === reason && event.detail['provider'] === 'directory',
    );
  }

  it("signs in with the directory password into an app, whose tokens carry the directory's claims and groups", async () => {
    const page = await (await browser.newContext()).newPage();
    const callback = catchRedirect(page);
    const attempt = await authorizationAttempt(config, { scope: 'openid profile email groups' });
    await page.goto(attempt.url.href);
    await page.getByRole('link', { name: 'Continue with Example Directory' }).click();
    await page.getByRole('heading', { name: 'Sign in with Example Directory' }).waitFor();
    await page.getByLabel('Username').fill('alice');
    await page.getByLabel('Password').fill('alice in wonderland');
    await page.getByRole('button', { name: 'Sign in' }).click();
    assert.deepEqual(await page.locator('.card').getByRole('listitem').allInnerTexts(), [
      'Sign you in and know who you are',
      'See your name, nickname, username, picture, web pages, gender, birthdate, language and time zone',
      'See your email address',
      'See the groups you belong to',
    ]);
    await page.getByRole('button', { name: 'Approve' }).click();
    const tokens = await redeemAttempt(config, attempt, await within(callback, 'the redirect back to the app'));
    const claims = tokens.claims()!;
    // The directory checked the password typed here: a password sign-in, as RFC 8176 names it.
    assert.deepEqual(claims.amr, ['pwd']);
    const userinfo = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    assert.equal(userinfo['name'], 'Alice Liddell');
    assert.equal(userinfo['given_name'], 'Alice');
    assert.equal(userinfo['family_name'], 'Liddell');
    assert.equal(userinfo['email'], 'alice@example.com');
    assert.equal(userinfo['preferred_username'], 'alice');
    assert.deepEqual([...(userinfo['groups'] as string[])].sort(), ['admins', 'staff']);
    const shown = await runTessera(['user', 'show', 'alice'], env);
    assert.match(shown.stdout, /Example Directory \(directory\): alice, linked .*, groups (staff admins|admins staff)/);
    await page.context().close();
  });

  it('refuses a wrong password with the page of any wrong password, and counts it against the same limits', async () => {
    const visitor = new FormBrowser(server.url);
    const form = await directoryForm(visitor);
    let answer = await visitor.submit(form, '/login/upstream/directory', { username: 'bob', password: 'wrong' });
    assert.equal(answer.status, 401);
    assert.match(answer.html, /The username or password is incorrect\./);
    assert.equal((await failures('wrong_password')).length, 1);
    // An unknown username is told the same.
    answer = await visitor.submit(answer, '/login/upstream/directory', { username: 'nobody', password: 'whatever it is' });
    assert.equal(answer.status, 401);
    answer = await visitor.submit(answer, '/login/upstream/directory', { username: 'bob', password: 'wrong again' });
    answer = await visitor.submit(answer, '/login/upstream/directory', { username: 'bob', password: 'and again' });
    // TESSERA_SIGN_IN_FAILURES_PER_USER_ADDRESS=3: the fourth try for bob from here is refused unchecked, even the right one.
    answer = await visitor.submit(answer, '/login/upstream/directory', { username: 'bob', password: 'can we fix it' });
    assert.equal(answer.status, 429);
    assert.match(answer.html, /Too many wrong passwords/);
    assert.ok(Number(answer.headers.get('retry-after')) > 0);
    // The limit is the username's: lifting it with `tessera user unlock` is not needed for another person.
    answer = await visitor.submit(answer, '/login/upstream/directory', { username: 'carol', password: 'higher further faster' });
    assert.equal(answer.status, 303);
    assert.equal(answer.location, '/account');
  });

  it('escapes the username in the search filter (RFC 4515): a wildcard or a parenthesis matches nobody', async () => {
    const visitor = new FormBrowser(server.url);
    let page = await directoryForm(visitor);
    for (const username of ['al*', '*', 'alice)(uid=*', 'alice)(|(uid=*']) {
      page = await visitor.submit(page, '/login/upstream/directory', { username, password: 'alice in wonderland' });
      assert.equal(page.status, 401, username);
      assert.match(page.html, /The username or password is incorrect\./);
    }
    // An empty password is an unauthenticated bind (RFC 4513 §5.1.2), which proves nothing.
    page = await visitor.submit(page, '/login/upstream/directory', { username: 'carol', password: '' });
    assert.equal(page.status, 401);
    assert.equal(visitor.cookies.has('tessera_session'), false);
  });

  it('says so when the directory hangs or is down, records it, and makes no user', async () => {
    const visitor = new FormBrowser(server.url);
    const form = await directoryForm(visitor);
    await slapd.pause();
    try {
      const started = Date.now();
      const page = await visitor.submit(form, '/login/upstream/directory', { username: 'dave', password: 'dave the rave' });
      assert.equal(page.status, 503);
      assert.match(page.html, /Example Directory is not answering right now\. Try again in a few minutes\./);
      assert.doesNotMatch(page.html, /Error|at .*\.ts/);
      assert.ok(Date.now() - started < 15_000, 'refused within the upstream timeout');
    } finally {
      slapd.resume();
    }
    const [event] = await failures('unavailable');
    assert.ok(event, 'a signin.failed event names the directory');
    assert.equal(typeof event.detail['upstream'], 'string');
    assert.equal(await server.store.users.findByUsername('dave'), null);
    // A directory that is not there at all: the same page, at once.
    const { server: closed, port } = await listenOnFreePort();
    await closeServer(closed);
    assert.equal(
      (
        await runTessera(
          ['provider', 'add', 'ldap', '--id', 'gone', '--name', 'Old Directory', '--url', `ldap://127.0.0.1:${port}`, '--user-search-base', PEOPLE],
          env,
        )
      ).code,
      0,
    );
    try {
      const other = new FormBrowser(server.url);
      const page = await other.request('/login/upstream/gone?return_to=%2Faccount');
      const down = await other.submit(page, '/login/upstream/gone', { username: 'dave', password: 'dave the rave' });
      assert.equal(down.status, 503);
      assert.match(down.html, /Old Directory is not answering right now/);
    } finally {
      await runTessera(['provider', 'remove', 'gone'], env);
    }
  });

  it('asks a person with one-time codes on for a code after the directory, as after a password', async () => {
    // carol signed in through the directory above; she has since turned one-time codes on.
    const carol = (await server.store.users.findByUsername('carol'))!;
    const secret = newTotpSecret();
    const now = Date.now();
    assert.equal(await server.store.totp.begin(carol.id, secret, now), true);
    assert.ok(await server.store.totp.confirm(carol.id, timeStep(now) - 2, now));
    const visitor = new FormBrowser(server.url);
    const form = await directoryForm(visitor);
    const asked = await visitor.submit(form, '/login/upstream/directory', { username: 'carol', password: 'higher further faster' });
    assert.equal(asked.status, 200);
    assert.match(asked.html, /<label for="code">/);
    assert.equal(visitor.cookies.has('tessera_session'), false, 'not signed in before the code');
    const done = await visitor.submit(asked, '/login/second-factor', { code: totpAt(secret, Date.now()) });
    assert.equal(done.status, 303, done.html.slice(0, 300));
    assert.equal(done.location, '/account');
    const [session] = await server.store.sessions.listForUser(carol.id, Date.now());
    assert.deepEqual(session?.amr, ['pwd', 'otp', 'mfa']);
  });

  it('keeps the bind password sealed at rest and out of every answer', async () => {
    const db = new DatabaseSync(server.config.database, { readOnly: true });
    const row = db.prepare("SELECT settings, secret FROM identity_providers WHERE id = 'directory'").get() as { settings: string; secret: string };
    db.close();
    assert.doesNotMatch(row.secret + row.settings, new RegExp(LDAP_ADMIN_PASSWORD));
    assert.equal(JSON.parse(row.secret).enc, 'A256GCM');
    const shown = await runTessera(['provider', 'show', 'directory', '--json'], env);
    assert.doesNotMatch(shown.stdout, new RegExp(LDAP_ADMIN_PASSWORD));
    assert.equal(JSON.parse(shown.stdout).bind_password_set, true);
  });
});
