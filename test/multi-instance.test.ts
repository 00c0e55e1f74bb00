/**
 * Two Tessera server processes on two ports sharing one PostgreSQL database behave as one
 * server: what one issues the other redeems, a device started at one is approved through
 * the other, a browser session and the sign-in and user-code limits follow the user from
 * one to the other, a code or a device approval is still used once, a refresh token
 * replayed at one ends the approval at both, and both publish the same keys. Both get the
 * same `TESSERA_ISSUER`, as behind a load balancer, and each is called on its own port, as
 * the load balancer would. They trust X-Forwarded-For from loopback, as from a proxy, so
 * that a test can stand at an address of its own.
 *
 * Runs against the PostgreSQL of `test/helpers/postgres.ts`, in a schema of its own.
 */

import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import type { ChildProcess } from 'node:child_process';
import { after, before, it } from 'node:test';
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import * as oidc from 'openid-client';
import { FormBrowser, type Page } from './helpers/browser.ts';
import { runTessera as tessera, serveTessera } from './helpers/cli.ts';
import { assertPollError, BrowserAt, DEVICE_GRANT } from './helpers/device.ts';
import { databaseSetting, describePostgres, dropSchema, newSchema } from './helpers/postgres.ts';
import { authorizationAttempt, type Attempt, redeemAttempt } from './helpers/fixtures.ts';
import { basic, postForm, REDIRECT_URI } from './helpers/server.ts';

interface Instance {
  readonly name: string;
  readonly url: string;
  readonly process: ChildProcess;
  /** What the process wrote, for the message when something fails. */
  output(): string;
  stop(): Promise<unknown>;
}

/** Starts `tessera serve` on a port it picks, and resolves once it serves. */
async function startInstance(name: string, env: Record<string, string>): Promise<Instance> {
  const serving = await serveTessera([], env);
  return { name, url: serving.url, process: serving.child, output: () => JSON.stringify(serving.output()), stop: serving.stop };
}

async function stopInstance(instance: Instance | undefined): Promise<void> {
  await instance?.stop();
}

async function jwks(instance: Instance): Promise<JSONWebKeySet> {
  const response = await fetch(`${instance.url}/.well-known/jwks.json`);
  assert.equal(response.status, 200);
  return (await response.json()) as JSONWebKeySet;
}

/**
 * The authorization request of these tests. Every test here approves, and Ada's approval of the
 * app is remembered after the first: prompt=consent shows the approval page each time.
 */
const attempt = (config: oidc.Configuration, scope = 'openid profile'): Promise<Attempt> => authorizationAttempt(config, { scope, prompt: 'consent' });

/** The same authorization request, sent to another instance. */
const at = (instance: Instance, url: string | URL): string => {
  const moved = new URL(url, instance.url);
  return new URL(`${moved.pathname}${moved.search}`, instance.url).href;
};

/** Where a page redirects the browser to leave the server: the client's callback. */
function callback(page: Page): URL {
  assert.equal(page.status, 303, page.html);
  assert.ok(page.location?.startsWith(REDIRECT_URI), `redirected to ${page.location}`);
  return new URL(page.location!);
}

