/**
 * Pushed authorization requests without HTTP (RFC 9126): a request pushed by an
 * authenticated client, then brought to the authorization endpoint by browsers (each named by
 * the hash of its CSRF cookie, as the endpoint names it) on a clock the test moves.
 * test/par.test.ts does the same through the endpoints, oauth4webapi and a browser.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { hashSecret } from '../../core/crypto.ts';
import { JWT_BEARER_ASSERTION } from '../../core/protocol.ts';
import type { OAuthError } from '../../core/errors.ts';
import type { ClientRecord } from '../../store/types.ts';
import { ClientKeySets } from '../../tokens/client-jwks.ts';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { pushAuthorizationRequest, REQUEST_URI_PREFIX } from './push.ts';
import { resolvePushedRequest, spendPushedRequest } from './resolve.ts';

const CALLBACK = 'https://app.example/cb';
const OTHER_CALLBACK = 'https://app.example/other';
const CHALLENGE = createHash('sha256').update('a-verifier-of-forty-three-characters-or-more-x').digest('base64url');

describe('pushed authorization requests (RFC 9126)', () => {
  let world: FlowWorld;
  let deps: FlowWorld['deps'] & { clientKeys: ClientKeySets };
  let app: ClientRecord;
  let other: ClientRecord;
  /** Registered with one of the app's redirect URIs among its own. */
  let twin: ClientRecord;

  before(async () => {
    world = await flowWorld();
    deps = { ...world.deps, clientKeys: new ClientKeySets(world.clock, world.config.clientAuth) };
    ({ client: app } = await world.addClient({ client_name: 'App', redirect_uris: [CALLBACK, OTHER_CALLBACK] }));
    ({ client: other } = await world.addClient({ client_name: 'Other', redirect_uris: ['https://other.example/cb'] }));
    ({ client: twin } = await world.addClient({ client_name: 'Twin', redirect_uris: [CALLBACK, 'https://twin.example/cb'] }));
  });
  after(() => world.close());

  const request = (params: Record<string, string> = {}) => ({
    response_type: 'code',
    redirect_uri: CALLBACK,
    scope: 'openid',
    state: 'the-apps-state',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    ...params,
  });
  const push = (params: Record<string, string> = {}, client = app, proof: { jkt: string } | null = null) =>
    pushAuthorizationRequest(deps, client, request(params), [], proof);
  const bring = (requestUri: string, browser: string, client = app) =>
    resolvePushedRequest(world.deps, { client_id: client.id, request_uri: requestUri }, browser);

  it('answers a request_uri that stands for the checked request, stored only as its hash, for TESSERA_PAR_TTL (§2.2)', async () => {
    const pushed = await push();
    assert.ok(pushed.request_uri.startsWith(REQUEST_URI_PREFIX));
    assert.ok(pushed.request_uri.length >= REQUEST_URI_PREFIX.length + 43, '256 bits chosen by the server');
    assert.equal(pushed.expires_in, world.config.par.requestLifetime);
    const stored = await world.store.pushedRequests.find(hashSecret(pushed.request_uri));
    assert.equal(stored?.clientId, app.id);
    assert.equal(stored?.params['state'], 'the-apps-state');
    assert.equal(JSON.stringify(stored).includes(pushed.request_uri), false, 'the request_uri itself is not kept');
  });

  it("keeps none of the client's credentials sent in the body (client_secret_post, private_key_jwt) with the request, however long", async () => {
    const pushed = await push({ client_secret: 'the-apps-secret', client_assertion_type: JWT_BEARER_ASSERTION, client_assertion: 'x'.repeat(1500) });
    const stored = await world.store.pushedRequests.find(hashSecret(pushed.request_uri));
    assert.deepEqual(
      ['client_secret', 'client_assertion', 'client_assertion_type'].filter((name) => stored?.params[name] !== undefined),
      [],
    );
    assert.equal(JSON.stringify(stored).includes('the-apps-secret'), false, 'no client secret kept in clear');
  });

  it('refuses a pushed request as the authorization endpoint would, answered to the client and never redirected (§2.3)', async () => {
    const cases: [string, Record<string, string>, ClientRecord, string][] = [
      ['another client_id than the authenticated one', { client_id: other.id }, app, 'invalid_request'],
      ['a request_uri inside a pushed request', { request_uri: `${REQUEST_URI_PREFIX}x` }, app, 'invalid_request'],
      ['a redirect_uri not registered', { redirect_uri: 'https://evil.example/cb' }, app, 'invalid_request'],
      ['no code_challenge (PKCE)', { code_challenge: '' }, app, 'invalid_request'],
      ['the plain PKCE method', { code_challenge_method: 'plain' }, app, 'invalid_request'],
      ['another response_type', { response_type: 'token' }, app, 'unsupported_response_type'],
      ['a scope the client may not have', { scope: 'openid admin:users' }, app, 'invalid_scope'],
    ];
    for (const [what, params, client, expected] of cases) assert.equal(await outcome(() => push(params, client)), expected, what);
    await assert.rejects(
      () => push({ request_uri: `${REQUEST_URI_PREFIX}x` }),
      (error: OAuthError) => /must not be sent in a pushed request/.test(error.description),
      'RFC 9126 §2.1: request_uri "MUST NOT be provided", and the answer says so',
    );
  });

  it('binds the request to the key of a DPoP proof sent with it, and refuses a dpop_jkt of another key (RFC 9449 §10.1)', async () => {
    const jkt = 'A'.repeat(43);
    const pushed = await push({}, app, { jkt });
    assert.equal((await world.store.pushedRequests.find(hashSecret(pushed.request_uri)))?.params['dpop_jkt'], jkt);
    assert.equal(await outcome(() => push({ dpop_jkt: 'B'.repeat(43) }, app, { jkt })), 'invalid_dpop_proof');
  });

  it('gives the request to the first browser that brings it, and to it alone, until the decision spends it (§4: one-time use)', async () => {
    const { request_uri: uri } = await push({ prompt: 'login consent', max_age: '0' });
    const first = await bring(uri, 'browser-a');
    assert.equal(first.kind, 'ok');
    assert.equal(first.kind === 'ok' && first.params['prompt'], 'login consent');
    const again = await bring(uri, 'browser-a');
    assert.equal(again.kind, 'ok', 'the same browser, back from signing in');
    // A visit is no sign-in: only one made since the request asked answers it (nextStep).
    assert.deepEqual(again.kind === 'ok' && [again.params['prompt'], again.params['max_age']], ['login consent', '0'], 'as pushed, every time');

    const stranger = await bring(uri, 'browser-b');
    assert.equal(stranger.kind, 'redirect', 'another browser is sent back to the app');
    assert.ok(stranger.kind === 'redirect');
    assert.equal(stranger.error.code, 'invalid_request_uri');
    assert.equal(stranger.redirectUri, CALLBACK);
    assert.equal(stranger.state, null, "another browser is not given the app's state");

    assert.ok(first.kind === 'ok');
    assert.ok(await spendPushedRequest(world.deps, app.id, first.hash, 'browser-a'), 'the decision spends it');
    assert.equal(await spendPushedRequest(world.deps, app.id, first.hash, 'browser-a'), null, 'once');
    const spent = await bring(uri, 'browser-a');
    assert.equal(spent.kind === 'redirect' && spent.error.code, 'invalid_request_uri');
    assert.equal(spent.kind === 'redirect' && spent.state, 'the-apps-state', 'its own browser gets the state back');
  });

  it('refuses a request_uri that has expired, is another client’s or is not one, where it safely can: the pushed redirect_uri, else the one registered', async () => {
    const { request_uri: late } = await push({ redirect_uri: OTHER_CALLBACK });
    world.clock.advance(world.config.par.requestLifetime * 1000 + 1);
    const expired = await bring(late, 'browser-a');
    assert.ok(expired.kind === 'redirect');
    assert.deepEqual([expired.error.code, expired.redirectUri], ['invalid_request_uri', OTHER_CALLBACK]);

    const { request_uri: apps } = await push();
    const theirs = await bring(apps, 'browser-a', other);
    assert.ok(theirs.kind === 'redirect');
    assert.equal(theirs.redirectUri, 'https://other.example/cb', "told at its own one redirect URI, never at the app's");
    assert.equal(theirs.state, null);

    const twins = await bring(apps, 'browser-a', twin);
    assert.equal(twins.kind, 'fatal', "not sent, with the app's state, to the app's redirect URI that another client registered too");

    const made = await bring(`${REQUEST_URI_PREFIX}${'x'.repeat(43)}`, 'browser-a');
    assert.equal(made.kind, 'fatal', 'nowhere to tell a client with two redirect URIs of a request_uri it never pushed');
    assert.equal(made.kind === 'fatal' && made.error.code, 'invalid_request_uri');
    const unknown = await resolvePushedRequest(world.deps, { client_id: 'nobody', request_uri: apps }, 'browser-a');
    assert.equal(unknown.kind === 'fatal' && unknown.error.code, 'invalid_request');
    const twice = await resolvePushedRequest(world.deps, { client_id: app.id, request_uri: [apps, apps] }, 'browser-a');
    assert.equal(twice.kind === 'fatal' && twice.error.code, 'invalid_request');
  });
});
