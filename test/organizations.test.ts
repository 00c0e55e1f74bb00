/**
 * Organizations end to end: an invitation into an organization makes a member, whose first
 * token (openid-client, as a real app) carries org_id and org_name in the ID token, the access
 * token and UserInfo, and keeps them through a refresh; a member of two chooses on the consent
 * page, and the choice is kept; a device (RFC 8628) gets the same, chosen on its approval
 * page; an organization's policy asks its members for a second factor;
 * and with TESSERA_SIGN_UP=invite, sign-up opens for an invitation alone.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN } from '../src/core/protocol.ts';
import { assertApprovalPage, FormBrowser, type Page, pageText as text } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { BrowserAt, pollWhileTestRuns, QUICK_POLLS, startDevice } from './helpers/device.ts';
import { operatorBrowser } from './helpers/console.ts';
import { adminToken, appConfig, pkceRequest } from './helpers/fixtures.ts';
import { startTestServer, type TestClient, type TestServer } from './helpers/server.ts';

/** Posts the approval form as a browser does: the one radio chosen (a browser sends the checked one alone). */
async function decide(browser: FormBrowser, page: Page, values: Record<string, string>, action = '/oauth/authorize/decision'): Promise<Page> {
  const form = browser.form(page, action);
  const body = new URLSearchParams({ ...form.fields, ...values });
  if (values['organization'] === undefined) body.delete('organization');
  for (const [name, value] of form.repeated) if (name !== 'organization') body.append(name, value);
  return browser.request(new URL(form.action, page.url).href, { form: body });
}

