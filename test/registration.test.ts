/**
 * Apps that register themselves (docs/registration.md): RFC 7591 registration under each
 * policy (off, token, open), RFC 7592 management with a rotated registration access token,
 * software statements, the "not verified by <site>" marking of the consent page and
 * `client update --verified`; a registered client signs in in Chromium through openid-client.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import * as oidc from 'openid-client';
import type { Browser } from 'playwright-core';
import { hashSecret, randomToken } from '../src/core/crypto.ts';
import { chromiumUnavailable, launchChromium, signInAt } from './helpers/chromium.ts';
import { authorizeUrl, pkceRequest } from './helpers/fixtures.ts';
import { runTessera } from './helpers/cli.ts';
import { assertApprovalPage } from './helpers/browser.ts';
import { BrowserAt, startDevice, text } from './helpers/device.ts';
import { basic, postForm, startTestServer, type TestServer } from './helpers/server.ts';
import { within } from './helpers/wait.ts';

const LOOPBACK_REDIRECT = 'http://127.0.0.1:9/callback';

async function post(server: TestServer, body: unknown, token?: string) {
  const response = await fetch(`${server.url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
  return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
}

async function manage(uri: string, method: string, token: string, body?: unknown) {
  const response = await fetch(uri, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: (text ? JSON.parse(text) : null) as Record<string, unknown> };
}

/**
 * Signs `user` in to the client in Chromium through openid-client (PKCE), returning the
 * tokens and the consent page's text.
 */
async function signInInChromium(
  config: oidc.Configuration,
  user: { username: string; password: string },
  afterwards?: (page: import('playwright-core').Page) => Promise<void>,
) {
  const state = oidc.randomState();
  const { url, verifier } = await pkceRequest(config, { redirect_uri: LOOPBACK_REDIRECT, scope: 'openid profile', state });
  let browser: Browser | undefined;
  try {
    browser = await launchChromium();
    const { page, callback } = await signInAt(browser, url, user, LOOPBACK_REDIRECT);
    const approve = page.getByRole('button', { name: 'Approve' });
    await approve.waitFor();
    const consent = (await page.locator('main').innerText()).replace(/\s+/g, ' ');
    await approve.click();
    const tokens = await oidc.authorizationCodeGrant(config, await within(callback, 'the redirect back to the app'), {
      pkceCodeVerifier: verifier,
      expectedState: state,
    });
    await afterwards?.(page);
    return { tokens, consent };
  } finally {
    await browser?.close();
  }
}

/** The text of the approval page `user` reaches for `clientId` (signing in first), through HTTP. */
async function consentPage(server: TestServer, clientId: string, redirectUri: string, user: { username: string; password: string }): Promise<string> {
  const url = authorizeUrl(server.url, { client_id: clientId, redirect_uri: redirectUri, prompt: 'consent' });
  const browser = new BrowserAt(server.url);
  const page = await browser.signIn(await browser.follow(await browser.request(url.href)), user);
  assertApprovalPage(page, '/oauth/authorize/decision');
  return text(page);
}

