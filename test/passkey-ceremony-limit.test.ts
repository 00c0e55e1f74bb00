/**
 * TESSERA_PASSKEY_CEREMONIES_PER_ADDRESS: the passkey options (sign-in, sign-up, an
 * invitation's, and a signed-in person's new passkey, which a session alone could otherwise
 * ask for without end) each store a challenge, so one address may start only so many a
 * minute, counted together across the four routes. A refusal is a 429 with Retry-After and
 * the words for the page's script, decided in memory: it stores no challenge. Another address
 * is still served. Sign-up and invitations are never offered together (TESSERA_SIGN_UP), so
 * each is proved on its own server, alongside the sign-in options.
 */
import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { inviteUser } from '../src/flows/manage/invitations.ts';
import { after, before, describe, it } from 'node:test';
import { FormBrowser } from './helpers/browser.ts';
import { manageDeps } from './helpers/manage.ts';
import { startWithMail } from './helpers/fixtures.ts';
import type { TestSmtpServer } from './helpers/smtp.ts';
import { closeAll, startTestServer, type TestServer } from './helpers/server.ts';

const LIMIT = 3;

function challengeRows(server: TestServer): number {
  const db = new DatabaseSync(server.config.database, { readOnly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM webauthn_challenges').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

/** A browser at `ip` (X-Forwarded-For, trusted) that asks for options with its page's CSRF token. */
async function browserAt(server: TestServer, ip: string, pagePath: string, formAction: string) {
  const browser = new FormBrowser(server.url);
  const headers = { 'x-forwarded-for': ip };
  let page = await browser.request(pagePath, { headers });
  if (page.status === 303 && page.location) page = await browser.request(page.location, { headers });
  assert.equal(page.status, 200, page.html.slice(0, 300));
  const fields = browser.form(page, formAction).fields;
  return (path: string, extra: Record<string, string> = {}) => browser.request(path, { headers, form: { csrf_token: fields['csrf_token']!, ...extra } });
}

function assertRefused(refused: { status: number; html: string; headers: Headers }): void {
  assert.equal(refused.status, 429);
  const wait = Number(refused.headers.get('retry-after'));
  assert.ok(wait >= 1 && wait <= 60, `Retry-After ${wait}`);
  assert.match(refused.headers.get('content-type') ?? '', /application\/json/);
  assert.equal(JSON.parse(refused.html).error, 'Too many passkey requests from your network. Wait a minute and try again.');
}

describe('passkey ceremonies per address: sign-in and sign-up options', () => {
  let smtp: TestSmtpServer;
  let server: TestServer;
  const log: Record<string, unknown>[] = [];

  before(async () => {
    // Sign-up is offered only where its mail can be sent.
    ({ server, smtp } = await startWithMail({
      issuerHost: 'localhost',
      env: {
        TESSERA_TRUST_PROXY: 'true',
        TESSERA_SIGN_UP: 'open',
        TESSERA_PASSKEY_CEREMONIES_PER_ADDRESS: String(LIMIT),
      },
      log: (line) => log.push(line),
    }));
  });
  after(() => closeAll(server, smtp));

  it('refuses the next options request from one address, whichever route, storing no challenge; another address is served', async () => {
    const signIn = await browserAt(server, '192.0.2.10', '/account', '/login/passkey');
    const signUp = await browserAt(server, '192.0.2.10', '/sign-up', '/sign-up');
    const fields = { username: 'ada', name: 'Ada Lovelace', email: 'ada@example.com' };
    // The limit is shared: two sign-ins and one sign-up reach it.
    assert.equal((await signIn('/login/passkey/options')).status, 200);
    assert.equal((await signUp('/sign-up/passkey/options', fields)).status, 200);
    assert.equal((await signIn('/login/passkey/options')).status, 200);
    const stored = challengeRows(server);
    assertRefused(await signUp('/sign-up/passkey/options', fields));
    assertRefused(await signIn('/login/passkey/options'));
    assert.equal(challengeRows(server), stored, 'a refused request stores no challenge');
    assert.equal(log.filter((line) => line['msg'] === 'passkey ceremonies refused: over the per-minute limit').length, 1, 'logged once a window');

    const elsewhere = await browserAt(server, '192.0.2.11', '/account', '/login/passkey');
    assert.equal((await elsewhere('/login/passkey/options')).status, 200, 'another address is served');
    assert.equal(challengeRows(server), stored + 1);
  });

  it("counts a signed-in person's new-passkey options with the sign-in options of the same address", async () => {
    const user = await server.addUser();
    const browser = new FormBrowser(server.url);
    const headers = { 'x-forwarded-for': '192.0.2.20' };
    const account = await browser.follow(await browser.signIn(await browser.follow(await browser.request('/account', { headers })), user));
    assert.equal(account.status, 200, account.html.slice(0, 300));
    const csrf = browser.form(account, '/account/passkeys').fields['csrf_token']!;
    const register = () => browser.request('/account/passkeys/options', { headers, form: { csrf_token: csrf } });
    const signIn = await browserAt(server, '192.0.2.20', '/account', '/login/passkey');
    assert.equal((await register()).status, 200);
    assert.equal((await signIn('/login/passkey/options')).status, 200);
    assert.equal((await register()).status, 200);
    const stored = challengeRows(server);
    assertRefused(await register());
    assertRefused(await signIn('/login/passkey/options'));
    assert.equal(challengeRows(server), stored, 'a refused request stores no challenge');
  });
});

describe('passkey ceremonies per address: invitation options', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer({
      issuerHost: 'localhost',
      env: { TESSERA_TRUST_PROXY: 'true', TESSERA_SIGN_UP: 'invite', TESSERA_PASSKEY_CEREMONIES_PER_ADDRESS: String(LIMIT) },
    });
  });
  after(() => server.close());

  it('counts an invitation’s options with the sign-in options of the same address', async () => {
    const link = new URL((await inviteUser(manageDeps(server), { email: 'hedy@example.com' })).url);
    const invitation = await browserAt(server, '198.51.100.7', `${link.pathname}${link.search}`, '/invitation');
    const signIn = await browserAt(server, '198.51.100.7', '/account', '/login/passkey');
    const token = link.searchParams.get('token')!;
    const fields = { token, username: 'hedy', name: 'Hedy Lamarr' };
    assert.equal((await invitation('/invitation/passkey/options', fields)).status, 200);
    assert.equal((await signIn('/login/passkey/options')).status, 200);
    assert.equal((await invitation('/invitation/passkey/options', fields)).status, 200);
    const stored = challengeRows(server);
    assertRefused(await invitation('/invitation/passkey/options', fields));
    assertRefused(await signIn('/login/passkey/options'));
    assert.equal(challengeRows(server), stored, 'a refused request stores no challenge');
    const elsewhere = await browserAt(server, '198.51.100.8', `${link.pathname}${link.search}`, '/invitation');
    assert.equal((await elsewhere('/invitation/passkey/options', fields)).status, 200, 'another address is served');
  });
});
