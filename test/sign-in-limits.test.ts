/**
 * Sign-in guessing is stopped without locking the owner out, and password hashing
 * cannot be flooded: each address has a fair share of the password queue, and what does
 * not fit is refused at once with Retry-After.
 */
import assert from 'node:assert/strict';
import { getPriority } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { runTessera } from './helpers/cli.ts';
import { BrowserAt } from './helpers/device.ts';
import { startTestServer, type TestServer, type TestUser } from './helpers/server.ts';
import { threadNiceValues } from './helpers/threads.ts';

async function signInPage(browser: BrowserAt) {
  return browser.request('/login');
}

describe('sign-in limits', () => {
  let server: TestServer;
  let user: TestUser;

  before(async () => {
    server = await startTestServer({ env: { TESSERA_TRUST_PROXY: 'true' } });
    user = await server.addUser({ username: 'owner' });
  });
  after(() => server.close());

  it('still signs the owner in from their address after 12 wrong passwords for their username from another', async () => {
    const guesser = new BrowserAt(server.url, '203.0.113.66');
    const page = await signInPage(guesser);
    const tries = [];
    for (let i = 0; i < 12; i++) tries.push((await guesser.submit(page, '/login', { username: 'owner', password: `guess${i}` })).status);
    assert.deepEqual(tries, [...Array(10).fill(401), 429, 429]);
    const owner = new BrowserAt(server.url, '198.51.100.20');
    const signedIn = await owner.submit(await signInPage(owner), '/login', { username: user.username, password: user.password });
    assert.equal(signedIn.status, 303, signedIn.html);
  });
});

describe('the password queue', () => {
  let server: TestServer;
  let user: TestUser;

  before(async () => {
    server = await startTestServer({
      env: {
        TESSERA_TRUST_PROXY: 'true',
        // A hash that takes a while, so that attempts really wait for the one thread.
        TESSERA_PASSWORD_HASH: 'm=65536,t=2,p=1',
        TESSERA_PASSWORD_HASH_THREADS: '1',
        TESSERA_SIGN_IN_QUEUE: '3',
        TESSERA_SIGN_IN_QUEUE_PER_ADDRESS: '2',
        TESSERA_PASSWORD_HASH_NICE: '7',
      },
    });
    user = await server.addUser({ username: 'queued' });
  });
  after(() => server.close());

  it('gives one address its share, refuses the rest with Retry-After, and serves another address in turn', async () => {
    const flooder = new BrowserAt(server.url, '203.0.113.9');
    const page = await signInPage(flooder);
    const other = new BrowserAt(server.url, '198.51.100.9');
    const otherPage = await signInPage(other);
    const answered: { who: string; status: number; retryAfter: string | null; html: string }[] = [];
    const send = async (who: string, browser: BrowserAt, form: typeof page, values: Record<string, string>) => {
      const result = await browser.submit(form, '/login', values);
      answered.push({ who, status: result.status, retryAfter: result.headers.get('retry-after'), html: result.html });
    };
    await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => send('flooder', flooder, page, { username: `nobody${i}`, password: 'guess' })),
      send('other', other, otherPage, { username: user.username, password: user.password }),
    ]);
    const flood = answered.filter((a) => a.who === 'flooder');
    assert.equal(flood.filter((a) => a.status === 401).length, 2, 'two places for the address');
    const refused = flood.filter((a) => a.status === 429);
    assert.equal(refused.length, 4);
    for (const answer of refused) {
      assert.ok(Number(answer.retryAfter) >= 1, `Retry-After ${answer.retryAfter}`);
      assert.match(answer.html, /Many people are signing in right now\. Wait \d+ seconds?, then sign in again\./);
    }
    assert.equal(answered.find((a) => a.who === 'other')!.status, 303, 'the other address signed in');
  });

  it("checks passwords on a thread at TESSERA_PASSWORD_HASH_NICE above the server's priority, so that busy cores sign tokens first", {
    skip: process.platform !== 'linux' && 'nice values per thread are read from /proc',
  }, async () => {
    const browser = new BrowserAt(server.url, '198.51.100.31');
    const signedIn = await browser.submit(await signInPage(browser), '/login', { username: user.username, password: user.password });
    assert.equal(signedIn.status, 303, signedIn.html);
    // The server runs in this process: its one hashing thread is the one thread lowered by 7.
    assert.equal(threadNiceValues().filter((nice) => nice === Math.min(19, getPriority() + 7)).length, 1);
  });

  it('hashes the new password of a reset link on the queue: posts of one live link beyond the share of the address are answered 429, and the link is used once', async () => {
    const made = await runTessera(['user', 'reset-link', user.username], { TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url });
    assert.equal(made.code, 0, made.stderr);
    const link = /^(http\S+)$/m.exec(made.stdout)![1]!;
    const holder = new BrowserAt(server.url, '203.0.113.44');
    const form = await holder.request(link);
    assert.equal(form.status, 200);
    const answers = await Promise.all(Array.from({ length: 5 }, (_, i) => holder.submit(form, '/reset-password', { new_password: `a new password ${i}` })));
    const statuses = answers.map((answer) => answer.status).sort();
    // Two places for the address: two hashed (one of them used the link up), three refused.
    assert.deepEqual(statuses, [200, 400, 429, 429, 429], answers.map((answer) => answer.html.slice(0, 200)).join('\n'));
    for (const refused of answers.filter((answer) => answer.status === 429)) {
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      assert.match(refused.html, /Many people are signing in right now\. Wait \d+ seconds?, then set your password again\./);
    }
  });
});
