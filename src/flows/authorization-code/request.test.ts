/**
 * Checking an authorization request without HTTP (flows/authorization-code/request.ts: RFC 6749
 * §4.1.1 and §4.1.2.1, RFC 9700 §2.1, RFC 8252 §7.3, RFC 7636, RFC 8707, OIDC Core §3.1.2.1):
 * a table a rule, each row a request and where its refusal goes, shown to the person on a page
 * (`page`, the client or redirect_uri cannot be trusted) or sent back to the client's
 * redirect_uri with its state (`redirect`), and what an accepted request is taken to ask for.
 * Request objects (the `request` parameter) are in request-object.test.ts. The same rules through
 * the endpoint: test/authorize-errors.test.ts (error page vs. redirect, PKCE, scope),
 * test/authorization-requests.test.ts (POST, long hints) and test/par.test.ts (pushed requests).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { s256 } from '../../core/crypto.ts';
import { OAuthError } from '../../core/errors.ts';
import type { ClientRecord } from '../../store/types.ts';
import { ClientKeySets } from '../../tokens/client-jwks.ts';
import { flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { addResource } from '../manage/resources.ts';
import { checkAuthorizationRequest, clientResponse, responseRedirectUrl, type RequestCheck, type RequestCheckDeps } from './request.ts';

const CALLBACK = 'https://notes.example/cb';
const OTHERS_CALLBACK = 'https://other.example/cb';
const LOOPBACK = 'http://127.0.0.1/cb';
const LOOPBACK_V6 = 'http://[::1]:8000/cb';
const APP_SCHEME = 'com.example.notes:/cb';
const CHALLENGE = s256('a-verifier-of-forty-three-characters-or-more-x');
const PHOTOS = 'https://photos.example';
const CALENDAR = 'urn:example:calendar';
const STATE = 'the-apps-state';

/** A request's parameters; `undefined` leaves one out. */
type Sent = Record<string, string | string[] | undefined>;
/** [what, parameters over the good request's, expected: 'ok', 'page CODE' or 'redirect CODE']. */
type Row = [string, Sent, string];

/** Where a check's answer goes: `ok`, `page CODE` (never redirected) or `redirect CODE`. */
function seen(check: RequestCheck): string {
  if (check.kind === 'ok') return 'ok';
  return `${check.kind === 'fatal' ? 'page' : 'redirect'} ${check.error.code}`;
}

