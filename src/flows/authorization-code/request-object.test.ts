/**
 * Request objects without HTTP (flows/authorization-code/request-object.ts, and how
 * request.ts takes one in: RFC 9101 JAR, OIDC Core §6.1 and §6.3, OIDC Registration §2
 * `request_object_signing_alg`): a table of objects, signed, unsigned and malformed, each
 * with what `readRequestObject` makes of it on the flow world's clock; then the parameters an
 * accepted object yields, which win over the query's, and where a refused one is reported
 * (the client's redirect_uri with the state, or the error page). The same through the
 * endpoint, with openid-client's JAR and PAR: test/request-objects.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, SignJWT, UnsecuredJWT, type CryptoKey, type JWTPayload } from 'jose';
import { s256 } from '../../core/crypto.ts';
import { OAuthError } from '../../core/errors.ts';
import type { ClientRecord } from '../../store/types.ts';
import { ClientKeySets } from '../../tokens/client-jwks.ts';
import { flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { checkAuthorizationRequest, type RequestCheck, type RequestCheckDeps } from './request.ts';
import { MAX_REQUEST_OBJECT_LENGTH, readRequestObject, unverifiedRequestObject } from './request-object.ts';

const CALLBACK = 'https://bank.example/cb';
const OTHER_CALLBACK = 'https://bank.example/other';
const CHALLENGE = s256('a-verifier-of-forty-three-characters-or-more-x');

/** Where a check's answer goes: `ok`, `page CODE` (never redirected) or `redirect CODE`. */
function seen(check: RequestCheck): string {
  if (check.kind === 'ok') return 'ok';
  return `${check.kind === 'fatal' ? 'page' : 'redirect'} ${check.error.code}`;
}

