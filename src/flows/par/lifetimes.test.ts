/**
 * Pushed authorization requests without HTTP (RFC 9126), the rules par.test.ts beside it leaves
 * out: how long a request_uri lives unclaimed and how long its browser then has, that nothing
 * sent beside it is read (§4), what is stored for `resource` (RFC 8707) and a matching
 * `client_id` or `dpop_jkt`, and where an unusable request_uri is reported (its response mode,
 * its state, a redirect URI no longer registered). test/par.test.ts drives PAR through the
 * endpoints, oauth4webapi and a browser.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { hashSecret } from '../../core/crypto.ts';
import type { ClientRecord } from '../../store/types.ts';
import { ClientKeySets } from '../../tokens/client-jwks.ts';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { addResource } from '../manage/resources.ts';
import { pushAuthorizationRequest, REQUEST_URI_PREFIX } from './push.ts';
import { resolvePushedRequest, spendPushedRequest } from './resolve.ts';

const CALLBACK = 'https://app.example/cb';
const OTHER_CALLBACK = 'https://app.example/other';
const REPORTS = 'https://reports.example.com';
const LEDGER = 'https://ledger.example.com';
const CHALLENGE = createHash('sha256').update('a-verifier-of-forty-three-characters-or-more-x').digest('base64url');

describe('pushed authorization requests: lifetimes, what is read and where refusals go (RFC 9126)', () => {
  let world: FlowWorld;
  let deps: FlowWorld['deps'] & { clientKeys: ClientKeySets };
  let app: ClientRecord;
  let made = 0;

  before(async () => {
    world = await flowWorld();
    deps = { ...world.deps, clientKeys: new ClientKeySets(world.clock, world.config.clientAuth) };
    await addResource(world.manage, { identifier: REPORTS, name: 'Reports', scopes: [{ name: 'reports:read', description: 'Read reports' }] });
    await addResource(world.manage, { identifier: LEDGER, name: 'Ledger', scopes: [{ name: 'ledger:read', description: 'Read the ledger' }] });
    app = await client();
  });
  after(() => world.close());

  /** A client of the code grant with two redirect URIs. */
  async function client(): Promise<ClientRecord> {
    made += 1;
    const metadata = { client_name: `App ${made}`, redirect_uris: [CALLBACK, OTHER_CALLBACK], scope: 'openid reports:read ledger:read' };
    return (await world.addClient(metadata)).client;
  }

  const request = (params: Record<string, string> = {}) => ({
    response_type: 'code',
    redirect_uri: CALLBACK,
    scope: 'openid',
    state: 'the-apps-state',
    code_challenge: CHALLENGE,
    code_challenge_method: 'S256',
    ...params,
  });
  const push = (params: Record<string, string> = {}, by = app, resources: readonly string[] = [], proof: { jkt: string } | null = null) =>
    pushAuthorizationRequest(deps, by, request(params), resources, proof);
  const bring = (requestUri: string, browser: string, by = app, beside: Record<string, string> = {}) =>
    resolvePushedRequest(world.deps, { ...beside, client_id: by.id, request_uri: requestUri }, browser);
  const stored = async (requestUri: string) => {
    const record = await world.store.pushedRequests.find(hashSecret(requestUri));
    assert.ok(record);
    return record;
  };

  it('keeps a request_uri usable for expires_in seconds to the millisecond, and not from then on (§2.2)', async () => {
    const { request_uri: uri, expires_in: lifetime } = await push();
    const record = await stored(uri);
    assert.equal(record.expiresAt, record.createdAt + lifetime * 1000, 'expires_in is in seconds');
    const { request_uri: late } = await push();
    world.clock.advance(lifetime * 1000 - 1);
    assert.equal((await bring(uri, 'browser-a')).kind, 'ok', 'its last millisecond');
    world.clock.advance(1);
    const expired = await bring(late, 'browser-a');
    assert.equal(expired.kind === 'redirect' && expired.error.code, 'invalid_request_uri', 'at expires_in');
  });

  it('gives the browser that claimed it TESSERA_PAR_INTERACTION_TTL from the claim to sign in and decide, past the request’s own lifetime', async () => {
    const { interactionLifetime, requestLifetime } = world.config.par;
    assert.ok(interactionLifetime > requestLifetime, 'the defaults: a minute to bring it, ten to sign in and approve');
    const { request_uri: uri } = await push();
    const { request_uri: second } = await push();
    world.clock.advance(requestLifetime * 1000 - 1);
    const claimed = await bring(uri, 'browser-a');
    assert.ok(claimed.kind === 'ok');
    const claimedAgain = await bring(second, 'browser-a');
    assert.ok(claimedAgain.kind === 'ok');
    world.clock.advance(interactionLifetime * 1000 - 1);
    assert.equal((await bring(uri, 'browser-a')).kind, 'ok', 'back from signing in, in the last millisecond');
    assert.equal(await spendPushedRequest(world.deps, app.id, claimed.hash, 'browser-b'), null, 'another browser decides nothing');
    assert.ok(await spendPushedRequest(world.deps, app.id, claimed.hash, 'browser-a'), 'its own browser decides');
    world.clock.advance(1);
    assert.equal((await bring(second, 'browser-a')).kind, 'redirect', 'the time to sign in and decide is up');
    assert.equal(await spendPushedRequest(world.deps, app.id, claimedAgain.hash, 'browser-a'), null, 'nor can it be decided');
  });

  it('reads nothing sent beside the request_uri, on the first visit or a later one (§4: "MUST ignore any other authorization request parameters")', async () => {
    const { request_uri: uri } = await push({ prompt: 'consent' });
    const beside = { redirect_uri: 'https://evil.example/cb', scope: 'openid ledger:read', state: 'not-the-apps', prompt: 'none', response_mode: 'form_post' };
    for (const visit of ['first', 'later']) {
      const brought = await bring(uri, 'browser-a', app, beside);
      assert.ok(brought.kind === 'ok', visit);
      const { redirect_uri, scope, state, prompt, response_mode } = brought.params;
      assert.deepEqual(
        { redirect_uri, scope, state, prompt, response_mode },
        { redirect_uri: CALLBACK, scope: 'openid', state: 'the-apps-state', prompt: 'consent', response_mode: undefined },
        visit,
      );
    }
  });

  it('keeps the request as the client pushed it: its client_id whether sent or not, one resource as one value and several as a list (RFC 8707 §2)', async () => {
    const sent = await stored((await push({ client_id: app.id })).request_uri);
    assert.equal(sent.params['client_id'], app.id, 'client_id sent, and the authenticated client’s');
    const basic = await stored((await push()).request_uri);
    assert.equal(basic.params['client_id'], app.id, '§2.1: a client authenticated by HTTP Basic may leave client_id out');
    const one = await stored((await push({ scope: 'openid reports:read' }, app, [REPORTS])).request_uri);
    assert.equal(one.params['resource'], REPORTS);
    const both = await stored((await push({ scope: 'openid reports:read ledger:read' }, app, [REPORTS, LEDGER])).request_uri);
    assert.deepEqual(both.params['resource'], [REPORTS, LEDGER]);
    assert.equal(
      await outcome(() => push({ scope: 'openid reports:read' }, app, ['https://nowhere.example'])),
      'invalid_target',
      'RFC 8707 §2: an API not registered',
    );
  });

  it('takes a dpop_jkt that is the thumbprint of the DPoP proof sent with the push (RFC 9449 §10.1)', async () => {
    const jkt = 'C'.repeat(43);
    const pushed = await stored((await push({ dpop_jkt: jkt }, app, [], { jkt })).request_uri);
    assert.equal(pushed.params['dpop_jkt'], jkt);
  });

  it('reports an unusable request_uri as the pushed request asked: by form_post, with its state to any browser when none claimed it', async () => {
    const { request_uri: posted } = await push({ response_mode: 'form_post' });
    const first = await bring(posted, 'browser-a');
    assert.ok(first.kind === 'ok');
    await spendPushedRequest(world.deps, app.id, first.hash, 'browser-a');
    const spent = await bring(posted, 'browser-a');
    assert.ok(spent.kind === 'redirect');
    assert.deepEqual([spent.error.code, spent.responseMode, spent.state], ['invalid_request_uri', 'form_post', 'the-apps-state']);

    const { request_uri: unclaimed } = await push({ redirect_uri: OTHER_CALLBACK });
    world.clock.advance(world.config.par.requestLifetime * 1000);
    const expired = await bring(unclaimed, 'browser-b');
    assert.ok(expired.kind === 'redirect');
    assert.deepEqual([expired.redirectUri, expired.responseMode, expired.state], [OTHER_CALLBACK, 'query', 'the-apps-state']);
  });

  it('reports it at the one redirect URI still registered, without the state, when the one it was pushed with is no longer', async () => {
    const shrinking = await client();
    const { request_uri: uri } = await push({ redirect_uri: OTHER_CALLBACK }, shrinking);
    assert.ok(await world.store.clients.update(shrinking.id, { ...shrinking, redirectUris: [CALLBACK] }));
    world.clock.advance(world.config.par.requestLifetime * 1000);
    const expired = await bring(uri, 'browser-a', shrinking);
    assert.ok(expired.kind === 'redirect');
    assert.deepEqual([expired.error.code, expired.redirectUri, expired.state], ['invalid_request_uri', CALLBACK, null]);
  });

  it('refuses a request_uri that is not of the form §2.2 gives or is too long, and a client_id too long to be one', async () => {
    const { request_uri: uri } = await push();
    const cases: [string, string][] = [
      ['a URL', 'https://app.example/request.jwt'],
      ['the value without the URN prefix', uri.slice(REQUEST_URI_PREFIX.length)],
      ['too long', `${uri}${'x'.repeat(256)}`],
    ];
    for (const [what, value] of cases) {
      const brought = await bring(value, 'browser-a');
      assert.equal(brought.kind === 'fatal' && brought.error.code, 'invalid_request_uri', what);
    }
    const long = await resolvePushedRequest(world.deps, { client_id: 'c'.repeat(257), request_uri: uri }, 'browser-a');
    assert.equal(long.kind === 'fatal' && long.error.code, 'invalid_request');
    assert.equal((await bring(uri, 'browser-a')).kind, 'ok', 'the request_uri itself is still unclaimed');
  });
});