describe('checking an authorization request (flows/authorization-code/request.ts)', () => {
  let world: FlowWorld;
  let deps: RequestCheckDeps;
  /** Confidential, PKCE required (the default), OpenID scopes and two APIs'. */
  let app: ClientRecord;
  /** A public native app: loopback and private-use redirect URIs (RFC 8252 §7.1, §7.3). */
  let native: ClientRecord;
  /** Confidential, registered `--pkce optional`: a nonce may stand in for PKCE. */
  let legacy: ClientRecord;
  /** Confidential, registered `--pkce optional-without-nonce`. */
  let lax: ClientRecord;
  /** Public with PKCE optional: registration refuses it; written to the store as an older one could be. */
  let publicOptional: ClientRecord;
  let deviceOnly: ClientRecord;
  let parOnly: ClientRecord;

  before(async () => {
    world = await flowWorld();
    deps = { ...world.deps, clientKeys: new ClientKeySets(world.clock, world.config.clientAuth) };
    await addResource(world.manage, { identifier: PHOTOS, name: 'Photos', scopes: [{ name: 'photos:read', description: 'See your photos' }] });
    await addResource(world.manage, { identifier: CALENDAR, name: 'Calendar', scopes: [{ name: 'calendar:read', description: 'See your calendar' }] });
    const scope = 'openid profile email photos:read calendar:read';
    ({ client: app } = await world.addClient({ client_name: 'Notes', redirect_uris: [CALLBACK], scope }));
    await world.addClient({ client_name: 'Other', redirect_uris: [OTHERS_CALLBACK] });
    ({ client: native } = await world.addClient({
      client_name: 'Native',
      redirect_uris: [LOOPBACK, LOOPBACK_V6, APP_SCHEME],
      token_endpoint_auth_method: 'none',
    }));
    ({ client: legacy } = await world.addClient({ client_name: 'Legacy', redirect_uris: [CALLBACK], pkce: 'optional', scope }));
    ({ client: lax } = await world.addClient({ client_name: 'Lax', redirect_uris: [CALLBACK], pkce: 'optional-without-nonce', scope }));
    publicOptional = { ...native, id: 'public-optional', name: 'Public optional', pkce: 'optional' };
    await world.store.clients.create(publicOptional);
    ({ client: deviceOnly } = await world.addClient({ client_name: 'TV', redirect_uris: [CALLBACK], grant_types: ['device_code'] }));
    ({ client: parOnly } = await world.addClient({ client_name: 'Bank', redirect_uris: [CALLBACK], require_pushed_authorization_requests: true }));
  });
  after(() => world.close());

  /** A good request of `client` (PKCE S256, an OpenID scope, a state and a nonce), with `overrides`. */
  function request(overrides: Sent = {}, client: ClientRecord = app): Record<string, string | string[]> {
    const params: Sent = {
      client_id: client.id,
      response_type: 'code',
      redirect_uri: client.redirectUris[0],
      scope: 'openid',
      state: STATE,
      nonce: 'n-0S6_WzA2Mj',
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
      ...overrides,
    };
    const sent: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(params)) if (value !== undefined) sent[name] = value;
    return sent;
  }

  const check = (overrides: Sent = {}, client: ClientRecord = app, pushed = false, parRequired = false) =>
    checkAuthorizationRequest(deps, request(overrides, client), pushed, parRequired);

  /**
   * Runs `rows` for `client` and checks each outcome; a redirected refusal goes to the
   * request's own redirect_uri, in the query, with its state (RFC 6749 §4.1.2.1: "state
   * REQUIRED if a "state" parameter was present in the client authorization request").
   */
  async function runRows(rows: readonly Row[], client: ClientRecord = app): Promise<void> {
    for (const [what, overrides, expected] of rows) {
      const sent = request(overrides, client);
      const result = await checkAuthorizationRequest(deps, sent);
      assert.equal(seen(result), expected, what);
      if (result.kind === 'redirect') {
        assert.equal(result.redirectUri, sent['redirect_uri'], `${what}: at the redirect_uri of the request`);
        assert.equal(result.state, typeof sent['state'] === 'string' ? sent['state'] : null, `${what}: with its state`);
        assert.equal(result.responseMode, 'query', what);
      }
    }
  }

  it('shows the person an error page, and never redirects, while the client or redirect_uri is not known good (RFC 6749 §4.1.2.1)', async () => {
    // RFC 6749 §4.1.2.1: "If the request fails due to a missing, invalid, or mismatching
    // redirection URI, or if the client identifier is missing or invalid, the authorization
    // server SHOULD inform the resource owner of the error and MUST NOT automatically redirect
    // the user-agent to the invalid redirection URI."
    await runRows([
      ['no client_id', { client_id: undefined }, 'page invalid_request'],
      // RFC 6749 §3.1: "Parameters sent without a value MUST be treated as if they were omitted from the request."
      ['an empty client_id', { client_id: '' }, 'page invalid_request'],
      ['an unknown client_id', { client_id: 'no-such-client' }, 'page invalid_request'],
      ['a client_id longer than 1,024 characters (not looked up)', { client_id: 'x'.repeat(1025) }, 'page invalid_request'],
      // RFC 6749 §3.1: "Request and response parameters MUST NOT be included more than once."
      ['client_id twice, the same both times', { client_id: [app.id, app.id] }, 'page invalid_request'],
      ['redirect_uri twice, the registered one both times', { redirect_uri: [CALLBACK, CALLBACK] }, 'page invalid_request'],
      ['no redirect_uri', { redirect_uri: undefined }, 'page invalid_request'],
      ['an empty redirect_uri', { redirect_uri: '' }, 'page invalid_request'],
      ["another client's registered redirect_uri", { redirect_uri: OTHERS_CALLBACK }, 'page invalid_request'],
      // RFC 9700 §2.1: "When comparing client redirection URIs against pre-registered URIs,
      // authorization servers MUST utilize exact string matching except for port numbers in
      // localhost redirection URIs of native apps."
      ['the registered redirect_uri with a trailing slash', { redirect_uri: `${CALLBACK}/` }, 'page invalid_request'],
      ['the registered redirect_uri with its host in capitals', { redirect_uri: 'https://NOTES.example/cb' }, 'page invalid_request'],
      ['the registered redirect_uri with its default port written out', { redirect_uri: 'https://notes.example:443/cb' }, 'page invalid_request'],
      ['the registered redirect_uri on another port (not loopback)', { redirect_uri: 'https://notes.example:8443/cb' }, 'page invalid_request'],
      ['the registered redirect_uri with a query added', { redirect_uri: `${CALLBACK}?next=https://attacker.example` }, 'page invalid_request'],
      ['the registered redirect_uri with a fragment', { redirect_uri: `${CALLBACK}#x` }, 'page invalid_request'],
      ['a redirect_uri that goes up out of the registered path', { redirect_uri: `${CALLBACK}/../evil` }, 'page invalid_request'],
      // Nothing else is read before the redirect_uri is known good: not even to send a second error there.
      [
        'an unregistered redirect_uri beside a bad response_type',
        { redirect_uri: 'https://attacker.example/cb', response_type: 'token' },
        'page invalid_request',
      ],
    ]);
    await runRows(
      [
        // RFC 8252 §7.3: the port may vary, and nothing else.
        ['the loopback redirect_uri on another path', { redirect_uri: 'http://127.0.0.1:51234/other' }, 'page invalid_request'],
        ['the loopback redirect_uri over https', { redirect_uri: 'https://127.0.0.1:51234/cb' }, 'page invalid_request'],
        ['localhost for a registered 127.0.0.1', { redirect_uri: 'http://localhost:51234/cb' }, 'page invalid_request'],
        ['the private-use redirect_uri on another path', { redirect_uri: 'com.example.notes:/other' }, 'page invalid_request'],
      ],
      native,
    );
  });

  it('says on the page what is wrong with the client_id or redirect_uri', async () => {
    const pages: [string, Sent, RegExp][] = [
      ['no client_id', { client_id: undefined }, /^client_id is required$/],
      ['client_id twice', { client_id: [app.id, app.id] }, /^client_id and redirect_uri must each be sent once$/],
      ['an unknown client_id', { client_id: 'no-such-client' }, /^client_id is not a registered client$/],
      ['redirect_uri twice', { redirect_uri: [CALLBACK, CALLBACK] }, /^client_id and redirect_uri must each be sent once$/],
      ['no redirect_uri', { redirect_uri: undefined }, /^redirect_uri is required$/],
      ['an unregistered redirect_uri', { redirect_uri: OTHERS_CALLBACK }, /^redirect_uri is not registered for this client$/],
    ];
    for (const [what, overrides, description] of pages) {
      const result = await check(overrides);
      assert.ok(result.kind === 'fatal', what);
      assert.match(result.error.description, description, what);
      assert.doesNotMatch(result.error.description, /other\.example/, `${what}: the page does not repeat the address`);
    }
  });

  it('lets a native app name any port on its loopback redirect URI, and answers on the port it named (RFC 8252 §7.3)', async () => {
    // RFC 8252 §7.3: "The authorization server MUST allow any port to be specified at the time
    // of the request for loopback IP redirect URIs, to accommodate clients that obtain an
    // available ephemeral port from the operating system at the time of the request."
    for (const uri of ['http://127.0.0.1:51234/cb', LOOPBACK, 'http://[::1]:49152/cb', 'http://[::1]/cb', APP_SCHEME]) {
      const result = await check({ redirect_uri: uri }, native);
      assert.equal(seen(result), 'ok', uri);
      assert.equal(result.kind === 'ok' && result.request.redirectUri, uri, 'the code goes back to the port the app listens on');
    }
    const refused = await check({ redirect_uri: 'http://127.0.0.1:51234/cb', scope: 'openid admin:users' }, native);
    assert.equal(seen(refused), 'redirect invalid_scope');
    assert.equal(refused.kind === 'redirect' && refused.redirectUri, 'http://127.0.0.1:51234/cb', 'its errors too');
  });

  it('sends every other refusal back to the redirect_uri with the state, under the code RFC 6749 §4.1.2.1 names', async () => {
    // RFC 6749 §4.1.2.1: "If the resource owner denies the access request or if the request
    // fails for reasons other than a missing or invalid redirection URI, the authorization
    // server informs the client by adding the following parameters to the query component of
    // the redirection URI".
    await runRows([
      // RFC 6749 §3.1: "Request and response parameters MUST NOT be included more than once."
      ['scope twice', { scope: ['openid', 'openid'] }, 'redirect invalid_request'],
      ['state twice: refused without either', { state: [STATE, 'another'] }, 'redirect invalid_request'],
      ['a nonce longer than 1,024 characters', { nonce: 'n'.repeat(1025) }, 'redirect invalid_request'],
      ['a parameter this server does not know, over 1,024 characters', { foo: 'f'.repeat(1025) }, 'redirect invalid_request'],
      ['a login_hint of 8,192 characters (OIDC Core §3.1.2.1: it may be a token)', { login_hint: 'l'.repeat(8192) }, 'ok'],
      ['a nonce of 1,024 characters', { nonce: 'n'.repeat(1024) }, 'ok'],
      // RFC 6749 §4.1.1: response_type "REQUIRED. Value MUST be set to "code"."
      ['no response_type', { response_type: undefined }, 'redirect invalid_request'],
      // unsupported_response_type: "The authorization server does not support obtaining an authorization code using this method."
      ['response_type token', { response_type: 'token' }, 'redirect unsupported_response_type'],
      ['response_type code id_token', { response_type: 'code id_token' }, 'redirect unsupported_response_type'],
      ['response_type CODE', { response_type: 'CODE' }, 'redirect unsupported_response_type'],
      // RFC 9126 §2.1: request_uri "MUST NOT be provided"; one left unresolved is not taken here.
      ['a request_uri among the parameters', { request_uri: 'urn:ietf:params:oauth:request_uri:x' }, 'redirect invalid_request'],
      // OAuth 2.0 Form Post Response Mode §2 and Multiple Response Type Encoding Practices §2.1: query or form_post.
      ['response_mode fragment', { response_mode: 'fragment' }, 'redirect invalid_request'],
      ['response_mode jwt', { response_mode: 'jwt' }, 'redirect invalid_request'],
      // RFC 9449 §10: dpop_jkt is "the JWK SHA-256 Thumbprint", base64url: 43 characters.
      ['a dpop_jkt that is not a SHA-256 thumbprint', { dpop_jkt: 'not-a-thumbprint' }, 'redirect invalid_request'],
      ['a dpop_jkt of 44 characters', { dpop_jkt: 'A'.repeat(44) }, 'redirect invalid_request'],
      ['a dpop_jkt of 43 base64url characters', { dpop_jkt: `${'A'.repeat(42)}_` }, 'ok'],
    ]);
    // unauthorized_client: "The client is not authorized to request an authorization code using this method."
    await runRows([['a client registered for the device grant only', {}, 'redirect unauthorized_client']], deviceOnly);
  });

  it('takes only a pushed request from a client or server that requires PAR (RFC 9126 §6)', async () => {
    // RFC 9126 §6 require_pushed_authorization_requests: "the authorization server ... only
    // accepts authorization request parameters sent via PAR".
    assert.equal(seen(await check({}, parOnly)), 'redirect invalid_request', 'sent in the URL');
    assert.equal(seen(await check({}, parOnly, true)), 'ok', 'pushed');
    assert.equal(seen(await check({}, app, false, true)), 'redirect invalid_request', 'TESSERA_REQUIRE_PAR, sent in the URL');
    assert.equal(seen(await check({}, app, true, true)), 'ok', 'TESSERA_REQUIRE_PAR, pushed');
    assert.equal(seen(await check({}, app)), 'ok', 'neither requires it');
  });

  it('requires PKCE with S256, but of a confidential client registered with PKCE optional, a nonce in an OpenID request (RFC 7636, RFC 9700 §2.1.1)', async () => {
    // RFC 7636 §4.4.1: "If the server requires Proof Key for Code Exchange (PKCE) by OAuth
    // public clients and the client does not send the "code_challenge" in the request, the
    // authorization endpoint MUST return the authorization error response with the "error"
    // value set to "invalid_request"."
    // RFC 7636 §4.3: code_challenge_method "defaults to "plain" if not present in the request";
    // RFC 9700 §2.1.1: "Currently, S256 is the only such method" (that does not expose the verifier).
    const s256Only: Row[] = [
      ['no code_challenge, with a nonce', { code_challenge: undefined, code_challenge_method: undefined }, 'redirect invalid_request'],
      ['no code_challenge_method (plain)', { code_challenge_method: undefined }, 'redirect invalid_request'],
      ['code_challenge_method plain', { code_challenge_method: 'plain' }, 'redirect invalid_request'],
      ['code_challenge_method s256', { code_challenge_method: 's256' }, 'redirect invalid_request'],
      ['a code_challenge of 42 characters', { code_challenge: CHALLENGE.slice(1) }, 'redirect invalid_request'],
      ['a code_challenge of 44 characters', { code_challenge: `${CHALLENGE}A` }, 'redirect invalid_request'],
      ['a code_challenge in base64, not base64url', { code_challenge: `${CHALLENGE.slice(1)}+` }, 'redirect invalid_request'],
      ['a code_challenge padded with =', { code_challenge: `${CHALLENGE.slice(1)}=` }, 'redirect invalid_request'],
      ['S256 with a 43-character challenge', {}, 'ok'],
    ];
    await runRows(s256Only, app);
    await runRows(s256Only, native);
    // RFC 9700 §2.1.1: "Public clients MUST use PKCE [RFC7636] to this end", whatever an older registration says.
    await runRows(
      [
        [
          'a public client registered with PKCE optional, no code_challenge, a nonce',
          { code_challenge: undefined, code_challenge_method: undefined },
          'redirect invalid_request',
        ],
        ['a public client registered with PKCE optional, S256', {}, 'ok'],
      ],
      publicOptional,
    );
    // RFC 9700 §2.1.1: "With additional precautions, described in Section 4.5.3.2, confidential
    // OpenID Connect [OpenID.Core] clients MAY use the nonce parameter and the respective Claim
    // in the ID Token [OpenID.Core] instead."
    const withoutPkce = { code_challenge: undefined, code_challenge_method: undefined };
    await runRows(
      [
        ['no code_challenge, an OpenID request with a nonce', withoutPkce, 'ok'],
        ['no code_challenge, an OpenID request without a nonce', { ...withoutPkce, nonce: undefined }, 'redirect invalid_request'],
        ['no code_challenge, an empty nonce', { ...withoutPkce, nonce: '' }, 'redirect invalid_request'],
        ['no code_challenge, a nonce, not an OpenID request', { ...withoutPkce, scope: 'profile' }, 'redirect invalid_request'],
        ['code_challenge_method without a code_challenge', { code_challenge: undefined, code_challenge_method: 'S256' }, 'redirect invalid_request'],
        ['S256, without a nonce', { nonce: undefined }, 'ok'],
        ['a code_challenge with the plain method', { code_challenge_method: 'plain' }, 'redirect invalid_request'],
      ],
      legacy,
    );
    // OIDC Core §3.1.2.1 makes nonce OPTIONAL in the code flow: a client registered so sends neither.
    await runRows(
      [
        ['no code_challenge and no nonce', { ...withoutPkce, nonce: undefined }, 'ok'],
        ['no code_challenge, not an OpenID request', { ...withoutPkce, nonce: undefined, scope: 'profile' }, 'ok'],
        ['a code_challenge with the plain method', { code_challenge_method: 'plain' }, 'redirect invalid_request'],
      ],
      lax,
    );
    const legacyPlain = await check(withoutPkce, legacy);
    assert.equal(legacyPlain.kind === 'ok' && legacyPlain.request.codeChallenge, '', 'no challenge is recorded: the token request must then bring no verifier');
    const legacyPkce = await check({}, legacy);
    assert.equal(legacyPkce.kind === 'ok' && legacyPkce.request.codeChallenge, CHALLENGE);
  });

  it('refuses a scope, claims or resource that is malformed, unknown or not the client’s (RFC 6749 §3.3, OIDC Core §5.5, RFC 8707 §2)', async () => {
    await runRows([
      // RFC 6749 §3.3: "If the client omits the scope parameter when requesting authorization,
      // the authorization server MUST either process the request using a pre-defined default
      // value or fail the request indicating an invalid scope."
      ['no scope', { scope: undefined }, 'redirect invalid_scope'],
      ['an empty scope', { scope: '' }, 'redirect invalid_scope'],
      // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
      ['a scope of spaces only', { scope: '   ' }, 'redirect invalid_scope'],
      ['a scope with a double quote', { scope: 'openid "profile"' }, 'redirect invalid_scope'],
      ['a scope with a backslash', { scope: 'openid pro\\file' }, 'redirect invalid_scope'],
      // invalid_scope: "The requested scope is invalid, unknown, or malformed."
      ['a scope the client was not registered for', { scope: 'openid offline_access' }, 'redirect invalid_scope'],
      ['a scope nobody defines', { scope: 'openid photos:delete' }, 'redirect invalid_scope'],
      ['scope words separated by two spaces', { scope: 'openid  profile' }, 'ok'],
      // OIDC Core §5.5: "The claims parameter value is represented in an OAuth 2.0 request as UTF-8 encoded JSON".
      ['claims that are not JSON', { claims: '{id_token:' }, 'redirect invalid_request'],
      ['claims that are a JSON array', { claims: '[]' }, 'redirect invalid_request'],
      ['claims whose id_token member is a number', { claims: '{"id_token":5}' }, 'redirect invalid_request'],
      ['claims whose claim request is a string', { claims: '{"userinfo":{"email":"yes"}}' }, 'redirect invalid_request'],
      ['claims of an unknown claim (ignored, §5.5)', { claims: '{"id_token":{"shoe_size":null}}' }, 'ok'],
      ['claims that are not JSON in a request that is not an OpenID one (not read)', { scope: 'photos:read', claims: '{id_token:' }, 'ok'],
      // RFC 8707 §2: "The value of the resource parameter MUST be an absolute URI ... MUST NOT
      // include a fragment component"; invalid_target when "the requested resource is invalid,
      // missing, unknown, or malformed".
      ['a resource nobody registered', { scope: 'photos:read', resource: 'https://unknown.example' }, 'redirect invalid_target'],
      ['a resource with a fragment', { scope: 'photos:read', resource: `${PHOTOS}#x` }, 'redirect invalid_target'],
      ['a relative resource', { scope: 'photos:read', resource: '/photos' }, 'redirect invalid_target'],
      ['eleven resources', { scope: 'photos:read', resource: Array.from({ length: 11 }, (_, index) => `https://${index}.example`) }, 'redirect invalid_target'],
      ['a resource asked none of its scopes', { scope: 'openid', resource: PHOTOS }, 'redirect invalid_scope'],
      ["a scope of another API than the resource's", { scope: 'calendar:read', resource: PHOTOS }, 'redirect invalid_scope'],
      // RFC 8707 §2: "Multiple resource parameters MAY be used".
      ['two resources, each asked its scope', { scope: 'photos:read calendar:read', resource: [PHOTOS, CALENDAR] }, 'ok'],
      ['the same resource twice', { scope: 'photos:read', resource: [PHOTOS, PHOTOS] }, 'ok'],
      ['an API scope without resource', { scope: 'openid photos:read' }, 'ok'],
    ]);
    const both = await check({ scope: 'photos:read calendar:read', resource: [PHOTOS, CALENDAR, PHOTOS] });
    assert.deepEqual(both.kind === 'ok' && both.request.resources, [PHOTOS, CALENDAR], 'each API once');
  });

  it('refuses a prompt, max_age or response_mode OIDC Core §3.1.2.1 does not define', async () => {
    await runRows([
      // OIDC Core §3.1.2.1 prompt: "If this parameter contains none with any other value, an error is returned."
      ['prompt none with login', { prompt: 'none login' }, 'redirect invalid_request'],
      ['prompt consent with none', { prompt: 'consent none' }, 'redirect invalid_request'],
      ['a prompt value not defined', { prompt: 'login bogus' }, 'redirect invalid_request'],
      ['prompt in capitals', { prompt: 'LOGIN' }, 'redirect invalid_request'],
      ['prompt none twice', { prompt: 'none none' }, 'ok'],
      // max_age: "Specifies the allowable elapsed time in seconds since the last time the End-User
      // was actively authenticated by the OP."
      ['a negative max_age', { max_age: '-1' }, 'redirect invalid_request'],
      ['a fractional max_age', { max_age: '1.5' }, 'redirect invalid_request'],
      ['max_age in exponent form', { max_age: '1e3' }, 'redirect invalid_request'],
      ['max_age of ten digits', { max_age: '1234567890' }, 'redirect invalid_request'],
      ['max_age with a space', { max_age: ' 60' }, 'redirect invalid_request'],
      ['max_age 0', { max_age: '0' }, 'ok'],
      ['max_age of nine digits', { max_age: '999999999' }, 'ok'],
      // ui_locales: "a space-separated list of BCP47 [RFC5646] language tag values"; the pages read it, bounded here.
      ['ui_locales over 1,024 characters', { ui_locales: 'fr '.repeat(342) }, 'redirect invalid_request'],
      ['ui_locales of three tags', { ui_locales: 'fr-CA fr en' }, 'ok'],
    ]);
    const prompts = await check({ prompt: 'login  consent login' });
    assert.deepEqual(prompts.kind === 'ok' && prompts.request.prompt, ['login', 'consent'], 'each value once, in order');
    const zero = await check({ max_age: '0' });
    assert.equal(zero.kind === 'ok' && zero.request.maxAge, 0, 'max_age=0: sign in again now');
    const locales = await check({ ui_locales: 'fr-CA fr en' });
    assert.equal(locales.kind === 'ok' && locales.params['ui_locales'], 'fr-CA fr en', 'carried to the pages as sent');
  });

  it('answers the way the request asked: form_post to a web address, else in the query (Form Post Response Mode §2)', async () => {
    const posted = await check({ response_mode: 'form_post', scope: 'openid admin:users' });
    assert.ok(posted.kind === 'redirect');
    assert.deepEqual([posted.error.code, posted.responseMode, posted.redirectUri, posted.state], ['invalid_scope', 'form_post', CALLBACK, STATE]);
    const unknown = await check({ response_mode: 'fragment' });
    assert.equal(unknown.kind === 'redirect' && unknown.responseMode, 'query', 'a mode it does not know is refused in the query');
    const onLoopback = await check({ response_mode: 'form_post', redirect_uri: 'http://127.0.0.1:51234/cb' }, native);
    assert.equal(onLoopback.kind === 'ok' && onLoopback.request.responseMode, 'form_post', 'http on loopback is a web address');
    // A browser posts forms to web addresses only, not to an app's private-use scheme.
    const toApp = await check({ response_mode: 'form_post', redirect_uri: APP_SCHEME }, native);
    assert.ok(toApp.kind === 'redirect');
    assert.deepEqual([toApp.error.code, toApp.responseMode, toApp.redirectUri, toApp.state], ['invalid_request', 'query', APP_SCHEME, STATE]);
    // So is a refused request object's error, reported at the registered redirect_uri (RFC 9101 §6.3).
    const refusedObject = await check({ response_mode: 'form_post', redirect_uri: APP_SCHEME, request: 'not.a.request-object' }, native);
    assert.ok(refusedObject.kind === 'redirect', seen(refusedObject));
    assert.deepEqual(
      [refusedObject.error.code, refusedObject.responseMode, refusedObject.redirectUri, refusedObject.state],
      ['invalid_request_object', 'query', APP_SCHEME, STATE],
    );
    const queried = await check({ response_mode: 'query' });
    assert.equal(queried.kind === 'ok' && queried.request.responseMode, 'query');
  });

  it('gives the checked request: scope, resources, state, nonce, challenge, prompt, max_age, dpop_jkt, acr_values and the claims asked for by name', async () => {
    const result = await check({
      scope: 'openid photos:read',
      resource: PHOTOS,
      prompt: 'consent',
      max_age: '300',
      dpop_jkt: 'J'.repeat(43),
      acr_values: 'urn:example:mfa  urn:example:pwd',
      // OIDC Core §5.5: a claim asked for by name needs the consent its scope needs (§5.4);
      // phone_number is of a scope this client may not have, so it is not asked for at all.
      claims: JSON.stringify({ userinfo: { name: null, phone_number: null }, id_token: { email: { essential: true } } }),
      claims_locales: 'fr-ca en',
    });
    assert.ok(result.kind === 'ok', seen(result));
    const { request: checked } = result;
    assert.equal(checked.client.id, app.id);
    assert.equal(checked.redirectUri, CALLBACK);
    assert.deepEqual(checked.scope, ['openid', 'photos:read']);
    assert.deepEqual(checked.resources, [PHOTOS]);
    assert.equal(checked.state, STATE);
    assert.equal(checked.nonce, 'n-0S6_WzA2Mj');
    assert.equal(checked.codeChallenge, CHALLENGE);
    assert.deepEqual(checked.prompt, ['consent']);
    assert.equal(checked.maxAge, 300);
    assert.equal(checked.dpopJkt, 'J'.repeat(43));
    assert.deepEqual(checked.acrValues, ['urn:example:mfa', 'urn:example:pwd']);
    assert.deepEqual(checked.userinfoClaims, ['name', 'phone_number']);
    assert.deepEqual(checked.idTokenClaims, ['email']);
    assert.deepEqual(checked.claimsScope, ['profile', 'email'], 'the scopes the person is asked for beyond the scope');
    assert.deepEqual(checked.claimsLocales, ['fr-CA', 'en']);
    assert.equal(result.params['claims_locales'], 'fr-ca en');

    const inScope = await check({ scope: 'openid profile', claims: JSON.stringify({ userinfo: { name: null, email: null } }) });
    assert.deepEqual(inScope.kind === 'ok' && inScope.request.claimsScope, ['email'], 'only the scopes beyond those asked for');

    // OIDC Core §5.5.1.1: acr asked for in the claims parameter, when acr_values is not sent.
    const acrClaims = JSON.stringify({ id_token: { acr: { values: ['urn:example:mfa'] } } });
    const acrByClaims = await check({ claims: acrClaims });
    assert.deepEqual(acrByClaims.kind === 'ok' && acrByClaims.request.acrValues, ['urn:example:mfa']);
    const acrBoth = await check({ claims: acrClaims, acr_values: 'urn:example:pwd' });
    assert.deepEqual(acrBoth.kind === 'ok' && acrBoth.request.acrValues, ['urn:example:pwd'], "acr_values' classes first");

    // RFC 6749 §3.1: "Parameters sent without a value MUST be treated as if they were omitted from the request."
    const empty = await check({ state: '', nonce: '', prompt: '', max_age: '', dpop_jkt: '', acr_values: '' });
    assert.ok(empty.kind === 'ok', seen(empty));
    assert.deepEqual(
      [empty.request.state, empty.request.nonce, empty.request.prompt, empty.request.maxAge, empty.request.dpopJkt, empty.request.acrValues],
      [null, null, [], null, null, null],
    );
    const emptyState = await check({ state: '', scope: 'openid admin:users' });
    assert.equal(emptyState.kind === 'redirect' && emptyState.state, null, 'no empty state is sent back');
  });

  it('answers the client with state and iss (RFC 9207 §2), added to the query its redirect URI already has', () => {
    const response = clientResponse({ redirectUri: 'https://notes.example/cb?tenant=7', responseMode: 'query', state: STATE }, world.config.issuer, {
      code: 'c',
    });
    // RFC 9207 §2: "In authorization responses to the client, including error responses, an
    // authorization server supporting this specification MUST indicate its identity by
    // including the iss parameter in the response."
    assert.deepEqual(response.params, { code: 'c', state: STATE, iss: world.config.issuer });
    const url = new URL(responseRedirectUrl(response));
    assert.deepEqual(
      [...url.searchParams],
      [
        ['tenant', '7'],
        ['code', 'c'],
        ['state', STATE],
        ['iss', world.config.issuer],
      ],
    );
    const stateless = clientResponse({ redirectUri: CALLBACK, responseMode: 'query', state: null }, world.config.issuer, { error: 'access_denied' });
    assert.deepEqual(Object.keys(stateless.params), ['error', 'iss'], 'no state where the request had none');
  });

  it("takes a Client ID Metadata Document's client where one is given, and says on the page why its document cannot be used", async () => {
    const documentId = 'https://notes.example/client.json';
    const asked: string[] = [];
    const fromDocument: ClientRecord = { ...native, id: documentId, name: 'From its document', redirectUris: ['http://127.0.0.1/doc'] };
    const withDocuments: RequestCheckDeps = {
      ...deps,
      metadataClient: async (clientId) => {
        asked.push(clientId);
        if (clientId === documentId) return fromDocument;
        if (clientId === 'https://broken.example/client.json') throw new OAuthError('invalid_client', 'the client metadata document could not be fetched');
        return null;
      },
    };
    const taken = await checkAuthorizationRequest(withDocuments, request({ client_id: documentId, redirect_uri: 'http://127.0.0.1:4000/doc' }, native));
    assert.equal(taken.kind === 'ok' && taken.request.client.name, 'From its document');
    const stored = await checkAuthorizationRequest(withDocuments, request({}, app));
    assert.equal(stored.kind === 'ok' && stored.request.client.id, app.id, 'a registered client is still found in the store');
    const broken = await checkAuthorizationRequest(withDocuments, request({ client_id: 'https://broken.example/client.json' }, native));
    assert.equal(seen(broken), 'page invalid_client', 'never redirected to a redirect_uri nobody has vouched for');
    const long = `https://notes.example/${'x'.repeat(1024)}`;
    assert.equal(seen(await checkAuthorizationRequest(withDocuments, request({ client_id: long }, native))), 'page invalid_request');
    assert.equal(asked.includes(long), false, 'a client_id over 1,024 characters is not looked up, nor its document fetched');
    const failing: RequestCheckDeps = {
      ...deps,
      metadataClient: async () => {
        throw new TypeError('a bug');
      },
    };
    await assert.rejects(() => checkAuthorizationRequest(failing, request()), TypeError, 'anything else is not an answer to the person');
  });
});
