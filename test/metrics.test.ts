/**
 * Prometheus metrics on their own listener (TESSERA_METRICS_PORT): the counters move by
 * exactly what happened, as a scrape shows them.
 */
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { hashSecret, randomToken } from '../src/core/crypto.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE } from '../src/core/protocol.ts';
import type { RunningServer } from '../src/main.ts';
import { openStore } from '../src/store/open.ts';
import { FormBrowser } from './helpers/browser.ts';
import { outputMatches, runTessera, serveOnNewDatabase } from './helpers/cli.ts';
import { BrowserAt, DEVICE_GRANT } from './helpers/device.ts';
import { pkceRequest } from './helpers/fixtures.ts';
import { startMainServer } from './helpers/main-server.ts';
import { basic, postForm, REDIRECT_URI } from './helpers/server.ts';
import { ManualClock } from '../src/core/clock.ts';
import { Events, type EventInput } from '../src/core/events.ts';
import { Metrics } from '../src/http/metrics.ts';

/** The samples of a Prometheus text exposition, by series (`name{labels}`). */
async function scrape(url: string): Promise<Map<string, number>> {
  const response = await fetch(url);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const samples = new Map<string, number>();
  for (const line of (await response.text()).split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    samples.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return samples;
}

describe('metrics (TESSERA_METRICS_PORT)', () => {
  let main: Awaited<ReturnType<typeof startMainServer>>;
  let server: RunningServer;
  const client = { id: 'metrics-app', secret: randomToken(32) };
  const user = { username: 'ada', password: 'correct horse battery staple' };

  before(async () => {
    main = await startMainServer({ TESSERA_METRICS_PORT: '0' });
    ({ server } = main);
    const env = { TESSERA_DATABASE: main.config.database };
    const added = await runTessera(['user', 'add', '--username', user.username, '--password-stdin'], env, `${user.password}\n`);
    assert.equal(added.code, 0, added.stderr);
    // A client with a known secret, as `client add` would register it.
    const direct = await openStore(main.config.database);
    await direct.clients.create({
      id: client.id,
      name: 'Metrics App',
      secretHash: hashSecret(client.secret),
      redirectUris: [REDIRECT_URI],
      scopes: ['openid', 'profile'],
      grantTypes: [GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE],
      webOrigins: [],
      createdAt: Date.now(),
    });
    await direct.close();
  });
  after(() => main.close());

  const auth = () => ({ authorization: basic(client.id, client.secret) });
  const delta = (before: Map<string, number>, after: Map<string, number>, series: string) => (after.get(series) ?? 0) - (before.get(series) ?? 0);

  it('listens on loopback, apart from the server, and serves only /metrics', async () => {
    assert.match(server.metricsUrl ?? '', /^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    assert.notEqual(new URL(server.metricsUrl!).port, new URL(server.url).port);
    assert.equal((await fetch(new URL('/', server.metricsUrl!))).status, 404);
    assert.equal((await fetch(`${server.url}/metrics`)).status, 404, 'not on the public listener');
    const samples = await scrape(server.metricsUrl!);
    assert.ok(samples.has('process_cpu_user_seconds_total'), 'the default process metrics');
    assert.ok(samples.has('nodejs_eventloop_lag_seconds'));
  });

  it('counts a code flow, a device flow and a failed sign-in by the right amounts', async () => {
    const before = await scrape(server.metricsUrl!);

    // A failed sign-in.
    const stranger = new FormBrowser(server.url);
    const page = await stranger.follow(await stranger.request('/login'));
    assert.equal((await stranger.submit(page, '/login', { username: 'ada', password: 'wrong' })).status, 401);

    // The code flow, through openid-client.
    const config = await oidc.discovery(new URL(server.url), client.id, undefined, oidc.ClientSecretBasic(client.secret), {
      execute: [oidc.allowInsecureRequests],
    });
    const { url, verifier } = await pkceRequest(config);
    const browser = new BrowserAt(server.url);
    const redirect = await browser.authorize(url.href, user);
    await oidc.authorizationCodeGrant(config, new URL(redirect.location!), { pkceCodeVerifier: verifier, idTokenExpected: true });

    // The device flow: pending until approved, then consumed by one poll.
    const started = await postForm(`${server.url}/oauth/device/authorization`, { scope: 'openid' }, auth());
    const pending = await scrape(server.metricsUrl!);
    assert.equal(delta(before, pending, 'tessera_device_authorizations_pending'), 1);
    await browser.submit(await browser.reachApproval(started.body['user_code'] as string, null), '/device/approve', { decision: 'approve' });
    const polled = await postForm(`${server.url}/oauth/token`, { grant_type: DEVICE_GRANT, device_code: started.body['device_code'] as string }, auth());
    assert.equal(polled.status, 200);

    const after = await scrape(server.metricsUrl!);
    assert.equal(delta(before, after, 'tessera_signin_failures_total'), 1);
    assert.equal(delta(before, after, 'tessera_tokens_issued_total{grant="authorization_code"}'), 1);
    assert.equal(delta(before, after, 'tessera_tokens_issued_total{grant="urn:ietf:params:oauth:grant-type:device_code"}'), 1);
    assert.equal(delta(before, after, 'tessera_tokens_issued_total{grant="refresh_token"}'), 0);
    assert.equal(delta(before, after, 'tessera_device_authorizations_total{outcome="approved"}'), 1);
    assert.equal(delta(before, after, 'tessera_device_authorizations_total{outcome="consumed"}'), 1);
    assert.equal(delta(before, after, 'tessera_device_authorizations_total{outcome="denied"}'), 0);
    assert.equal(delta(before, after, 'tessera_device_authorizations_pending'), 0);
    assert.equal(delta(before, after, 'tessera_lockouts_total{kind="sign_in"}'), 0);
    assert.equal(delta(before, after, 'tessera_refresh_reuse_detected_total'), 0);
    // Two token requests (the code and the poll), counted by route pattern and status class.
    assert.equal(delta(before, after, 'http_request_duration_seconds_count{method="POST",route="/oauth/token",status_class="2xx"}'), 2);
    assert.equal(delta(before, after, 'http_request_duration_seconds_count{method="POST",route="/login",status_class="4xx"}'), 1);
    assert.ok(delta(before, after, 'tessera_store_operation_duration_seconds_count{operation="devices.poll"}') >= 1);
    assert.ok(delta(before, after, 'tessera_store_operation_duration_seconds_count{operation="transaction"}') >= 2, 'the approvals');
  });

  it("labels a request by its route pattern, never its URL: a link's token or a mistyped path never reaches a scrape", async () => {
    const token = randomToken(32);
    const before = await scrape(server.metricsUrl!);
    await (await fetch(`${server.url}/reset-password?token=${token}`)).arrayBuffer();
    await (await fetch(`${server.url}/no-such-page/${token}`)).arrayBuffer();
    assert.ok(!(await (await fetch(server.metricsUrl!)).text()).includes(token), 'the token is in no label');
    const after = await scrape(server.metricsUrl!);
    const requests = (route: string) =>
      [...after.keys()]
        .filter((series) => series.startsWith(`http_request_duration_seconds_count{method="GET",route="${route}",`))
        .reduce((sum, series) => sum + delta(before, after, series), 0);
    assert.equal(requests('/reset-password'), 1, 'counted under its route');
    assert.equal(requests('unmatched'), 1, 'a path no route has, under one label');
  });
});

describe('the metrics listener', () => {
  it('is off by default', async (t) => {
    const { server, close } = await startMainServer();
    t.after(close);
    assert.equal(server.metricsUrl, null);
  });

  it('stops the start with one clear line when its port is taken', async (t) => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    t.after(() => taken.close());
    const port = (taken.address() as AddressInfo).port;
    const result = await runTessera(['serve'], { PORT: '0', HOST: '127.0.0.1', TESSERA_METRICS_PORT: String(port), TESSERA_DATABASE: ':memory:' });
    assert.equal(result.code, 1);
    assert.equal(result.stderr, `tessera: TESSERA_METRICS_PORT: cannot listen on 127.0.0.1:${port} (EADDRINUSE)\n`);
  });
});

describe('metrics with several workers', () => {
  it('are served by the main thread, summed over the worker threads', async (t) => {
    const serving = await serveOnNewDatabase(t, 'tessera-metrics-workers-', ['--workers', '2'], { TESSERA_METRICS_PORT: '0' }, 2);
    // Said once every thread serves: after the threads' own lines, which serveTessera waits for.
    await outputMatches(serving, /metrics at \S+/);
    const metricsUrl = /metrics at (\S+)/.exec(serving.output().stdout)?.[1];
    assert.ok(metricsUrl, serving.output().stdout);
    for (let i = 0; i < 6; i++) assert.equal((await fetch(`${serving.url}/healthz`, { headers: { connection: 'close' } })).status, 200);
    const samples = await scrape(metricsUrl);
    assert.equal(
      samples.get('http_request_duration_seconds_count{method="GET",route="/healthz",status_class="2xx"}'),
      6,
      'every request, whichever worker answered it',
    );
    assert.equal(samples.get('tessera_device_authorizations_pending'), 0);
  });
});

describe('what the metrics count of second factors', () => {
  it('counts a refused passkey and a wrong or replayed code after the password as sign-in failures, and a code lockout as kind one_time_code', async () => {
    const metrics = new Metrics();
    const events = new Events(new ManualClock(0), { add: async () => {} }, [metrics.listener]);
    const inputs: EventInput[] = [
      { type: 'passkey.refused', detail: { reason: 'cloned' } },
      { type: 'second_factor.failed', detail: { reason: 'wrong_code', during: 'sign_in' } },
      { type: 'second_factor.failed', detail: { reason: 'replayed', during: 'sign_in' } },
      { type: 'second_factor.failed', detail: { reason: 'locked', during: 'sign_in' } },
      // A typo while setting up an app is no sign-in.
      { type: 'second_factor.failed', detail: { reason: 'wrong_code', during: 'enrolment' } },
      { type: 'second_factor.recovery_code_used', detail: { recovery_codes_left: 9 } },
    ];
    for (const input of inputs) await events.emit(input);
    const value = async (name: string, labels: Record<string, string> = {}) =>
      (await metrics.registry.getSingleMetric(name)!.get()).values.find((sample) =>
        Object.entries(labels).every(([key, wanted]) => sample.labels[key] === wanted),
      )?.value;
    assert.equal(await value('tessera_signin_failures_total'), 3);
    assert.equal(await value('tessera_lockouts_total', { kind: 'one_time_code' }), 1);
    assert.equal(await value('tessera_lockouts_total', { kind: 'sign_in' }), 0);
  });
});