describe('organizations', () => {
  let server: TestServer;
  let app: TestClient;
  let config: oidc.Configuration;
  const env = () => ({ TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url });
  const orgIds: Record<string, string> = {};

  async function tessera(args: string[], stdin = ''): Promise<string> {
    const run = await runTessera(args, env(), stdin);
    assert.equal(run.code, 0, `tessera ${args.join(' ')}: ${run.stderr}`);
    return run.stdout;
  }

  before(async () => {
    server = await startTestServer({ env: QUICK_POLLS });
    app = await server.addClient({
      name: 'Team Board',
      scopes: ['openid', 'profile', 'organization', 'offline_access'],
      grantTypes: [GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN],
    });
    config = await appConfig(server, app);
    for (const name of ['Acme', 'Globex']) orgIds[name] = (JSON.parse(await tessera(['org', 'add', '--name', name, '--json'])) as { id: string }).id;
  });
  after(() => server.close());

  async function start(extra: Record<string, string> = {}) {
    return pkceRequest(config, { scope: 'openid organization offline_access', prompt: 'consent', ...extra });
  }

  it('lands an invited person in the organization, whose first token names it, as UserInfo does, and a refresh keeps it', async () => {
    const made = await tessera(['user', 'invite', '--email', 'wile@acme.example', '--org', 'Acme', '--role', 'admin', '--client', app.clientId, '--json']);
    const link = (JSON.parse(made) as { url: string }).url;
    const browser = new FormBrowser(server.url);
    const invitation = await browser.request(link);
    assert.equal(invitation.status, 200);
    const done = await browser.submit(invitation, '/invitation', { username: 'wile', name: 'Wile E.', password: 'acme rockets 1' });
    assert.equal(done.status, 200, done.html.slice(0, 500));
    const members = JSON.parse(await tessera(['org', 'member', 'list', 'Acme', '--json'])) as { username: string; role: string }[];
    assert.deepEqual(
      members.map((member) => [member.username, member.role]),
      [['wile', 'admin']],
      'a member with the role the invitation gave',
    );

    const { url, verifier } = await start();
    const back = await browser.authorize(url.href, { username: 'wile', password: 'acme rockets 1' });
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.location!), { pkceCodeVerifier: verifier });
    const claims = tokens.claims()!;
    assert.equal(claims['org_id'], orgIds['Acme']);
    assert.equal(claims['org_name'], 'Acme');
    const access = decodeJwt(tokens.access_token);
    assert.deepEqual([access['org_id'], access['org_name']], [orgIds['Acme'], 'Acme'], 'the access token names it too');
    const info = await oidc.fetchUserInfo(config, tokens.access_token, claims.sub);
    assert.deepEqual([info['org_id'], info['org_name']], [orgIds['Acme'], 'Acme']);

    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    assert.equal(refreshed.claims()?.['org_id'], orgIds['Acme'], 'a refresh keeps the organization');

    // Without the organization scope, no organization is named.
    const plain = await start({ scope: 'openid' });
    const without = await oidc.authorizationCodeGrant(config, new URL((await browser.authorize(plain.url.href, null)).location!), {
      pkceCodeVerifier: plain.verifier,
    });
    assert.equal(without.claims()?.['org_id'], undefined);
  });

  it('asks a member of two organizations which one, as a radio group, and keeps the choice with the approval', async () => {
    const user = await server.addUser({ username: 'sam', password: 'two hats 1234' });
    await tessera(['org', 'member', 'add', 'Acme', 'sam']);
    await tessera(['org', 'member', 'add', 'Globex', 'sam', '--role', 'owner']);
    const browser = new FormBrowser(server.url);
    const { url, verifier } = await start();
    const consent = await browser.signIn(await browser.follow(await browser.request(url.href)), { username: 'sam', password: 'two hats 1234' });
    assertApprovalPage(consent, '/oauth/authorize/decision');
    assert.match(text(consent.html), /Which organization do you sign in to Team Board for\?/);
    assert.match(consent.html, /<fieldset class="organizations"><legend>/);
    assert.match(consent.html, new RegExp(`<input type="radio" id="organization-0" name="organization" value="${orgIds['Acme']}" required >`));
    assert.match(consent.html, /<label for="organization-1">Globex<\/label>/);

    // Approving without a choice, or with an organization not theirs, shows the page again.
    const unchosen = await decide(browser, consent, { decision: 'approve' });
    assert.equal(unchosen.status, 200);
    assert.match(unchosen.html, /name="organization"/);
    const notTheirs = await decide(browser, consent, { decision: 'approve', organization: 'someone-elses' });
    assert.equal(notTheirs.status, 200);

    const approved = await decide(browser, consent, { decision: 'approve', organization: orgIds['Globex']! });
    assert.equal(approved.status, 303, approved.html.slice(0, 500));
    const tokens = await oidc.authorizationCodeGrant(config, new URL(approved.location!), { pkceCodeVerifier: verifier });
    assert.deepEqual([tokens.claims()?.['org_id'], tokens.claims()?.['org_name']], [orgIds['Globex'], 'Globex']);
    const grant = await server.store.grants.findRemembered(user.id, app.clientId);
    assert.equal(grant?.organizationId, orgIds['Globex'], 'the choice is kept with the approval');
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    assert.equal(refreshed.claims()?.['org_id'], orgIds['Globex']);

    // Asked again, the page checks the choice kept; with prompt=none and no page, the kept choice is used.
    const again = await start();
    const shown = await browser.follow(await browser.request(again.url.href));
    assert.match(shown.html, new RegExp(`value="${orgIds['Globex']}" required checked`));
    const silent = await start({ prompt: 'none' });
    const answered = await browser.request(silent.url.href);
    assert.equal(answered.status, 303);
    const silentTokens = await oidc.authorizationCodeGrant(config, new URL(answered.location!), { pkceCodeVerifier: silent.verifier });
    assert.equal(silentTokens.claims()?.['org_id'], orgIds['Globex']);

    // No longer in Globex: the tokens name no organization, and the next approval asks again.
    await tessera(['org', 'member', 'remove', 'Globex', 'sam']);
    assert.equal((await oidc.refreshTokenGrant(config, refreshed.refresh_token!)).claims()?.['org_id'], undefined);
  });

  it("names the organization in a device's tokens: chosen on the device's approval page by a member of two, the only one, or none", async (t) => {
    const tv = await server.addClient({
      name: 'Lobby Screen',
      scopes: ['openid', 'organization', 'offline_access'],
      grantTypes: [GRANT_DEVICE_CODE, GRANT_REFRESH_TOKEN],
    });
    const tvConfig = await appConfig(server, tv);
    const dana = await server.addUser({ username: 'dana', password: 'two badges 123' });
    await tessera(['org', 'member', 'add', 'Acme', 'dana']);
    await tessera(['org', 'member', 'add', 'Globex', 'dana']);
    const omar = await server.addUser({ username: 'omar', password: 'one badge 1234' });
    await tessera(['org', 'member', 'add', 'Acme', 'omar']);
    const nina = await server.addUser({ username: 'nina', password: 'no badge 12345' });

    // Three devices side by side: openid-client waits the interval before its first poll.
    const scope = 'openid organization offline_access';
    const devices = await Promise.all([dana, omar, nina].map(() => oidc.initiateDeviceAuthorization(tvConfig, { scope })));
    const [forDana, forOmar, forNina] = devices.map((device) => ({ device, polling: pollWhileTestRuns(t, tvConfig, device) }));

    const browser = new BrowserAt(server.url);
    const review = await browser.reachApproval(forDana!.device.user_code, dana);
    assert.match(text(review.html), /Which organization do you sign in to Lobby Screen for\?/);
    assert.match(review.html, new RegExp(`<input type="radio" id="organization-0" name="organization" value="${orgIds['Acme']}" required >`));
    assert.match(review.html, /<label for="organization-1">Globex<\/label>/);

    // An organization not theirs, or none, decides nothing: the page asks again.
    const record = () => server.store.devices.findByUserCode(forDana!.device.user_code.replace('-', ''), Date.now());
    for (const values of [{ decision: 'approve', organization: 'someone-elses' }, { decision: 'approve' }] as Record<string, string>[]) {
      const again = await decide(browser, review, values, '/device/approve');
      assert.equal(again.status, 200);
      assert.match(again.html, /name="organization"/, JSON.stringify(values));
      assert.doesNotMatch(text(again.html), /Device approved/);
      assert.equal((await record())?.status, 'pending', 'the device is still waiting');
    }
    const approved = await decide(browser, review, { decision: 'approve', organization: orgIds['Globex']! }, '/device/approve');
    assert.equal(approved.status, 200, approved.html.slice(0, 500));
    assert.match(text(approved.html), /Device approved/);
    // One membership is that one, with nothing to choose; no membership, no organization.
    const omarBrowser = new BrowserAt(server.url);
    const only = await omarBrowser.reachApproval(forOmar!.device.user_code, omar);
    assert.doesNotMatch(only.html, /name="organization"/);
    assert.match(text((await omarBrowser.submit(only, '/device/approve', { decision: 'approve' })).html), /Device approved/);
    const ninaBrowser = new BrowserAt(server.url);
    const none = await ninaBrowser.reachApproval(forNina!.device.user_code, nina);
    assert.doesNotMatch(none.html, /name="organization"/);
    assert.match(text((await ninaBrowser.submit(none, '/device/approve', { decision: 'approve' })).html), /Device approved/);
    const tokens = await forDana!.polling;
    assert.deepEqual([tokens.claims()?.['org_id'], tokens.claims()?.['org_name']], [orgIds['Globex'], 'Globex'], 'the ID token, validated by openid-client');
    const access = decodeJwt(tokens.access_token);
    assert.deepEqual([access['org_id'], access['org_name']], [orgIds['Globex'], 'Globex'], 'the access token names it too');
    const refreshed = await oidc.refreshTokenGrant(tvConfig, tokens.refresh_token!);
    assert.equal(refreshed.claims()?.['org_id'], orgIds['Globex'], 'a refresh keeps the organization');
    const [event] = await server.store.events.list({ userId: dana.id, type: 'device.approved', limit: 1 });
    assert.equal(event?.detail?.['organization'], orgIds['Globex'], 'the approval event names it');
    assert.equal((await forOmar!.polling).claims()?.['org_id'], orgIds['Acme']);
    const ninaTokens = await forNina!.polling;
    assert.equal(ninaTokens.claims()?.['org_id'], undefined);
    assert.equal(decodeJwt(ninaTokens.access_token)['org_id'], undefined);
  });

  it('needs admin:orgs to manage organizations, and admin:providers too to route a verified domain to a provider', async () => {
    await tessera(['provider', 'add', 'github', '--id', 'hub', '--name', 'Hub', '--client-id', 'x', '--client-secret-stdin'], 'y\n');
    const call = async (scope: string, method: string, path: string, body?: unknown) => {
      const { token } = await adminToken(server, scope);
      const response = await fetch(`${server.url}/admin/v1${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    assert.equal((await call('admin:orgs:read', 'GET', '/organizations')).status, 200);
    assert.equal((await call('admin:orgs:read', 'POST', '/organizations', { name: 'Read Only' })).status, 403);
    assert.equal((await call('admin:users', 'GET', '/organizations')).status, 403);
    const routed = { name: 'Routed', domain: 'routed.example', domain_verified: true, provider: 'hub' };
    const refused = await call('admin:orgs', 'POST', '/organizations', routed);
    assert.equal(refused.status, 403);
    assert.match(String(refused.body['detail']), /admin:providers/);
    assert.equal((await call('admin:orgs', 'POST', '/organizations', { ...routed, provider: null })).status, 201, 'verified, but routed nowhere');
    assert.equal((await call('admin:orgs admin:providers', 'POST', '/organizations', { ...routed, name: 'Routed 2', domain: 'routed2.example' })).status, 201);
    // Inviting someone into an organization is managing it.
    const invite = { email: 'x@routed.example', organization: 'Routed', organization_role: 'member' };
    assert.equal((await call('admin:users', 'POST', '/invitations', invite)).status, 403);
    assert.equal((await call('admin:users admin:orgs', 'POST', '/invitations', invite)).status, 200);
    assert.equal((await call('admin:users admin:orgs', 'POST', '/invitations', { ...invite, organization: 'Nowhere' })).status, 404);
  });

  it('adds and changes an organization in the console through the same operation; a viewer reads and may not change', async () => {
    const { browser } = await operatorBrowser(server, 'admin');
    const form = await browser.request('/console/orgs/new');
    assert.equal(form.status, 200);
    // A checkbox left unchecked is not sent by a browser: posted empty here, it reads as not checked.
    const added = await browser.submit(form, '/console/orgs', {
      name: 'Console Co',
      domain: 'Console.Example',
      domain_verified: '',
      require_passkey: 'on',
      require_second_factor: '',
    });
    assert.equal(added.status, 303, added.html.slice(0, 500));
    const page = await browser.follow(added);
    assert.match(text(page.html), /The organization was added\./);
    const made = JSON.parse(await tessera(['org', 'show', 'Console Co', '--json'])) as Record<string, unknown>;
    assert.deepEqual([made['domain'], made['domain_verified'], made['require_passkey']], ['console.example', false, true]);
    const refused = await browser.submit(form, '/console/orgs', { name: 'console co', domain_verified: '', require_passkey: '', require_second_factor: '' });
    assert.equal(refused.status, 409, 'a name taken whatever its case');
    assert.match(refused.html, /role="alert"/);
    const member = await browser.submit(page, /\/members$/, { username: 'wile', role: 'member' });
    assert.equal(member.status, 303);
    assert.match(text((await browser.follow(member)).html), /wile Member/);

    const viewer = await operatorBrowser(server, 'viewer');
    const list = await viewer.browser.request('/console/orgs');
    assert.equal(list.status, 200);
    assert.match(text(list.html), /Console Co/);
    assert.doesNotMatch(list.html, /href="\/console\/orgs\/new"/, 'no Add for a viewer');
    assert.equal((await viewer.browser.request('/console/orgs', { form: { name: 'Viewer Co', csrf_token: viewer.csrf } })).status, 403);
  });

  it("holds its members to the organization's policy: a second factor before approving", async () => {
    await server.addUser({ username: 'strict', password: 'only a password 1' });
    await tessera(['org', 'add', '--name', 'Strict Co', '--require-second-factor']);
    await tessera(['org', 'member', 'add', 'Strict Co', 'strict']);
    const browser = new FormBrowser(server.url);
    const { url } = await start({ scope: 'openid' });
    const signedIn = await browser.signIn(await browser.follow(await browser.request(url.href)), { username: 'strict', password: 'only a password 1' });
    assert.equal(signedIn.status, 200);
    assert.match(text(signedIn.html), /Approving needs a second factor/, 'the sign-in page again, saying why');
    assert.doesNotMatch(signedIn.html, /action="\/oauth\/authorize\/decision"/, 'no approval page');

    // A device's request asks the same of the same person.
    const tv = await server.addClient({ name: 'Team TV', grantTypes: [GRANT_DEVICE_CODE] });
    const started = await startDevice(server, tv, 'openid');
    const entry = await browser.request(started.verification_uri_complete);
    const review = await browser.follow(await browser.submit(entry, '/device', { user_code: started.user_code }));
    assert.match(text(review.html), /Approving needs a second factor/);
    assert.doesNotMatch(review.html, /value="approve"/, 'no approval of the device either');
  });
});

describe('sign-up by invitation only (TESSERA_SIGN_UP=invite)', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { TESSERA_SIGN_UP: 'invite' } });
  });
  after(() => server.close());

  it('offers no sign-up link, and opens /sign-up for a live invitation alone', async () => {
    const browser = new FormBrowser(server.url);
    const signIn = await browser.request('/login');
    assert.equal(signIn.status, 200);
    assert.doesNotMatch(signIn.html, /href="\/sign-up/, 'no sign-up link on the sign-in page');
    for (const path of ['/sign-up', '/sign-up?token=made-up']) {
      const closed = await browser.request(path);
      assert.equal(closed.status, 404, path);
      assert.match(text(closed.html), /Accounts here are made by invitation only/);
    }
    const made = await runTessera(['user', 'invite', '--email', 'new@example.com', '--json'], {
      TESSERA_DATABASE: server.config.database,
      TESSERA_ISSUER: server.url,
    });
    assert.equal(made.code, 0, made.stderr);
    const token = new URL((JSON.parse(made.stdout) as { url: string }).url).searchParams.get('token')!;
    const opened = await browser.request(`/sign-up?token=${token}`);
    assert.equal(opened.status, 303);
    assert.equal(opened.location, `/invitation?token=${token}`);
    const page = await browser.follow(opened);
    assert.equal(page.status, 200);
    assert.match(text(page.html), /new@example\.com/);
  });
});
