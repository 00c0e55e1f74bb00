import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import QRCode from 'qrcode';
import { deviceLogin, type DeviceLoginDeps } from '../src/cli/device-login.ts';
import { ManualClock } from '../src/core/clock.ts';
import { outputMatches, runTessera, startTessera as tessera } from './helpers/cli.ts';
import { BrowserAt } from './helpers/device.ts';
import { startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';
import { within } from './helpers/wait.ts';

const SECOND = 1000;

/** The user code as device-login prints it. */
function printedUserCode(stdout: string): string {
  const match = /and enter the code\n\n {4}([A-Z]{4}-[A-Z]{4})\n/.exec(stdout);
  assert.ok(match, `no user code in:\n${stdout}`);
  return match[1]!;
}

/**
 * device-login against a real server whose clock is the device's too: every wait the
 * command asks for moves the clock instead of sleeping, and `onWait` plays the person.
 */
describe('tessera device-login, with the clock moved instead of waiting', () => {
  let clock: ManualClock, server: TestServer, client: TestClient, user: TestUser;

  before(async () => {
    clock = new ManualClock();
    ({ server, client, user } = await startWithApp({ server: { clock }, client: { name: 'Terminal' }, user: { username: 'dennis', name: 'Dennis Ritchie' } }));
  });
  after(() => server.close());

  async function run(
    options: {
      client?: TestClient;
      scope?: string;
      secret?: string;
      tty?: boolean;
      onWait?: (call: number, output: { stdout: string }) => Promise<number | void>;
    } = {},
  ) {
    const output = { stdout: '', stderr: '' };
    const waits: number[] = [];
    const deps: DeviceLoginDeps = {
      stdout: (text) => (output.stdout += text),
      stderr: (text) => (output.stderr += text),
      fetch: globalThis.fetch,
      now: () => clock.now(),
      tty: options.tty ?? false,
      async sleep(ms) {
        waits.push(ms);
        // onWait may move the clock by something else than asked (a device that polls too soon).
        const moved = await options.onWait?.(waits.length, output);
        clock.advance(typeof moved === 'number' ? moved : ms);
      },
    };
    const code = await deviceLogin(
      {
        issuer: server.url,
        clientId: (options.client ?? client).clientId,
        // A public client has no secret: device-login then sends its client_id in the form.
        clientSecret: options.secret ?? ((options.client ?? client).clientSecret || undefined),
        scope: options.scope ?? 'openid profile',
      },
      deps,
    );
    return { code, waits, ...output };
  }

  const decide = (decision: 'approve' | 'deny') => async (call: number, output: { stdout: string }) => {
    if (call === 1) await new BrowserAt(server.url).decide(printedUserCode(output.stdout), user, decision);
  };

  it('signs in a public client, which has no secret to send (RFC 8628 §5.7)', async () => {
    const tv = await server.addClient({ name: 'Living Room TV', public: true, grantTypes: ['urn:ietf:params:oauth:grant-type:device_code'] });
    const result = await run({ client: tv, onWait: decide('approve') });
    assert.equal(result.code, 0, result.stderr);
    const claims = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'), result.stdout.indexOf('UserInfo claims'))) as Record<string, unknown>;
    assert.equal(claims['aud'], tv.clientId);
    assert.equal(claims['sub'], user.id);
  });

  it('shows the code, the link and its QR code, waits the interval, and prints the granted scopes and the verified ID token claims', async () => {
    const result = await run({ onWait: decide('approve') });
    assert.equal(result.code, 0, result.stderr);
    const userCode = printedUserCode(result.stdout);
    const link = `${server.url}/device?user_code=${userCode}`;
    assert.match(result.stdout, new RegExp(`open this page on your phone or computer:\\n\\n {4}${server.url}/device\\n`));
    assert.ok(result.stdout.includes(await QRCode.toString(link, { type: 'terminal', small: true })), 'the QR code of verification_uri_complete');
    assert.ok(result.stdout.includes(`    ${link}\n`));
    assert.deepEqual(result.waits, [5 * SECOND], 'one interval before the first poll, which succeeds');
    assert.match(result.stdout, /Approved\. Granted scopes: openid profile\n/);
    const userinfoAt = result.stdout.indexOf('UserInfo claims');
    const claims = JSON.parse(result.stdout.slice(result.stdout.indexOf('{'), userinfoAt)) as Record<string, unknown>;
    assert.equal(claims['sub'], user.id);
    assert.equal(claims['iss'], server.url);
    assert.equal(claims['aud'], client.clientId);
    assert.equal(claims['name'], undefined, 'OIDC Core §5.4: profile claims come from userinfo when an access token is issued');
    const userinfo = JSON.parse(result.stdout.slice(result.stdout.indexOf('{', userinfoAt))) as Record<string, unknown>;
    assert.equal(userinfo['sub'], user.id);
    assert.equal(userinfo['name'], 'Dennis Ritchie', result.stdout);
    assert.match(result.stdout, /signature verified with/);
  });

  it('polls at the interval while the user has not decided, and slows down by 5 s when told to', async () => {
    const result = await run({
      onWait: async (call, output) => {
        // The second wait is cut short, as if the device's clock ran fast: the server says slow_down.
        if (call === 2) return 2 * SECOND;
        if (call === 4) await new BrowserAt(server.url).decide(printedUserCode(output.stdout), user, 'approve');
        return undefined;
      },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual(result.waits, [5 * SECOND, 5 * SECOND, 10 * SECOND, 10 * SECOND]);
    assert.match(result.stdout, /The server asked to poll more slowly: now every 10 seconds\./);
    assert.match(result.stdout, /Approved\./);
  });

  it('says so and exits 1 when the user denies', async () => {
    const result = await run({ onWait: decide('deny') });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /The request was denied: no tokens were issued\./);
    assert.doesNotMatch(result.stdout, /Approved/);
  });

  it('says so and exits 1 when the code expires unapproved, having polled every 5 s until then', async () => {
    const result = await run();
    assert.equal(result.code, 1);
    assert.match(result.stderr, /The code expired before it was approved\. Run device-login again for a new code\./);
    assert.equal(result.waits.length, 120);
    assert.ok(result.waits.every((ms) => ms === 5 * SECOND));
  });

  it('redraws a countdown every second on a terminal', async () => {
    const result = await run({
      tty: true,
      onWait: async (call, output) => {
        if (call === 3) await new BrowserAt(server.url).decide(printedUserCode(output.stdout), user, 'approve');
      },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.ok(result.waits.every((ms) => ms === SECOND));
    assert.match(result.stdout, /\r\x1b\[KWaiting for approval\.\.\. the code expires in 10:00\r\x1b\[KWaiting for approval\.\.\. the code expires in 9:59/);
    assert.match(result.stdout, /\r\x1b\[KApproved\./);
  });

  it('prints that no ID token was issued without the openid scope', async () => {
    const result = await run({ scope: 'profile', onWait: decide('approve') });
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /Granted scopes: profile\nNo ID token was issued/);
  });

  it('refuses a server whose metadata names another issuer (RFC 8414 §3.3)', async () => {
    const output = { stdout: '', stderr: '' };
    const code = await deviceLogin(
      { issuer: 'http://auth.example', clientId: client.clientId, clientSecret: client.clientSecret, scope: 'openid' },
      {
        stdout: (text) => (output.stdout += text),
        stderr: (text) => (output.stderr += text),
        // auth.example answers with this server's metadata, whose issuer is the server's own URL.
        fetch: (url, init) => fetch(String(url).replace('http://auth.example', server.url), init),
        now: () => clock.now(),
        sleep: async () => {},
        tty: false,
      },
    );
    assert.equal(code, 1);
    assert.match(output.stderr, new RegExp(`says its issuer is ${server.url}`));
    assert.equal(output.stdout, '', 'no code was requested');
  });

  it("exits 1 with the server's reason when the client is refused", async () => {
    const result = await run({ secret: 'wrong' });
    assert.equal(result.code, 1);
    assert.match(result.stderr, /refused the device authorization request \(invalid_client: client authentication failed\)/);
    const scope = await run({ scope: 'openid admin' });
    assert.equal(scope.code, 1);
    assert.match(scope.stderr, /invalid_scope/);
  });
});

describe('tessera device-login, as a person runs it', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('runs in a terminal beside the server: the person approves in a browser and the command prints the claims', async (t) => {
    const client = await server.addClient({ name: 'Command Line' });
    const user = await server.addUser({ username: 'ken' });
    const run = tessera([
      'device-login',
      '--client-id',
      client.clientId,
      '--client-secret',
      client.clientSecret,
      '--scope',
      'openid profile',
      '--issuer',
      server.url,
    ]);
    t.after(() => run.child.kill());
    await outputMatches(run, /and enter the code\n\n {4}[A-Z]{4}-[A-Z]{4}\n/);
    await new BrowserAt(server.url).decide(printedUserCode(run.output().stdout), user, 'approve');
    assert.equal(await within(run.exited, 'tessera device-login to exit'), 0, run.output().stderr);
    assert.match(run.output().stdout, /"preferred_username": "ken"/);
  });

  it('prints the usage and exits 2 without a client id, with an empty secret or a bad issuer', async () => {
    for (const args of [
      ['device-login'],
      ['device-login', '--client-secret', 'y'],
      ['device-login', '--client-id', 'x', '--client-secret', ''],
      ['device-login', '--client-id', 'x', '--client-secret', 'y', '--issuer', 'not a url'],
    ]) {
      const result = await runTessera(args);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, /^tessera: .*; run `tessera help[^`]*`\n$/, 'one line pointing to the help');
    }
  });

  it('takes a client secret that starts with "-", given after --client-secret or joined to it by "="', async () => {
    const client = await server.addClient({ name: 'Dashing', secret: `-${'x'.repeat(42)}`, scopes: ['openid'] });
    const login = (...secret: string[]) =>
      runTessera(['device-login', '--client-id', client.clientId, ...secret, '--scope', 'openid email', '--issuer', server.url]);
    // The right secret gets past client authentication to the scope the client may not have;
    // a wrong one is refused as invalid_client: either way the server saw the secret given.
    for (const secret of [['--client-secret', client.clientSecret], [`--client-secret=${client.clientSecret}`]]) {
      const result = await login(...secret);
      assert.equal(result.code, 1, result.stderr);
      assert.match(result.stderr, /\(invalid_scope: /, secret.join(' '));
    }
    const wrong = await login('--client-secret', `${client.clientSecret}y`);
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /\(invalid_client: /);
  });

  it('exits 1 with one line when the server cannot be reached', async () => {
    const result = await runTessera(['device-login', '--client-id', 'x', '--client-secret', 'y', '--issuer', 'http://127.0.0.1:9']);
    assert.equal(result.code, 1);
    assert.match(result.stderr, /^tessera: cannot reach http:\/\/127\.0\.0\.1:9: /);
    assert.equal(result.stderr.trim().split('\n').length, 1);
  });
});