describe('registration off (the default)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server.close());

  it('has no registration endpoint, and discovery names none', async () => {
    assert.equal((await post(server, { redirect_uris: [LOOPBACK_REDIRECT] })).status, 404);
    const metadata = (await (await fetch(`${server.url}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    assert.equal(metadata['registration_endpoint'], undefined);
  });
});

describe('registration with an initial access token (TESSERA_REGISTRATION=token)', () => {
  let server: TestServer;
  let issuerKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  const env = () => ({ TESSERA_DATABASE: server.config.database });

  async function initialToken(...args: string[]): Promise<string> {
    const made = await runTessera(['registration-token', 'create', ...args, '--json'], env());
    assert.equal(made.code, 0, made.stderr);
    return (JSON.parse(made.stdout) as { token: string }).token;
  }

  before(async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256');
    issuerKey = privateKey;
    const jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'marketplace', alg: 'ES256' }] };
    server = await startTestServer({ env: { TESSERA_REGISTRATION: 'token', TESSERA_SOFTWARE_STATEMENT_JWKS: JSON.stringify(jwks) } });
  });
  after(() => server.close());

  it('registers a client with openid-client, signs a person in through it in Chromium, marked "not verified" until the operator verifies it', {
    skip: chromiumUnavailable(),
  }, async () => {
    const metadata = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    assert.equal(metadata['registration_endpoint'], `${server.url}/oauth/register`);
    const token = await initialToken('--max-uses', '1');
    const config = await oidc.dynamicClientRegistration(
      new URL(server.url),
      {
        client_name: 'Photo Printer',
        redirect_uris: [LOOPBACK_REDIRECT],
        grant_types: ['authorization_code', 'refresh_token'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
      undefined,
      { initialAccessToken: token, execute: [oidc.allowInsecureRequests] },
    );
    const registered = config.clientMetadata();
    assert.ok(registered.client_secret, 'a confidential client gets its secret');
    assert.equal(registered['registered_by'], 'dynamic');
    assert.equal(registered['verified'], false);
    assert.match(String(registered['registration_client_uri']), new RegExp(`^${server.url}/oauth/register/`));

    const user = await server.addUser();
    const first = await signInInChromium(config, user, async (page) => {
      // /account lists it like any app, with its Revoke button.
      await page.goto(`${server.url}/account`);
      await page.getByText('Photo Printer').first().waitFor();
    });
    assert.match(first.consent, /Not verified by Tessera\. Photo Printer registered itself/);
    assert.ok(first.tokens.claims()?.sub);

    const verified = await runTessera(['client', 'update', registered.client_id, '--verified', '--json'], env());
    assert.equal(verified.code, 0, verified.stderr);
    assert.deepEqual([JSON.parse(verified.stdout).registered_by, JSON.parse(verified.stdout).verified], ['dynamic', true]);
    const second = await signInInChromium(config, await server.addUser());
    assert.doesNotMatch(second.consent, /Not verified/);
    // The operator's own clients are neither: the flag is for self-registered apps.
    const own = await server.addClient();
    const refused = await runTessera(['client', 'update', own.clientId, '--verified'], env());
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /--verified: only an app that registered itself/);
  });

  it('refuses a registration without a token, with an unknown, used-up or expired one (401), and does not spend a token on a refused registration', async () => {
    const body = { client_name: 'CLI', redirect_uris: [LOOPBACK_REDIRECT], token_endpoint_auth_method: 'none' };
    const none = await post(server, body);
    assert.deepEqual([none.status, none.body['error']], [401, 'invalid_token']);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer /);
    assert.equal((await post(server, body, 'not-a-token')).status, 401);

    const once = await initialToken('--max-uses', '1');
    const bad = await post(server, { ...body, redirect_uris: ['https://app.example/cb#frag'] }, once);
    assert.deepEqual([bad.status, bad.body['error']], [400, 'invalid_redirect_uri']);
    const made = await post(server, body, once);
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.body['client_secret'], undefined, 'a public client has no secret');
    const again = await post(server, body, once);
    assert.deepEqual([again.status, again.body['error']], [401, 'invalid_token']);

    // A token past its time.
    const expired = randomToken(32);
    const now = Date.now();
    await server.store.initialAccessTokens.create({
      id: 'expired',
      tokenHash: hashSecret(expired),
      createdAt: now - 120_000,
      expiresAt: now - 60_000,
      maxUses: null,
      uses: 0,
    });
    const late = await post(server, body, expired);
    assert.deepEqual([late.status, late.body['error']], [401, 'invalid_token']);
  });

  it('refuses what client add refuses, naming the field, and ignores fields it does not know', async () => {
    const token = await initialToken();
    const cases: [Record<string, unknown>, string, string][] = [
      [{ redirect_uris: ['https://app.example/cb#x'] }, 'invalid_redirect_uri', 'redirect_uris'],
      [{ redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri', 'redirect_uris'],
      [{ redirect_uris: ['http://app.example/cb'], token_endpoint_auth_method: 'none' }, 'invalid_redirect_uri', 'redirect_uris'],
      [{ redirect_uris: [LOOPBACK_REDIRECT], token_endpoint_auth_method: 'client_secret_jwt' }, 'invalid_client_metadata', 'token_endpoint_auth_method'],
      [{ redirect_uris: [LOOPBACK_REDIRECT], grant_types: ['implicit'] }, 'invalid_client_metadata', 'grant_types'],
      [{ redirect_uris: [LOOPBACK_REDIRECT], response_types: ['token'] }, 'invalid_client_metadata', 'response_types'],
      [{ redirect_uris: [LOOPBACK_REDIRECT], client_name: 'Bank\u0000 of\u202eAmerica' }, 'invalid_client_metadata', 'client_name'],
      [{ redirect_uris: [LOOPBACK_REDIRECT], client_name: 'Line\nbreak' }, 'invalid_client_metadata', 'client_name'],
      [{ redirect_uris: [LOOPBACK_REDIRECT], scope: 'openid admin:clients' }, 'invalid_client_metadata', 'scope'],
      [{ redirect_uris: [LOOPBACK_REDIRECT], scope: 'openid no-such-scope' }, 'invalid_client_metadata', 'scope'],
      [{ redirect_uris: 'not a list' }, 'invalid_redirect_uri', 'redirect_uris'],
      [{ redirect_uris: [LOOPBACK_REDIRECT], grant_types: 'authorization_code' }, 'invalid_client_metadata', 'grant_types'],
    ];
    for (const [body, error, field] of cases) {
      const refused = await post(server, body, token);
      assert.deepEqual([refused.status, refused.body['error']], [400, error], `${JSON.stringify(body)}: ${JSON.stringify(refused.body)}`);
      assert.match(String(refused.body['error_description']), new RegExp(field), `the description names ${field}`);
    }
    const tolerant = await post(
      server,
      {
        redirect_uris: [LOOPBACK_REDIRECT],
        client_name: 'Tolerant',
        logo_uri: 'https://app.example/logo.png',
        colour: 'blue',
        first_party: true,
        pkce: 'optional',
      },
      token,
    );
    assert.equal(tolerant.status, 201, JSON.stringify(tolerant.body));
    assert.equal(tolerant.body['colour'], undefined);
    const client = await server.store.clients.get(tolerant.body['client_id'] as string);
    assert.deepEqual([client?.firstParty, client?.pkce], [false, 'required'], 'a registering app cannot make itself first-party or drop PKCE');
  });

  it('refuses loopback back-channel logout and JWKS URLs from a registering app, at registration and in an update, which the operator may still set on its own clients', async () => {
    const token = await initialToken();
    const base = { client_name: 'Printer', redirect_uris: ['https://printer.example/cb'], token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [] } };
    const cases: [Record<string, unknown>, string][] = [
      [{ backchannel_logout_uri: 'http://127.0.0.1:8080/admin/v1/keys' }, 'backchannel_logout_uri'],
      [{ backchannel_logout_uri: 'https://127.9.9.9:25/' }, 'backchannel_logout_uri'],
      [{ backchannel_logout_uri: 'https://localhost:6379/' }, 'backchannel_logout_uri'],
      [{ backchannel_logout_uri: 'https://x.localhost./logout' }, 'backchannel_logout_uri'],
      [{ backchannel_logout_uri: 'http://[::1]:9/logout' }, 'backchannel_logout_uri'],
      [{ backchannel_logout_uri: 'https://[::ffff:127.0.0.1]:9/logout' }, 'backchannel_logout_uri'],
      [{ jwks: undefined, jwks_uri: 'http://127.0.0.1:9/jwks' }, 'jwks_uri'],
      [{ jwks: undefined, jwks_uri: 'https://0x7f.1/jwks' }, 'jwks_uri'],
    ];
    for (const [extra, field] of cases) {
      const refused = await post(server, { ...base, ...extra }, token);
      assert.deepEqual([refused.status, refused.body['error']], [400, 'invalid_client_metadata'], `${JSON.stringify(extra)}: ${JSON.stringify(refused.body)}`);
      assert.match(String(refused.body['error_description']), new RegExp(`${field} .*is a loopback address`), JSON.stringify(refused.body));
    }
    const made = await post(server, { ...base, backchannel_logout_uri: 'https://printer.example/logout' }, token);
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const put = await manage(made.body['registration_client_uri'] as string, 'PUT', made.body['registration_access_token'] as string, {
      ...base,
      client_id: made.body['client_id'],
      backchannel_logout_uri: 'http://127.0.0.1:9/logout',
    });
    assert.deepEqual([put.status, put.body['error']], [400, 'invalid_client_metadata'], JSON.stringify(put.body));
    assert.equal((await server.store.clients.get(made.body['client_id'] as string))?.backchannelLogoutUri, 'https://printer.example/logout');
    // Loopback is the operator's: its own clients may name it.
    const own = await runTessera(
      ['client', 'add', '--name', 'Sidecar', '--redirect-uri', LOOPBACK_REDIRECT, '--backchannel-logout-uri', 'http://127.0.0.1:9/logout', '--json'],
      env(),
    );
    assert.equal(own.code, 0, own.stderr);
  });

  it("refuses a registering app the name of an operator's app or of the site, or a look-alike, and an operator app's private-use redirect scheme, at registration and in an update", async () => {
    await server.addClient({ name: 'Acme Bank', redirectUris: ['com.acme.bank:/callback'], public: true });
    const token = await initialToken();
    const names = [
      'Acme Bank',
      'ACME BANK',
      'acme  bank',
      '\u0410cme B\u0430nk',
      '\uff21\uff43\uff4d\uff45 \uff22\uff41\uff4e\uff4b',
      'Acrne Bank',
      '\u0391cme Bank',
      'Tessera',
      'TESSERA',
    ];
    for (const client_name of names) {
      const refused = await post(server, { client_name, redirect_uris: [LOOPBACK_REDIRECT], token_endpoint_auth_method: 'none' }, token);
      assert.deepEqual([refused.status, refused.body['error']], [400, 'invalid_client_metadata'], `${client_name}: ${JSON.stringify(refused.body)}`);
      assert.match(String(refused.body['error_description']), /client_name .*looks like the name of (an app registered by the operator|this site)/);
    }
    for (const uri of ['com.acme.bank:/callback', 'COM.Acme.Bank:/elsewhere']) {
      const refused = await post(server, { client_name: 'Pocket Ledger', redirect_uris: [uri], token_endpoint_auth_method: 'none' }, token);
      assert.deepEqual([refused.status, refused.body['error']], [400, 'invalid_redirect_uri'], `${uri}: ${JSON.stringify(refused.body)}`);
      assert.match(String(refused.body['error_description']), /scheme com\.acme\.bank belongs to an app registered by the operator/);
    }
    const own = await post(
      server,
      { client_name: 'Acme Banking Helper', redirect_uris: ['com.acme.helper:/callback'], token_endpoint_auth_method: 'none' },
      token,
    );
    assert.equal(own.status, 201, JSON.stringify(own.body));
    const renamed = await manage(own.body['registration_client_uri'] as string, 'PUT', own.body['registration_access_token'] as string, {
      client_id: own.body['client_id'],
      client_name: 'Acme B\u0430nk',
      redirect_uris: ['com.acme.helper:/callback'],
    });
    assert.deepEqual([renamed.status, renamed.body['error']], [400, 'invalid_client_metadata'], JSON.stringify(renamed.body));
    assert.equal((await server.store.clients.get(own.body['client_id'] as string))?.name, 'Acme Banking Helper');
  });

  it('takes a software statement signed by a trusted key, whose claims win; refuses one signed by another key', async () => {
    const token = await initialToken();
    const statement = await new SignJWT({ client_name: 'Marketplace Printer', software_id: 'printer' })
      .setProtectedHeader({ alg: 'ES256', kid: 'marketplace' })
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(issuerKey);
    const made = await post(server, { client_name: 'Whatever I Say', redirect_uris: [LOOPBACK_REDIRECT], software_statement: statement }, token);
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.equal(made.body['client_name'], 'Marketplace Printer');
    const { privateKey: stranger } = await generateKeyPair('ES256');
    const forged = await new SignJWT({ client_name: 'Forged' }).setProtectedHeader({ alg: 'ES256', kid: 'other' }).sign(stranger);
    const refused = await post(server, { redirect_uris: [LOOPBACK_REDIRECT], software_statement: forged }, token);
    assert.deepEqual([refused.status, refused.body['error']], [400, 'unapproved_software_statement']);
    const tampered = await post(server, { redirect_uris: [LOOPBACK_REDIRECT], software_statement: `${statement.slice(0, -4)}AAAA` }, token);
    assert.deepEqual([tampered.status, tampered.body['error']], [400, 'invalid_software_statement']);
  });

  it('reads, replaces (rotating the registration access token) and deletes a registration (RFC 7592)', async () => {
    const made = await post(
      server,
      { client_name: 'Notes', redirect_uris: [LOOPBACK_REDIRECT], grant_types: ['authorization_code', 'refresh_token'] },
      await initialToken(),
    );
    assert.equal(made.status, 201);
    const uri = made.body['registration_client_uri'] as string;
    const first = made.body['registration_access_token'] as string;
    const read = await manage(uri, 'GET', first);
    assert.deepEqual([read.status, read.body['client_name'], read.body['client_secret']], [200, 'Notes', undefined]);
    assert.equal((await manage(uri, 'GET', 'wrong-token')).status, 401);
    assert.equal((await manage(uri.replace(/[^/]+$/, 'someone-else'), 'GET', first)).status, 401, 'another client id');
    const stored = await server.store.registrationTokens.get(made.body['client_id'] as string);
    assert.ok(stored && !stored.includes(first), 'kept hashed');

    const replaced = await manage(uri, 'PUT', first, {
      client_id: made.body['client_id'],
      client_name: 'Notes 2',
      redirect_uris: [LOOPBACK_REDIRECT, 'http://127.0.0.1:9/other'],
    });
    assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
    assert.deepEqual(
      [replaced.body['client_name'], replaced.body['redirect_uris'], replaced.body['grant_types']],
      ['Notes 2', [LOOPBACK_REDIRECT, 'http://127.0.0.1:9/other'], ['authorization_code']],
      'fields left out take their defaults',
    );
    const second = replaced.body['registration_access_token'] as string;
    assert.ok(second && second !== first, 'a new token');
    assert.equal((await manage(uri, 'GET', first)).status, 401, 'the old token no longer works');
    assert.equal((await manage(uri, 'GET', second)).status, 200);
    assert.equal((await manage(uri, 'PUT', second, { client_name: 'No id' })).status, 400);
    // A public client's replacement that leaves its method out stays public.
    const cli = await post(server, { client_name: 'CLI', redirect_uris: [LOOPBACK_REDIRECT], token_endpoint_auth_method: 'none' }, await initialToken());
    const kept = await manage(cli.body['registration_client_uri'] as string, 'PUT', cli.body['registration_access_token'] as string, {
      client_id: cli.body['client_id'],
      redirect_uris: [LOOPBACK_REDIRECT],
    });
    assert.deepEqual([kept.status, kept.body['token_endpoint_auth_method']], [200, 'none'], JSON.stringify(kept.body));
    const badPut = await manage(uri, 'PUT', second, { client_id: made.body['client_id'], redirect_uris: ['https://x.example/#f'] });
    assert.deepEqual([badPut.status, badPut.body['error']], [400, 'invalid_redirect_uri']);
    assert.equal((await manage(uri, 'GET', second)).status, 200, 'a refused update keeps the token');
    assert.equal((await manage(uri, 'DELETE', second)).status, 204);
    assert.equal((await manage(uri, 'GET', second)).status, 401, 'gone');
    assert.equal(await server.store.clients.get(made.body['client_id'] as string), null);
  });

  it('deletes a registration whose DELETE carries Content-Type: application/json and no body, as some client libraries send it', async () => {
    const made = await post(server, { client_name: 'Empty body', redirect_uris: [LOOPBACK_REDIRECT] }, await initialToken());
    const uri = made.body['registration_client_uri'] as string;
    const token = made.body['registration_access_token'] as string;
    const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
    // A PUT with no body still has no metadata to take.
    const emptyPut = await fetch(uri, { method: 'PUT', headers });
    assert.deepEqual([emptyPut.status, ((await emptyPut.json()) as Record<string, unknown>)['error']], [400, 'invalid_client_metadata']);
    const deleted = await fetch(uri, { method: 'DELETE', headers });
    assert.equal(deleted.status, 204, await deleted.text());
    assert.equal(await server.store.clients.get(made.body['client_id'] as string), null);
  });

  it('shows "not verified" again once a verified app changes its name or redirect URIs itself (RFC 7592), not after a PUT that changes neither', async () => {
    const made = await post(
      server,
      { client_name: 'Field Notes', redirect_uris: [LOOPBACK_REDIRECT], token_endpoint_auth_method: 'none' },
      await initialToken(),
    );
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const clientId = made.body['client_id'] as string;
    const uri = made.body['registration_client_uri'] as string;
    let token = made.body['registration_access_token'] as string;
    const user = await server.addUser();
    const verify = async () => {
      const verified = await runTessera(['client', 'update', clientId, '--verified'], env());
      assert.equal(verified.code, 0, verified.stderr);
    };
    const put = async (body: Record<string, unknown>) => {
      const replaced = await manage(uri, 'PUT', token, { client_id: clientId, ...body });
      assert.equal(replaced.status, 200, JSON.stringify(replaced.body));
      token = replaced.body['registration_access_token'] as string;
      return replaced.body;
    };
    await verify();
    assert.doesNotMatch(await consentPage(server, clientId, LOOPBACK_REDIRECT, user), /Not verified/);
    // The same registration again (a PUT to rotate the token): still verified.
    assert.equal((await put({ client_name: 'Field Notes', redirect_uris: [LOOPBACK_REDIRECT] }))['verified'], true);
    assert.doesNotMatch(await consentPage(server, clientId, LOOPBACK_REDIRECT, user), /Not verified/);

    const renamed = await put({ client_name: 'Field Notes Pro', redirect_uris: [LOOPBACK_REDIRECT] });
    assert.equal(renamed['verified'], false);
    assert.match(await consentPage(server, clientId, LOOPBACK_REDIRECT, user), /Not verified by Tessera\. Field Notes Pro registered itself/);

    await verify();
    const moved = 'http://127.0.0.1:9/elsewhere';
    assert.equal((await put({ client_name: 'Field Notes Pro', redirect_uris: [moved] }))['verified'], false);
    assert.match(await consentPage(server, clientId, moved, user), /Not verified by Tessera\. Field Notes Pro registered itself/);
    const events = await server.store.events.list({ clientId, type: 'client.updated', limit: 10 });
    assert.ok(
      events.some((event) => event.detail['by'] === 'client' && event.detail['verified'] === false),
      'the audit trail says the mark went',
    );
  });

  it('removes, after TESSERA_UNUSED_REGISTRATION_RETENTION, an app nobody approved and that had no token, and keeps the ones used', async () => {
    const added = await runTessera(
      ['resource', 'add', '--identifier', 'https://printing.example/', '--name', 'Printing', '--scope', 'print:jobs=Send print jobs'],
      env(),
    );
    assert.equal(added.code, 0, added.stderr);
    const register = async (body: Record<string, unknown>) => {
      const made = await post(server, body, await initialToken());
      assert.equal(made.status, 201, JSON.stringify(made.body));
      return made.body;
    };
    const approved = await register({ client_name: 'Approved App', redirect_uris: [LOOPBACK_REDIRECT], token_endpoint_auth_method: 'none' });
    const service = await register({ client_name: 'Print Service', grant_types: ['client_credentials'], scope: 'print:jobs' });
    const forgotten = await register({ client_name: 'Forgotten App', redirect_uris: [LOOPBACK_REDIRECT], token_endpoint_auth_method: 'none' });

    const url = authorizeUrl(server.url, { client_id: approved['client_id'] as string, redirect_uri: LOOPBACK_REDIRECT });
    const back = await new BrowserAt(server.url).authorize(url.href, await server.addUser());
    assert.match(back.location ?? '', /[?&]code=/);
    const token = await postForm(
      `${server.url}/oauth/token`,
      { grant_type: 'client_credentials', scope: 'print:jobs' },
      { authorization: basic(service['client_id'] as string, service['client_secret'] as string) },
    );
    assert.equal(token.status, 200, JSON.stringify(token.body));

    // The purge as it runs once the retention has passed for all three.
    await server.store.purgeExpired(0, { unusedClientsBefore: Date.now() + 60_000 });
    const read = (app: Record<string, unknown>) => manage(app['registration_client_uri'] as string, 'GET', app['registration_access_token'] as string);
    assert.equal((await read(forgotten)).status, 401, 'the unused app is gone, with its registration access token');
    assert.equal(await server.store.clients.get(forgotten['client_id'] as string), null);
    assert.equal((await read(approved)).status, 200, 'an app a person approved stays');
    assert.equal((await read(service)).status, 200, 'an app that had a token stays');
  });

  it('marks a self-registered device app "not verified" on the device approval page too', async () => {
    const made = await post(
      server,
      { client_name: 'Living Room TV', grant_types: ['urn:ietf:params:oauth:grant-type:device_code'], token_endpoint_auth_method: 'client_secret_basic' },
      await initialToken(),
    );
    assert.equal(made.status, 201, JSON.stringify(made.body));
    const tv = { clientId: made.body['client_id'] as string, clientSecret: made.body['client_secret'] as string };
    const started = await startDevice(server, tv);
    const approval = await new BrowserAt(server.url).reachApproval(started.user_code, await server.addUser());
    assert.match(text(approval), /Not verified by Tessera\. Living Room TV registered itself/);
  });

  it('makes initial access tokens through the admin API too', async () => {
    const created = await runTessera(['client', 'add', '--name', 'CI', '--grant', 'client_credentials', '--scope', 'admin:clients', '--json'], env());
    const { client_id: id, client_secret: secret } = JSON.parse(created.stdout) as { client_id: string; client_secret: string };
    const config = await oidc.discovery(new URL(server.url), id, undefined, oidc.ClientSecretBasic(secret), { execute: [oidc.allowInsecureRequests] });
    const { access_token: admin } = await oidc.clientCredentialsGrant(config, { resource: `${server.url}/admin` });
    const response = await fetch(`${server.url}/admin/v1/registration-tokens`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: JSON.stringify({ max_uses: 1 }),
    });
    assert.equal(response.status, 201);
    const { token, id: tokenId } = (await response.json()) as { token: string; id: string };
    assert.equal((await post(server, { redirect_uris: [LOOPBACK_REDIRECT] }, token)).status, 201);
    const listed = (await (await fetch(`${server.url}/admin/v1/registration-tokens`, { headers: { authorization: `Bearer ${admin}` } })).json()) as {
      registration_tokens: { id: string; uses: number; token?: string }[];
    };
    const entry = listed.registration_tokens.find((item) => item.id === tokenId);
    assert.deepEqual([entry?.uses, entry?.token], [1, undefined]);

    // Verified through the admin API, as with client update --verified.
    const registered = await post(
      server,
      { client_name: 'SPA', redirect_uris: ['https://spa.example/cb'], token_endpoint_auth_method: 'none', web_origins: ['https://spa.example'] },
      await initialToken(),
    );
    assert.equal(registered.status, 201, JSON.stringify(registered.body));
    assert.deepEqual(registered.body['web_origins'], ['https://spa.example']);
    const path = `${server.url}/admin/v1/clients/${registered.body['client_id'] as string}`;
    const read = await fetch(path, { headers: { authorization: `Bearer ${admin}` } });
    const patched = await fetch(path, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', 'if-match': read.headers.get('etag')! },
      body: JSON.stringify({ verified: true }),
    });
    assert.equal(patched.status, 200);
    assert.deepEqual(((await patched.json()) as { verified: boolean; registered_by: string }).verified, true);
  });
});

describe('open registration (TESSERA_REGISTRATION=open)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { TESSERA_REGISTRATION: 'open', TESSERA_REGISTRATIONS_PER_ADDRESS: '6' } });
  });
  after(() => server.close());

  it('registers a public native app that anyone may register, which signs a person in in Chromium', { skip: chromiumUnavailable() }, async () => {
    const made = await post(server, { client_name: 'Terminal Notes', redirect_uris: [LOOPBACK_REDIRECT] });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    assert.deepEqual([made.body['token_endpoint_auth_method'], made.body['client_secret']], ['none', undefined]);
    const config = await oidc.discovery(new URL(server.url), made.body['client_id'] as string, undefined, oidc.None(), {
      execute: [oidc.allowInsecureRequests],
    });
    const { consent, tokens } = await signInInChromium(config, await server.addUser());
    assert.match(consent, /Not verified by Tessera/);
    assert.ok(tokens.access_token);
  });

  it('refuses confidential clients, web redirect URIs and other grants, and limits registrations per address', async () => {
    const confidential = await post(server, { redirect_uris: [LOOPBACK_REDIRECT], token_endpoint_auth_method: 'client_secret_basic' });
    assert.deepEqual([confidential.status, confidential.body['error']], [400, 'invalid_client_metadata']);
    assert.match(String(confidential.body['error_description']), /token_endpoint_auth_method/);
    const web = await post(server, { redirect_uris: ['https://evil.example/cb'] });
    assert.deepEqual([web.status, web.body['error']], [400, 'invalid_redirect_uri']);
    const device = await post(server, { redirect_uris: [LOOPBACK_REDIRECT], grant_types: ['urn:ietf:params:oauth:grant-type:device_code'] });
    assert.deepEqual([device.status, device.body['error']], [400, 'invalid_client_metadata']);
    const spa = await post(server, { redirect_uris: [LOOPBACK_REDIRECT], web_origins: ['https://evil.example'] });
    assert.deepEqual([spa.status, spa.body['error']], [400, 'invalid_client_metadata']);
    assert.equal((await post(server, { redirect_uris: ['com.example.notes:/callback'] })).status, 201, 'a private-use scheme');
    // Six an hour from this address; those refused for their metadata are not counted.
    let limited;
    for (let tries = 0; tries < 10; tries++) {
      limited = await post(server, { redirect_uris: [LOOPBACK_REDIRECT] });
      if (limited.status !== 201) break;
    }
    assert.equal(limited?.status, 429, JSON.stringify(limited?.body));
    assert.equal(limited?.body['error'], 'temporarily_unavailable');
    assert.match(String(limited?.body['error_description']), /too many registrations from this address this hour; try again in \d+ minutes/);
    assert.ok(Number(limited?.headers.get('retry-after')) > 0);
    assert.equal((await server.store.clients.list()).filter((client) => client.registeredBy === 'dynamic').length, 6);
  });
});

describe('open registration limits: per address, per network and across the server', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({
      env: {
        TESSERA_REGISTRATION: 'open',
        TESSERA_TRUST_PROXY: 'true',
        TESSERA_REGISTRATIONS_PER_ADDRESS: '2',
        TESSERA_REGISTRATIONS_PER_NETWORK: '3',
        TESSERA_REGISTRATIONS_PER_HOUR: '8',
      },
    });
  });
  after(() => server.close());

  const from = async (ip: string, body: Record<string, unknown> = { redirect_uris: [LOOPBACK_REDIRECT] }, token?: string) => {
    const response = await fetch(`${server.url}/oauth/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': ip, ...(token ? { authorization: `Bearer ${token}` } : {}) },
      body: JSON.stringify(body),
    });
    return { status: response.status, retryAfter: response.headers.get('retry-after'), body: (await response.json()) as Record<string, unknown> };
  };
  const refusedBy = (result: Awaited<ReturnType<typeof from>>, description: RegExp) => {
    assert.deepEqual([result.status, result.body['error']], [429, 'temporarily_unavailable'], JSON.stringify(result.body));
    assert.match(String(result.body['error_description']), description);
    assert.ok(Number(result.retryAfter) > 0 && Number(result.retryAfter) <= 3600, `Retry-After ${result.retryAfter}`);
  };

  it('refuses with 429 and Retry-After past each limit, writing nothing, and never refuses an initial access token', async () => {
    for (const ip of ['198.51.100.1', '198.51.100.1']) assert.equal((await from(ip)).status, 201);
    const stored = async () => ({
      clients: (await server.store.clients.list()).length,
      events: (await server.store.events.list({ limit: 1000 })).length,
      window: await server.store.rateLimits.window('registration:all', Date.now()),
    });
    const before = await stored();
    refusedBy(await from('198.51.100.1'), /too many registrations from this address this hour/);
    assert.deepEqual(await stored(), before, 'a refused registration writes nothing');
    assert.equal((await from('198.51.100.2')).status, 201);
    refusedBy(await from('198.51.100.3'), /too many registrations from this network \(IPv4 \/24, IPv6 \/64\) this hour/);
    // The addresses of one IPv6 /64 are one address (core/networks.ts countedAddress).
    for (const ip of ['2001:db8:0:1::a', '2001:db8:0:1::b']) assert.equal((await from(ip)).status, 201, ip);
    refusedBy(await from('2001:db8:0:1:ffff::c'), /too many registrations from this address this hour/);
    assert.equal((await from('2001:db8:0:2::a')).status, 201, 'the next /64');
    // Refused for their metadata: not counted.
    for (let i = 0; i < 3; i++) assert.equal((await from('203.0.113.1', { redirect_uris: ['https://evil.example/cb'] })).status, 400);
    for (let i = 0; i < 2; i++) assert.equal((await from('203.0.113.1')).status, 201);
    refusedBy(await from('192.0.2.1'), /this server takes no more open registrations this hour/);

    const made = await runTessera(['registration-token', 'create', '--json'], { TESSERA_DATABASE: server.config.database });
    const token = (JSON.parse(made.stdout) as { token: string }).token;
    assert.equal(
      (await from('198.51.100.1', { redirect_uris: [LOOPBACK_REDIRECT] }, token)).status,
      201,
      'an initial access token is not held to the open limits',
    );
    assert.equal((await server.store.clients.list()).filter((client) => client.registeredBy === 'dynamic').length, 9);
  });
});