describe('request objects (flows/authorization-code/request-object.ts, RFC 9101)', () => {
  let world: FlowWorld;
  let deps: RequestCheckDeps;
  let es256: CryptoKey;
  let rsa: CryptoKey;
  let stranger: CryptoKey;
  /** Registered with its ES256 public key and no algorithm: any asymmetric one. */
  let signing: ClientRecord;
  /** Registered with RSA and EC keys and request_object_signing_alg RS256. */
  let strict: ClientRecord;
  /** Registered with request_object_signing_alg none. */
  let unsigned: ClientRecord;
  /** Registered with no keys and no algorithm. */
  let keyless: ClientRecord;

  before(async () => {
    world = await flowWorld();
    deps = { ...world.deps, clientKeys: new ClientKeySets(world.clock, world.config.clientAuth) };
    const ec = await generateKeyPair('ES256');
    const rs = await generateKeyPair('RS256');
    es256 = ec.privateKey;
    rsa = rs.privateKey;
    stranger = (await generateKeyPair('ES256')).privateKey;
    const ecJwk = { ...(await exportJWK(ec.publicKey)), kid: 'ec-key' };
    const rsaJwk = { ...(await exportJWK(rs.publicKey)), kid: 'rsa-key' };
    const redirect_uris = [CALLBACK, OTHER_CALLBACK];
    ({ client: signing } = await world.addClient({ client_name: 'Bank', redirect_uris, jwks: { keys: [ecJwk] } }));
    ({ client: strict } = await world.addClient({
      client_name: 'Strict bank',
      redirect_uris,
      jwks: { keys: [rsaJwk, ecJwk] },
      request_object_signing_alg: 'RS256',
    }));
    ({ client: unsigned } = await world.addClient({ client_name: 'Certification', redirect_uris, request_object_signing_alg: 'none' }));
    ({ client: keyless } = await world.addClient({ client_name: 'Keyless', redirect_uris }));
  });
  after(() => world.close());

  /** Seconds on the world's clock, as a JWT's iat, exp and nbf count them. */
  const seconds = () => Math.floor(world.clock.now() / 1000);

  /** The claims of a good authorization request of `client`, as an object carries them, with `extra` (undefined leaves one out). */
  function claims(client: ClientRecord, extra: Record<string, unknown> = {}): JWTPayload {
    const payload: Record<string, unknown> = {
      iss: client.id,
      aud: world.config.issuer,
      client_id: client.id,
      response_type: 'code',
      redirect_uri: CALLBACK,
      scope: 'openid profile',
      state: 'state-in-the-object',
      nonce: 'nonce-in-the-object',
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
      iat: seconds(),
      exp: seconds() + 300,
      ...extra,
    };
    for (const [name, value] of Object.entries(payload)) if (value === undefined) delete payload[name];
    return payload;
  }

  const signed = (payload: JWTPayload, options: { key?: CryptoKey; alg?: string; kid?: string } = {}) =>
    new SignJWT(payload)
      .setProtectedHeader({ alg: options.alg ?? 'ES256', kid: options.kid ?? 'ec-key', typ: 'oauth-authz-req+jwt' })
      .sign(options.key ?? es256);
  const unsecured = (payload: JWTPayload) => new UnsecuredJWT(payload).encode();

  /** 'ok', or the description of the invalid_request_object it was refused with (RFC 9101 §6.3: every refusal is that code). */
  async function read(client: ClientRecord, jwt: string): Promise<string> {
    try {
      await readRequestObject(deps, client, jwt);
      return 'ok';
    } catch (error) {
      if (!(error instanceof OAuthError)) throw error;
      assert.equal(error.code, 'invalid_request_object', error.description);
      return error.description;
    }
  }

  /** [what, client, the object, 'ok' or what the refusal says]. */
  type Row = [string, () => ClientRecord, () => Promise<string> | string, 'ok' | RegExp];
  async function runRows(rows: readonly Row[]): Promise<void> {
    for (const [what, client, jwt, expected] of rows) {
      const said = await read(client(), await jwt());
      if (expected === 'ok') assert.equal(said, 'ok', what);
      else assert.match(said, expected, what);
    }
  }

  /** `payload` under `protectedHeader`, with an empty signature: what an unsigned object is, or pretends to be. */
  function header(protectedHeader: Record<string, unknown>, payload: JWTPayload, signature = ''): string {
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    return `${part(protectedHeader)}.${part(payload)}.${signature}`;
  }

  it('takes or refuses an object by the algorithm the client registered (OIDC Registration §2 request_object_signing_alg)', async () => {
    // OIDC Registration §2 request_object_signing_alg: "All Request Objects from this Client
    // MUST be rejected, if not signed with this algorithm. ... The value none MAY be used. The
    // default, if omitted, is that any algorithm supported by the OP and the RP MAY be used."
    await runRows([
      ['ES256 from a client that registered no algorithm', () => signing, () => signed(claims(signing)), 'ok'],
      ['RS256 from the client that registered it', () => strict, () => signed(claims(strict), { key: rsa, alg: 'RS256', kid: 'rsa-key' }), 'ok'],
      ['ES256 with a key the RS256 client registered', () => strict, () => signed(claims(strict)), /^the request object must be signed with RS256$/],
      ['ES256 from the client that registered none', () => unsigned, () => signed(claims(unsigned)), /registered unsigned request objects/],
      // Unsigned objects: RFC 9101 §10.2 leaves them to the query's trust; never in place of a signed one.
      ['alg none from the client that registered none', () => unsigned, () => unsecured(claims(unsigned)), 'ok'],
      ['alg none from a client that registered no algorithm', () => signing, () => unsecured(claims(signing)), 'ok'],
      ['alg none from a client with no keys', () => keyless, () => unsecured(claims(keyless)), 'ok'],
      ['alg none from the RS256 client', () => strict, () => unsecured(claims(strict)), /alg none\) are not accepted from this client: it registered RS256/],
      // A symmetric algorithm keyed with something the server can read is not a signature of the client's.
      [
        'HS256 from a client that registered no algorithm',
        () => signing,
        () => new SignJWT(claims(signing)).setProtectedHeader({ alg: 'HS256' }).sign(new TextEncoder().encode('a shared secret of thirty-two bytes!')),
        /^the request object must be signed with RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, ES512, EdDSA$/,
      ],
      ['alg None (not none) from the client that registered none', () => unsigned, () => header({ alg: 'None' }, claims(unsigned)), /registered unsigned/],
      ['no alg at all', () => signing, () => header({ typ: 'JWT' }, claims(signing)), /must be signed with/],
      ['ES256 from a client with no keys', () => keyless, () => signed(claims(keyless)), /the client's keys could not be read: no keys are registered/],
      [
        'a key that is not among the client’s',
        () => signing,
        () => signed(claims(signing), { key: stranger, kid: 'other-key' }),
        /signed with a key that is not among the client's registered keys/,
      ],
      ['another key under the kid of the client’s', () => signing, () => signed(claims(signing), { key: stranger }), /signature verification failed/],
    ]);
  });

  it('refuses what is not a signed or unsigned JWT of at most 8,192 characters (RFC 9101 §6.1)', async () => {
    await runRows([
      // RFC 9101 §6.1 allows an encrypted object; this server publishes no encryption key.
      ['an encrypted object (five parts)', () => signing, () => 'a.b.c.d.e', /^encrypted request objects are not supported$/],
      ['two parts', () => signing, () => 'a.b', /^the request object is not a JWT$/],
      ['four parts', () => signing, () => 'a.b.c.d', /^the request object is not a JWT$/],
      ['a header that is not base64url JSON', () => signing, () => 'not.a-jwt.x', /^the request object is not a JWT$/],
      ['alg none with a signature', () => signing, () => header({ alg: 'none' }, claims(signing), 'c2ln'), /^the request object is not a valid JWT$/],
      [
        'alg none with a payload that is not JSON',
        () => signing,
        () => `${Buffer.from('{"alg":"none"}').toString('base64url')}.bm90IGpzb24.`,
        /not a valid JWT/,
      ],
      [
        `an object of ${MAX_REQUEST_OBJECT_LENGTH + 1} characters`,
        () => unsigned,
        () => unsecured(claims(unsigned, { login_hint: 'l'.repeat(MAX_REQUEST_OBJECT_LENGTH) })),
        /longer than 8192 characters/,
      ],
      ['an object of 8,192 characters at most', () => unsigned, () => unsecured(claims(unsigned, { login_hint: 'l'.repeat(5000) })), 'ok'],
    ]);
  });

  it("checks exp and nbf on the server's clock with 30 seconds' slack, and iss, aud and client_id where present (OIDC Core §6.1, RFC 9101 §5)", async () => {
    const now = seconds();
    await runRows([
      // RFC 7519 §4.1.4: exp "identifies the expiration time on or after which the JWT MUST NOT be accepted for processing".
      ['expired 31 seconds ago', () => signing, () => signed(claims(signing, { exp: now - 31 })), /^the request object has expired$/],
      ['expired 29 seconds ago (client clocks drift)', () => signing, () => signed(claims(signing, { exp: now - 29 })), 'ok'],
      ['unsigned, expired an hour ago', () => unsigned, () => unsecured(claims(unsigned, { exp: now - 3600 })), /has expired/],
      ['not valid for another minute (nbf)', () => signing, () => signed(claims(signing, { nbf: now + 60 })), /nbf claim is not valid/],
      // Where present: RFC 9101 makes exp no requirement, and neither does this server.
      ['no exp', () => signing, () => signed(claims(signing, { exp: undefined, iat: undefined })), 'ok'],
      ['an exp that is not a number', () => signing, () => signed(claims(signing, { exp: 'tomorrow' })), /^the request object's exp claim is not valid/],
      // OIDC Core §6.1: "The iss value SHOULD be the Client ID of the RP"; "The aud value SHOULD
      // be or include the OP's Issuer Identifier URL."
      ['iss another client', () => signing, () => signed(claims(signing, { iss: strict.id })), /^the request object iss must be the client_id$/],
      ['unsigned, iss another client', () => unsigned, () => unsecured(claims(unsigned, { iss: signing.id })), /iss must be the client_id/],
      ['no iss', () => signing, () => signed(claims(signing, { iss: undefined })), 'ok'],
      [
        'aud another server',
        () => signing,
        () => signed(claims(signing, { aud: 'https://other.example' })),
        /aud must be this server's issuer, https:\/\/auth\.example\.com/,
      ],
      ['aud the issuer with a trailing slash', () => signing, () => signed(claims(signing, { aud: `${world.config.issuer}/` })), /aud must be/],
      ['aud a list without the issuer', () => signing, () => signed(claims(signing, { aud: ['https://a.example', 'https://b.example'] })), /aud must be/],
      ['aud a list with the issuer', () => signing, () => signed(claims(signing, { aud: ['https://a.example', world.config.issuer] })), 'ok'],
      ['no aud', () => signing, () => signed(claims(signing, { aud: undefined })), 'ok'],
      // RFC 9101 §5: the client_id of the request and of the object name the same client.
      ['client_id another client', () => signing, () => signed(claims(signing, { client_id: strict.id })), /client_id differs from the request's/],
      ['no client_id', () => signing, () => signed(claims(signing, { client_id: undefined })), 'ok'],
      // OIDC Core §6.1: "The request and request_uri parameters MUST NOT be included in Request Objects."
      ['a request inside', () => signing, () => signed(claims(signing, { request: 'x.y.z' })), /must not contain request or request_uri/],
      [
        'a request_uri inside',
        () => signing,
        () => signed(claims(signing, { request_uri: 'urn:ietf:params:oauth:request_uri:x' })),
        /must not contain request or request_uri/,
      ],
    ]);
  });

  it('yields the request parameters: strings, max_age as a number, claims as an object, resource as a list; not the JWT’s own claims (OIDC Core §6.1)', async () => {
    const params = await readRequestObject(
      deps,
      signing,
      await signed(
        claims(signing, {
          max_age: 300,
          claims: { id_token: { email: null } },
          resource: ['https://photos.example', 'urn:example:calendar'],
          jti: 'once',
          sub: 'someone',
          nbf: seconds() - 5,
        }),
      ),
    );
    assert.deepEqual(params, {
      client_id: signing.id,
      response_type: 'code',
      redirect_uri: CALLBACK,
      scope: 'openid profile',
      state: 'state-in-the-object',
      nonce: 'nonce-in-the-object',
      code_challenge: CHALLENGE,
      code_challenge_method: 'S256',
      // OIDC Core §6.1: "max_age ... a JSON number"; §5.5 claims "a JSON object".
      max_age: '300',
      claims: '{"id_token":{"email":null}}',
      // RFC 8707 §2: several resource values.
      resource: ['https://photos.example', 'urn:example:calendar'],
    });
    await runRows([
      ['a boolean', () => signing, () => signed(claims(signing, { prompt: true })), /^the request object's prompt must be a string$/],
      ['a scope as a list', () => signing, () => signed(claims(signing, { scope: ['openid', 'profile'] })), /scope must be a string/],
      ['a state that is an object', () => signing, () => signed(claims(signing, { state: { a: 1 } })), /state must be a string/],
      ['a nonce that is null', () => signing, () => signed(claims(signing, { nonce: null })), /nonce must be a string/],
      ['claims as a list', () => signing, () => signed(claims(signing, { claims: [{ id_token: {} }] })), /claims must be a string/],
      ['a resource list with a number', () => signing, () => signed(claims(signing, { resource: ['https://photos.example', 7] })), /resource must be a string/],
      ['a resource as one string', () => signing, () => signed(claims(signing, { resource: 'https://photos.example' })), 'ok'],
    ]);
  });

  it("reads an object's claims unverified only to know where to report it, and nothing from what cannot be read", async () => {
    const forged = await signed(claims(signing, { redirect_uri: OTHER_CALLBACK }), { key: stranger });
    assert.equal(unverifiedRequestObject(forged)?.['redirect_uri'], OTHER_CALLBACK);
    assert.equal(unverifiedRequestObject('garbage'), null);
    assert.equal(unverifiedRequestObject('not.a-jwt.x'), null);
    assert.equal(unverifiedRequestObject(unsecured(claims(unsigned, { login_hint: 'l'.repeat(MAX_REQUEST_OBJECT_LENGTH) }))), null, 'nor from one too long');
  });

  describe('taken into an authorization request (request.ts)', () => {
    /** An authorization request of `client` carrying `object`, with `query` beside it. */
    const check = (client: ClientRecord, object: string | string[], query: Record<string, string> = {}) =>
      checkAuthorizationRequest(deps, { client_id: client.id, request: object, ...query });

    it("uses the object's parameters over the query's (OIDC Core §6.3.3), and the query's where the object has none", async () => {
      // OIDC Core §6.3.3: "If the same parameter exists both in the Request Object and the
      // OAuth Authorization Request parameters, the parameter in the Request Object is used."
      const object = await signed(claims(signing, { redirect_uri: OTHER_CALLBACK, scope: 'openid email' }));
      const result = await check(signing, object, {
        response_type: 'code',
        redirect_uri: CALLBACK,
        scope: 'openid',
        state: 'state-in-the-query',
        ui_locales: 'fr',
      });
      assert.ok(result.kind === 'ok', seen(result));
      assert.equal(result.request.redirectUri, OTHER_CALLBACK);
      assert.deepEqual(result.request.scope, ['openid', 'email']);
      assert.equal(result.request.state, 'state-in-the-object');
      assert.equal(result.request.nonce, 'nonce-in-the-object');
      assert.equal(result.params['ui_locales'], 'fr', 'one the object does not carry is taken from the query');
      assert.equal(result.params['request'], undefined, 'the object itself is not carried on');
      assert.equal(result.params['iss'], undefined, "nor the JWT's own claims");

      const bare = await check(signing, await signed(claims(signing)));
      assert.equal(seen(bare), 'ok', 'client_id and request alone, as openid-client sends them');
    });

    it('checks what the object asks for as any request: an unregistered redirect_uri in a verified object is shown on the page', async () => {
      const rows: [string, Record<string, unknown>, Record<string, string>, string][] = [
        ['an unregistered redirect_uri', { redirect_uri: 'https://attacker.example/cb' }, {}, 'page invalid_request'],
        ['no redirect_uri anywhere', { redirect_uri: undefined }, {}, 'page invalid_request'],
        ['a scope the client may not have', { scope: 'openid admin:users' }, {}, 'redirect invalid_scope'],
        ['the plain PKCE method', { code_challenge_method: 'plain' }, {}, 'redirect invalid_request'],
        // OIDC Core §6.1: response_type "MUST match" the object's, where both are sent.
        ['a response_type other than the query’s', { response_type: 'token' }, { response_type: 'code' }, 'redirect invalid_request_object'],
        ['response_type in the object alone', {}, {}, 'ok'],
        ['response_type in the query alone', { response_type: undefined }, { response_type: 'code' }, 'ok'],
        // RFC 9126 §2.1: a request_uri left beside a request is not taken here.
        ['a request_uri in the query beside the object', {}, { request_uri: 'urn:ietf:params:oauth:request_uri:x' }, 'redirect invalid_request'],
        ['a request_uri inside the object', { request_uri: 'urn:ietf:params:oauth:request_uri:x' }, {}, 'redirect invalid_request_object'],
      ];
      for (const [what, extra, query, expected] of rows) {
        const result = await check(signing, await signed(claims(signing, extra)), query);
        assert.equal(seen(result), expected, what);
        if (result.kind === 'redirect') assert.deepEqual([result.redirectUri, result.state], [CALLBACK, 'state-in-the-object'], what);
      }
      // RFC 6749 §3.1: "Request and response parameters MUST NOT be included more than once."
      const twice = await check(signing, ['x.y.z', 'x.y.z'], { redirect_uri: CALLBACK, state: 'state-in-the-query' });
      assert.equal(seen(twice), 'page invalid_request', 'request twice: which object is meant is not known');
      const object = await signed(claims(signing));
      const redirectTwice = await checkAuthorizationRequest(deps, { client_id: signing.id, request: object, redirect_uri: [OTHER_CALLBACK, CALLBACK] });
      assert.equal(seen(redirectTwice), 'page invalid_request', 'redirect_uri twice in the query, even beside an object that names one');
    });

    it('reports a refused object at a registered redirect_uri, the query’s or else the object’s, with the state of either; otherwise on the page', async () => {
      const forged = (extra: Record<string, unknown> = {}) => signed(claims(signing, extra), { key: stranger });
      const cases: [string, () => Promise<string> | string, Record<string, string>, string, string | null, string | null][] = [
        // [what, object, query, outcome, redirect URI, state]
        [
          'the query’s redirect_uri and state',
          () => forged(),
          { redirect_uri: CALLBACK, state: 'state-in-the-query' },
          'redirect',
          CALLBACK,
          'state-in-the-query',
        ],
        ['the object’s, when the query has none', () => forged({ redirect_uri: OTHER_CALLBACK }), {}, 'redirect', OTHER_CALLBACK, 'state-in-the-object'],
        [
          'the query’s over the object’s',
          () => forged({ redirect_uri: OTHER_CALLBACK }),
          { redirect_uri: CALLBACK },
          'redirect',
          CALLBACK,
          'state-in-the-object',
        ],
        ['the object’s state, with no state in the query', () => forged(), { redirect_uri: OTHER_CALLBACK }, 'redirect', OTHER_CALLBACK, 'state-in-the-object'],
        ['an unregistered redirect_uri in the object', () => forged({ redirect_uri: 'https://attacker.example/cb' }), {}, 'page', null, null],
        ['an unregistered redirect_uri in the query', () => forged(), { redirect_uri: 'https://attacker.example/cb' }, 'page', null, null],
        ['an object that cannot be read, no redirect_uri in the query', () => 'not.a-jwt.x', {}, 'page', null, null],
        ['an object that cannot be read, the query’s redirect_uri', () => 'not.a-jwt.x', { redirect_uri: CALLBACK }, 'redirect', CALLBACK, null],
        ['no redirect_uri in either', () => forged({ redirect_uri: undefined }), {}, 'page', null, null],
      ];
      for (const [what, object, query, expected, redirectUri, state] of cases) {
        const result = await check(signing, await object(), query);
        assert.equal(seen(result), `${expected} invalid_request_object`, what);
        if (result.kind === 'redirect') {
          assert.deepEqual([result.redirectUri, result.state, result.responseMode], [redirectUri, state, 'query'], what);
        }
      }
      // Form Post Response Mode §2: a refusal goes back the way the request asked.
      const posted = await check(signing, await forged({ response_mode: 'form_post' }));
      assert.equal(posted.kind === 'redirect' && posted.responseMode, 'form_post');
      const postedByQuery = await check(signing, await forged(), { response_mode: 'form_post' });
      assert.equal(postedByQuery.kind === 'redirect' && postedByQuery.responseMode, 'form_post');
    });
  });
});
