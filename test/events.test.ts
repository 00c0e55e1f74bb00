/**
 * The audit trail: every flow reports what happened through one seam; each event is a
 * JSON log line and a row that `tessera events` reads, naming the user, the client and
 * the address, and never a secret. /account shows a person their own sign-ins and approvals.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { outputMatches, runTessera, serveOnNewDatabase } from './helpers/cli.ts';
import { BrowserAt, DEVICE_GRANT, startDevice, text } from './helpers/device.ts';
import { OFFLINE_SCOPES, withRefresh } from './helpers/lifecycle.ts';
import { basic, postForm, REDIRECT_URI, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';
import { FormBrowser } from './helpers/browser.ts';

interface EventJson {
  readonly id: string;
  readonly type: string;
  readonly at: string;
  readonly user_id: string | null;
  readonly username: string | null;
  readonly client_id: string | null;
  readonly grant_id: string | null;
  readonly ip: string | null;
  readonly user_agent: string | null;
  readonly detail: Record<string, unknown>;
}

/** Where each party is, as the server sees it through a trusted proxy (X-Forwarded-For). */
const PHONE = '198.51.100.7';
const APP_SERVER = '203.0.113.9';
const TV = '203.0.113.50';

describe('audit events (tessera events, /account)', () => {
  let server: TestServer, app: TestClient, alice: TestUser, browser: BrowserAt, secrets: string[];

  const cli = (args: string[]) => runTessera(args, { TESSERA_DATABASE: server.config.database });
  const events = async (args: string[]) => {
    const result = await cli(['events', ...args, '--json']);
    assert.equal(result.code, 0, result.stderr);
    return JSON.parse(result.stdout) as EventJson[];
  };
  const token = (form: Record<string, string>) =>
    postForm(`${server.url}/oauth/token`, form, {
      authorization: basic(app.clientId, app.clientSecret),
      'x-forwarded-for': APP_SERVER,
      'user-agent': 'PhotoPrinter/1.0',
    });

  before(async () => {
    ({
      server,
      client: app,
      user: alice,
    } = await startWithApp({
      server: { env: { TESSERA_TRUST_PROXY: 'loopback' } },
      client: { name: 'Photo Printer', scopes: OFFLINE_SCOPES, grantTypes: withRefresh() },
      user: { username: 'alice', password: 'alice in wonderland' },
    }));
    browser = new BrowserAt(server.url, PHONE);

    // Alice signs in on her phone and approves the Photo Printer (the code flow)…
    const verifier = oidc.randomPKCECodeVerifier();
    const url = new URL(`${server.url}/oauth/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: app.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'openid offline_access',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const code = new URL((await browser.authorize(url.href, alice)).location!).searchParams.get('code')!;
    const first = await token({ grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier });
    assert.equal(first.status, 200, JSON.stringify(first.body));
    // …then a TV, on the same phone, already signed in…
    const device = await startDevice(server, app, 'openid profile', { 'x-forwarded-for': TV, 'user-agent': 'LivingRoomTV/2.1' });
    assert.equal((await browser.submit(await browser.reachApproval(device.user_code, null), '/device/approve', { decision: 'approve' })).status, 200);
    const polled = await postForm(
      `${server.url}/oauth/token`,
      { grant_type: DEVICE_GRANT, device_code: device.device_code },
      { authorization: basic(app.clientId, app.clientSecret) },
    );
    assert.equal(polled.status, 200);
    // …and the Photo Printer's refresh token is used twice: someone copied it.
    const refreshToken = first.body['refresh_token'] as string;
    assert.equal((await token({ grant_type: 'refresh_token', refresh_token: refreshToken })).status, 200);
    assert.equal((await token({ grant_type: 'refresh_token', refresh_token: refreshToken })).body['error'], 'invalid_grant');
    // A wrong password for alice, from somewhere else.
    const stranger = new BrowserAt(server.url, '192.0.2.66');
    const signIn = await stranger.follow(await stranger.request('/login'));
    assert.equal((await stranger.submit(signIn, '/login', { username: 'alice', password: 'guess' })).status, 401);
    secrets = [
      code,
      verifier,
      refreshToken,
      first.body['access_token'] as string,
      device.device_code,
      device.user_code.replace('-', ''),
      alice.password,
      'guess',
    ];
  });
  after(() => server.close());

  it('lists a sign-in, a consent, a device approval and a detected refresh reuse, each with user, client and address', async () => {
    const listed = await events(['--user', 'alice']);
    const find = (type: string) => {
      const found = listed.find((event) => event.type === type);
      assert.ok(found, `a ${type} event among ${listed.map((event) => event.type).join(', ')}`);
      assert.equal(found.user_id, alice.id, `${type} names the user`);
      assert.equal(found.client_id, app.clientId, `${type} names the client`);
      return found;
    };
    const signIn = find('signin.succeeded');
    assert.equal(signIn.ip, PHONE);
    assert.equal(signIn.username, 'alice');
    const consent = find('consent.given');
    assert.equal(consent.ip, PHONE);
    assert.equal(consent.detail['scope'], 'openid offline_access');
    const approval = find('device.approved');
    assert.equal(approval.ip, PHONE, 'the approver');
    assert.equal(approval.detail['device_ip'], TV, 'and the device it approved');
    assert.equal(approval.detail['device_user_agent'], 'LivingRoomTV/2.1');
    const reuse = find('refresh.reuse_detected');
    assert.equal(reuse.ip, APP_SERVER);
    assert.equal(reuse.user_agent, 'PhotoPrinter/1.0');
    const revoked = find('grant.revoked');
    assert.deepEqual([revoked.grant_id, revoked.detail['by']], [reuse.grant_id, 'reuse_detection']);
    const failed = listed.find((event) => event.type === 'signin.failed');
    assert.deepEqual([failed?.username, failed?.ip, failed?.detail['reason']], ['alice', '192.0.2.66', 'wrong_password']);
    assert.ok(['code.issued', 'code.redeemed', 'refresh.rotated', 'device.consumed'].every((type) => listed.some((event) => event.type === type)));
    // Newest first.
    assert.deepEqual(
      listed.map((event) => event.at),
      listed
        .map((event) => event.at)
        .sort()
        .reverse(),
    );
  });

  it('never records a secret: no code, verifier, token, password or device code in any event', async () => {
    const all = JSON.stringify(await events(['--limit', '10000']));
    for (const secret of secrets) assert.equal(all.includes(secret), false, `${secret.slice(0, 6)}… is not in the events`);
  });

  it('filters by client, type and time, and limits the count', async () => {
    const other = await server.addClient({ name: 'Other' });
    assert.deepEqual(await events(['--client', other.clientId]), []);
    const consents = await events(['--type', 'consent.given', '--client', app.clientId]);
    assert.equal(consents.length, 1);
    assert.equal((await events(['--user', 'alice', '--limit', '2'])).length, 2);
    assert.deepEqual(await events(['--since', new Date(Date.now() + 60_000).toISOString()]), []);
    assert.ok((await events(['--since', '1h', '--user', 'alice'])).length >= 8);
    const lines = (await cli(['events', '--user', 'alice', '--type', 'device.approved'])).stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, new RegExp(`device\\.approved  user=alice client=${app.clientId} grant=\\S+ ip=${PHONE.replaceAll('.', '\\.')}`));
  });

  it('prints a username typed at /login with its control and bidirectional characters escaped, on one line', async () => {
    const forger = new BrowserAt(server.url, '192.0.2.77');
    // No NUL: a parameter holding one is refused before it is read (test/nul-characters.test.ts).
    const forged = `x\n${new Date().toISOString()}  signin.succeeded  user=admin\r\u001b[2K\u0007\u202Egnp.exe\u2028 ip=1.2.3.4`;
    const signIn = await forger.follow(await forger.request('/login'));
    assert.equal((await forger.submit(signIn, '/login', { username: forged, password: 'guess' })).status, 401);
    const result = await cli(['events', '--type', 'signin.failed', '--since', '1h']);
    assert.equal(result.code, 0, result.stderr);
    const line = result.stdout.split('\n').find((entry) => entry.includes('signin.succeeded'));
    assert.ok(line, result.stdout);
    assert.match(
      line,
      /^\S+ {2}signin\.failed {2}user="x\\n\S+ {2}signin\.succeeded {2}user=admin\\r\\e\[2k\\u0007\\u202Egnp\.exe\\u2028 ip=1\.2\.3\.4" ip=192\.0\.2\.77 reason=unknown_user$/,
    );
    assert.doesNotMatch(result.stdout, /[\u0000-\u0009\u000b-\u001f\u007f\u202e\u2028]/u, 'no control character but the line ends');
  });

  it('refuses an unknown event type, a bad time or a bad limit as a usage error', async () => {
    for (const args of [
      ['--type', 'signin.maybe'],
      ['--since', 'yesterday'],
      ['--limit', '0'],
    ]) {
      const result = await cli(['events', ...args]);
      assert.equal(result.code, 2, args.join(' '));
    }
  });

  it('records what operators do from the command line, with no address', async () => {
    const added = await runTessera(['client', 'add', '--name', 'Kiosk', '--grant', 'device_code', '--json'], { TESSERA_DATABASE: server.config.database });
    const id = (JSON.parse(added.stdout) as { client_id: string }).client_id;
    assert.equal((await cli(['client', 'remove', id])).code, 0);
    const [removed, created] = await events(['--client', id]);
    assert.deepEqual([removed?.type, created?.type], ['client.removed', 'client.created']);
    assert.equal(created?.ip, null);
    assert.equal(created?.detail['by'], 'operator');
  });

  it('shows the person their own recent sign-ins and approvals at /account, with where they came from', async () => {
    const page = await browser.request('/account');
    assert.equal(page.status, 200);
    const shown = text(page);
    assert.match(shown, /Recent sign-ins and approvals/);
    assert.match(shown, new RegExp(`Signed in, .{0,30}? UTC ?, from ${PHONE.replaceAll('.', '\\.')}`));
    assert.match(shown, /Approved Photo Printer/);
    assert.match(shown, /Approved a device for Photo Printer/);
    // Nobody else's: bob sees none of alice's.
    const bob = await server.addUser({ username: 'bob' });
    const other = new FormBrowser(server.url);
    const account = await other.signIn(await other.follow(await other.request('/login?return_to=%2Faccount')), bob);
    assert.doesNotMatch(text(account), /Photo Printer/);
    assert.equal(text(account).match(/Signed in,/g)?.length, 1);
  });
});

describe('audit events in the log', () => {
  it('writes each event as one JSON line, without the password', async (t) => {
    const serving = await serveOnNewDatabase(t, 'tessera-events-log-');
    const browser = new FormBrowser(serving.url);
    const page = await browser.follow(await browser.request('/login'));
    await browser.submit(page, '/login', { username: 'nobody', password: 'hunter2 is my password' });
    await outputMatches(serving, /"event":"signin.failed"/);
    const line = serving
      .output()
      .stdout.split('\n')
      .find((entry) => entry.includes('"event":"signin.failed"'))!;
    const logged = JSON.parse(line) as Record<string, unknown>;
    assert.equal(logged['username'], 'nobody');
    assert.equal(logged['ip'], '127.0.0.1');
    assert.deepEqual(logged['detail'], { reason: 'unknown_user' });
    assert.equal(serving.output().stdout.includes('hunter2'), false);
  });
});