describePostgres('two Tessera processes on one PostgreSQL database', () => {
  const schema = newSchema();
  let issuer: string;
  let env: Record<string, string>;
  let a: Instance | undefined;
  let b: Instance | undefined;
  let client: { client_id: string; client_secret: string };
  const ada = { username: 'ada', password: 'correct horse battery staple' };
  let adaSub: string;
  /** openid-client, pointed at A by discovery. */
  let viaA: oidc.Configuration;
  /** The same client with B as its token endpoint and JWKS. */
  let viaB: oidc.Configuration;

  const A = () => a!;
  const B = () => b!;
  /** `tessera client add` of a confidential client redirecting to REDIRECT_URI, as an operator runs it. */
  const addClient = (name: string, scope: string, ...grants: string[]) =>
    tessera(
      ['client', 'add', '--name', name, '--redirect-uri', REDIRECT_URI, '--scope', scope, ...grants.flatMap((grant) => ['--grant', grant]), '--json'],
      env,
    );

  before(async () => {
    env = {
      TESSERA_DATABASE: databaseSetting(schema),
      TESSERA_TRUST_PROXY: 'loopback',
      // Instances sharing a database share the key that encrypts its signing keys.
      TESSERA_KEY_ENCRYPTION_KEY: randomBytes(32).toString('base64url'),
    };

    // A and two commands start at once on an empty schema and race to migrate it (the
    // advisory lock lets one do it); A picks its port, which makes its address the issuer
    // B is given, as behind a load balancer; B then races A to use the first keys.
    const [startedA, registered, created] = await Promise.all([
      startInstance('A', env),
      addClient('Photo Printer', 'openid profile', 'authorization_code', 'device_code'),
      tessera(['user', 'add', '--username', ada.username, '--password-stdin', '--name', 'Ada Lovelace'], env, `${ada.password}\n`),
    ]);
    a = startedA;
    issuer = a.url;
    env = { ...env, TESSERA_ISSUER: issuer };
    b = await startInstance('B', env);
    assert.equal(registered.code, 0, registered.stderr);
    assert.equal(created.code, 0, created.stderr);
    client = JSON.parse(registered.stdout) as typeof client;
    adaSub = /\(sub ([^)]+)\)/.exec(created.stdout)![1]!;

    viaA = await oidc.discovery(new URL(issuer), client.client_id, undefined, oidc.ClientSecretBasic(client.client_secret), {
      execute: [oidc.allowInsecureRequests],
    });
    const metadataOfB = (await (await fetch(`${B().url}/.well-known/openid-configuration`)).json()) as oidc.ServerMetadata;
    assert.equal(metadataOfB.issuer, issuer);
    viaB = new oidc.Configuration(
      { ...metadataOfB, token_endpoint: `${B().url}/oauth/token`, jwks_uri: `${B().url}/.well-known/jwks.json` },
      client.client_id,
      undefined,
      oidc.ClientSecretBasic(client.client_secret),
    );
    oidc.allowInsecureRequests(viaB);
  });

  after(async () => {
    await Promise.all([stopInstance(a), stopInstance(b)]);
    await dropSchema(schema);
  });

  /** A browser signed in as Ada on `instance`, and the page it was sent to next. */
  async function signIn(instance: Instance, start: Attempt): Promise<{ browser: FormBrowser; next: Page }> {
    const browser = new FormBrowser(instance.url);
    const signInPage = await browser.request(at(instance, start.url));
    const next = await browser.submit(signInPage, '/login', ada);
    assert.equal(next.status, 303, next.html);
    return { browser, next };
  }

  it('both publish the same JWKS, and tokens issued by A verify with the keys B publishes', async () => {
    const [keysA, keysB] = await Promise.all([jwks(A()), jwks(B())]);
    assert.deepEqual(keysA, keysB);

    const start = await attempt(viaA);
    const { browser, next } = await signIn(A(), start);
    const approved = await browser.submit(await browser.follow(next), '/oauth/authorize/decision', { decision: 'approve' });
    const tokens = await redeemAttempt(viaA, start, callback(approved));
    const keysOfB = createLocalJWKSet(await jwks(B()));
    const access = await jwtVerify(tokens.access_token, keysOfB, { issuer, audience: issuer, typ: 'at+jwt' });
    assert.equal(access.payload.sub, adaSub);
    const id = await jwtVerify(tokens.id_token!, keysOfB, { issuer, audience: client.client_id });
    assert.equal(id.payload['nonce'], start.nonce);
  });

  it('signs in on A, approves through B with the same session, and redeems the code at B', async () => {
    const start = await attempt(viaA);
    const { browser, next } = await signIn(A(), start);
    // The sign-in on A sends the browser back to the authorization request; the load
    // balancer sends that request to B, which knows the session.
    const consent = await browser.request(at(B(), next.location!));
    assert.equal(consent.status, 200, consent.html);
    assert.match(consent.html, /Ada Lovelace/);
    const callbackUrl = callback(await browser.submit(consent, '/oauth/authorize/decision', { decision: 'approve' }));
    assert.equal(callbackUrl.searchParams.get('iss'), issuer);

    const tokens = await redeemAttempt(viaB, start, callbackUrl);
    assert.equal(tokens.claims()?.sub, adaSub);
    const { payload } = await jwtVerify(tokens.access_token, createLocalJWKSet(await jwks(A())), { issuer, audience: issuer });
    assert.equal(payload['client_id'], client.client_id);
  });

  it('ends the session everywhere when the user signs out through either instance', async () => {
    const start = await attempt(viaA);
    const { browser, next } = await signIn(A(), start);
    const consent = await browser.request(at(B(), next.location!));
    const signedOut = await browser.submit(consent, '/logout', {});
    assert.equal(signedOut.status, 303);
    const again = await browser.request(at(A(), start.url));
    assert.equal(again.status, 200);
    assert.ok(browser.form(again, '/login'), 'A asks for the password again');
  });

  it('gives tokens for one code to exactly one of 20 concurrent redemptions spread over both', async () => {
    const start = await attempt(viaA);
    const { browser, next } = await signIn(B(), start);
    const code = callback(await browser.submit(await browser.follow(next), '/oauth/authorize/decision', { decision: 'approve' })).searchParams.get('code')!;

    const form = { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: start.verifier };
    const authorization = { authorization: basic(client.client_id, client.client_secret) };
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => postForm(`${(i % 2 === 0 ? A() : B()).url}/oauth/token`, form, authorization)));
    const winners = answers.filter((answer) => answer.status === 200);
    assert.equal(winners.length, 1, JSON.stringify(answers.map((answer) => answer.status)));
    assert.equal(typeof winners[0]!.body['access_token'], 'string');
    for (const answer of answers.filter((answer) => answer.status !== 200)) {
      assert.equal(answer.status, 400);
      assert.equal(answer.body['error'], 'invalid_grant');
    }
  });

  it('refuses a username from one address after 10 failed sign-ins from there counted on both, on both', async () => {
    const grace = { username: 'grace', password: 'a different long password' };
    const created = await tessera(['user', 'add', '--username', grace.username, '--password-stdin'], env, `${grace.password}\n`);
    assert.equal(created.code, 0, created.stderr);
    const browser = new FormBrowser(A().url);
    const form = browser.form(await browser.request(`${A().url}/login`), '/login').fields;

    for (let i = 0; i < 10; i++) {
      const failed = await browser.request(`${(i % 2 === 0 ? A() : B()).url}/login`, {
        form: { ...form, username: grace.username, password: `wrong guess ${i}` },
      });
      assert.equal(failed.status, 401, `attempt ${i + 1}`);
    }
    for (const instance of [B(), A()]) {
      const locked = await browser.request(`${instance.url}/login`, { form: { ...form, ...grace } });
      assert.equal(locked.status, 429, `${instance.name} refuses even the right password from that address`);
      assert.match(locked.html, /Too many wrong passwords for this username from your connection/);
    }
  });

  /** The device's first request (RFC 8628 §3.1), at `instance`. */
  async function startDevice(instance: Instance): Promise<{ device_code: string; user_code: string }> {
    const started = await postForm(
      `${instance.url}/oauth/device/authorization`,
      { scope: 'openid profile' },
      {
        authorization: basic(client.client_id, client.client_secret),
      },
    );
    assert.equal(started.status, 200, JSON.stringify(started.body));
    return started.body as { device_code: string; user_code: string };
  }

  const pollAt = (instance: Instance, deviceCode: string) =>
    postForm(
      `${instance.url}/oauth/token`,
      { grant_type: DEVICE_GRANT, device_code: deviceCode },
      {
        authorization: basic(client.client_id, client.client_secret),
      },
    );

  it('holds a device to its polling interval across both: pending at B, then slow_down at A', async () => {
    const device = await startDevice(A());
    assertPollError(await pollAt(B(), device.device_code), 'authorization_pending');
    assertPollError(await pollAt(A(), device.device_code), 'slow_down');
  });

  it('starts a device at A, approves it through B, and gives tokens once to 20 polls spread over both', async () => {
    const device = await startDevice(A());
    const browser = new BrowserAt(B().url, '198.51.100.20');
    const done = await browser.decide(device.user_code, ada, 'approve');
    assert.equal(done.status, 200, done.html);

    // No poll came before the approval, so none of these is too soon: one takes the
    // tokens, the others find them already issued.
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => pollAt(i % 2 === 0 ? A() : B(), device.device_code)));
    const winners = answers.filter((answer) => answer.status === 200);
    assert.equal(winners.length, 1, JSON.stringify(answers.map((answer) => answer.body['error'] ?? answer.status)));
    for (const answer of answers.filter((answer) => answer.status !== 200)) assertPollError(answer, 'invalid_grant');
    const { payload } = await jwtVerify(winners[0]!.body['access_token'] as string, createLocalJWKSet(await jwks(A())), {
      issuer,
      audience: issuer,
    });
    assert.equal(payload.sub, adaSub);
  });

  it('locks user-code entry after 5 wrong codes counted on both, on both', async () => {
    const device = await startDevice(B());
    const browser = new BrowserAt(A().url, '198.51.100.30');
    const enter = async (instance: Instance, code: string) => browser.submit(await browser.request(`${instance.url}/device`), '/device', { user_code: code });

    for (const [i, wrong] of ['BBBB-BBBB', 'CCCC-CCCC', 'DDDD-DDDD', 'FFFF-FFFF', 'GGGG-GGGG'].entries()) {
      const refused = await enter(i % 2 === 0 ? A() : B(), wrong);
      assert.equal(refused.status, 400, `wrong code ${i + 1}`);
    }
    for (const instance of [B(), A()]) {
      const locked = await enter(instance, device.user_code);
      assert.equal(locked.status, 429, `${instance.name} refuses even a live code`);
      assert.match(locked.html, /Too many wrong codes/);
    }
  });

  it('rotates at B a refresh token A issued, and a replay of the old one at A ends the approval on both', async () => {
    const registered = await addClient('Mail', 'openid offline_access', 'authorization_code', 'refresh_token');
    assert.equal(registered.code, 0, registered.stderr);
    const mail = JSON.parse(registered.stdout) as typeof client;
    const authorization = { authorization: basic(mail.client_id, mail.client_secret) };
    const mailViaA = await oidc.discovery(new URL(issuer), mail.client_id, undefined, oidc.ClientSecretBasic(mail.client_secret), {
      execute: [oidc.allowInsecureRequests],
    });
    const start = await attempt(mailViaA, 'openid offline_access');
    const { browser, next } = await signIn(A(), start);
    const approved = await browser.submit(await browser.follow(next), '/oauth/authorize/decision', { decision: 'approve' });
    const first = await redeemAttempt(mailViaA, start, callback(approved));
    assert.ok(first.refresh_token, 'a refresh token with offline_access');

    const refresh = (instance: Instance, token: string) =>
      postForm(`${instance.url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: token }, authorization);
    const rotated = await refresh(B(), first.refresh_token);
    assert.equal(rotated.status, 200, JSON.stringify(rotated.body));
    const second = rotated.body as { access_token: string; refresh_token: string };

    const replay = await refresh(A(), first.refresh_token);
    assert.equal(replay.status, 400);
    assert.equal(replay.body['error'], 'invalid_grant');
    const afterReplay = await refresh(B(), second.refresh_token);
    assert.equal(afterReplay.status, 400, 'the rotated token died with the approval');
    assert.equal(afterReplay.body['error'], 'invalid_grant');
    const introspected = await postForm(`${A().url}/oauth/introspect`, { token: second.access_token }, authorization);
    assert.equal(introspected.status, 200);
    assert.equal(introspected.body['active'], false, 'A knows the access token B issued is revoked');
  });

  it('disabling a user with tessera user disable ends their session and tokens on both instances at once', async () => {
    const eve = { username: 'eve', password: 'eve has a long password' };
    assert.equal((await tessera(['user', 'add', '--username', eve.username, '--password-stdin'], env, `${eve.password}\n`)).code, 0);
    const registered = await addClient('Notes', 'openid offline_access', 'authorization_code', 'refresh_token');
    const notes = JSON.parse(registered.stdout) as typeof client;
    const authorization = { authorization: basic(notes.client_id, notes.client_secret) };
    const notesViaA = await oidc.discovery(new URL(issuer), notes.client_id, undefined, oidc.ClientSecretBasic(notes.client_secret), {
      execute: [oidc.allowInsecureRequests],
    });
    const start = await attempt(notesViaA, 'openid offline_access');
    const browser = new FormBrowser(A().url);
    const signedIn = await browser.submit(await browser.request(at(A(), start.url)), '/login', eve);
    assert.equal(signedIn.status, 303, signedIn.html);
    const approved = await browser.submit(await browser.follow(signedIn), '/oauth/authorize/decision', { decision: 'approve' });
    const tokens = await redeemAttempt(notesViaA, start, callback(approved));
    assert.equal((await browser.request(at(B(), '/account'))).status, 200, 'signed in, as seen from B');

    const disabled = await tessera(['user', 'disable', 'eve'], env);
    assert.equal(disabled.code, 0, disabled.stderr);

    const refreshed = await postForm(`${B().url}/oauth/token`, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token! }, authorization);
    assert.equal(refreshed.status, 400);
    assert.equal(refreshed.body['error'], 'invalid_grant');
    for (const instance of [A(), B()]) {
      const introspected = await postForm(`${instance.url}/oauth/introspect`, { token: tokens.access_token }, authorization);
      assert.equal(introspected.body['active'], false, `${instance.name} no longer accepts the access token`);
      const account = await browser.request(at(instance, '/account'));
      assert.equal(account.status, 303, `${instance.name}: the session has ended`);
    }
    const events = JSON.parse((await tessera(['events', '--user', 'eve', '--json'], env)).stdout) as { type: string }[];
    assert.deepEqual(
      ['signin.succeeded', 'consent.given', 'code.redeemed', 'user.disabled'].filter((type) => !events.some((event) => event.type === type)),
      [],
      'each step is on record in the shared store',
    );
  });

  it('publishes a key rotated with tessera keys rotate on both instances at once', async () => {
    const rotated = await tessera(['keys', 'rotate'], env);
    assert.equal(rotated.code, 0, rotated.stderr);
    const added = [...rotated.stdout.matchAll(/key (\S+);/g)].map((match) => match[1]!);
    assert.equal(added.length, 2, rotated.stdout);
    const [keysA, keysB] = await Promise.all([jwks(A()), jwks(B())]);
    assert.deepEqual(keysA, keysB);
    const published = keysA.keys.map((key) => key.kid);
    for (const kid of added) assert.ok(published.includes(kid), `${kid} is published`);
  });
});
