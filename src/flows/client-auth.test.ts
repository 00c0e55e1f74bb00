/**
 * Client authentication without HTTP (RFC 6749 §2.3, RFC 7523 §2.2 and §3, OIDC Core §9): a
 * request's Authorization header and form, as the token, device authorization, revocation,
 * introspection and PAR endpoints hand them over, answered with the client or refused, on a
 * clock the test moves. Client assertions are signed here with jose; a client whose keys are
 * at a jwks_uri gets a fetch that never reaches the network. Every refusal is `invalid_client`
 * with 401 (a request mixing methods is `invalid_request`, 400); the `WWW-Authenticate: Basic`
 * challenge sent with it is the HTTP layer's (src/http/errors.ts), checked end to end in
 * test/private-key-jwt.test.ts, beside test/client-authentication.test.ts (the same methods
 * at every endpoint through openid-client) and test/cli-clients.test.ts (rotate-secret).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT, UnsecuredJWT } from 'jose';
import { OAuthError } from '../core/errors.ts';
import { JWT_BEARER_ASSERTION } from '../core/protocol.ts';
import type { ClientRecord, Store } from '../store/types.ts';
import { ClientKeySets } from '../tokens/client-jwks.ts';
import { FLOW_ISSUER, flowWorld, type FlowWorld } from '../../test/helpers/flows.ts';
import { authenticateClient, INTROSPECTION_AUTH_METHODS, TOKEN_AUTH_METHODS, type ClientAuthDeps, type PresentedCredentials } from './client-auth.ts';
import { rotateClientSecret } from './manage/clients.ts';

const TOKEN_ENDPOINT = `${FLOW_ISSUER}/oauth/token`;
const PAR_ENDPOINT = `${FLOW_ISSUER}/oauth/par`;
const CALLBACK = 'https://app.example/cb';
/** An operator-chosen client_id with characters RFC 6749 §2.3.1 has form-urlencoded inside Basic. */
const ODD_ID = 'svc:reports+1%/x';

type PrivateKey = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
interface Signer {
  readonly key: PrivateKey;
  readonly kid: string;
  readonly alg: string;
}
type Presented = Partial<PresentedCredentials>;

/** `application/x-www-form-urlencoded` of one value (RFC 6749 Appendix B): space as `+`. */
const formEncode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
/** RFC 6749 §2.3.1: id and secret form-urlencoded, then joined and Base64-encoded (RFC 7617). */
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${formEncode(id)}:${formEncode(secret)}`).toString('base64')}`;
/** A Basic header of `raw` as is, encoded or not. */
const rawBasic = (raw: string) => `Basic ${Buffer.from(raw).toString('base64')}`;

describe('client authentication (RFC 6749 §2.3, RFC 7523 §3, OIDC Core §9)', () => {
  let world: FlowWorld;
  let deps: ClientAuthDeps;
  /** client_secret_basic (the default), client_secret_post, and one with an operator-chosen odd id. */
  let basicApp: { client: ClientRecord; secret: string };
  let postApp: { client: ClientRecord; secret: string };
  let oddApp: { client: ClientRecord; secret: string };
  /** A public client (RFC 6749 §2.1): client_id alone. */
  let publicApp: ClientRecord;
  /** Two private_key_jwt clients with the same registered keys, and one whose keys are at a jwks_uri. */
  let signedApp: ClientRecord;
  let twinApp: ClientRecord;
  let remoteApp: ClientRecord;
  let es256: Signer;
  let ed25519: Signer;
  /** A key the clients do not have, alone and under a kid they do have. */
  let stranger: Signer;
  let impostor: Signer;
  let fetches = 0;

  const secretApp = async (metadata: Parameters<FlowWorld['addClient']>[0]) => {
    const made = await world.addClient({ redirect_uris: [CALLBACK], ...metadata });
    return { client: made.client, secret: made.secret! };
  };

  before(async () => {
    world = await flowWorld();
    // No network in a flow's test: the jwks_uri client's keys "could not be fetched".
    const offline = (async () => {
      fetches += 1;
      throw new TypeError('fetch failed');
    }) as typeof fetch;
    deps = { ...world.deps, clientKeys: new ClientKeySets(world.clock, world.config.clientAuth, () => offline) };
    const signer = async (alg: 'ES256' | 'EdDSA'): Promise<{ signer: Signer; jwk: JWK }> => {
      const pair = await generateKeyPair(alg, { extractable: true });
      const kid = randomUUID();
      return { signer: { key: pair.privateKey, kid, alg }, jwk: { ...(await exportJWK(pair.publicKey)), kid, alg } };
    };
    const [es, ed, other] = await Promise.all([signer('ES256'), signer('EdDSA'), signer('ES256')]);
    es256 = es.signer;
    ed25519 = ed.signer;
    stranger = other.signer;
    impostor = { ...other.signer, kid: es256.kid };
    const jwks = { keys: [es.jwk, ed.jwk] };

    basicApp = await secretApp({ client_name: 'Basic App' });
    postApp = await secretApp({ client_name: 'Post App', token_endpoint_auth_method: 'client_secret_post' });
    oddApp = await secretApp({ client_name: 'Odd App', client_id: ODD_ID });
    ({ client: publicApp } = await world.addClient({ client_name: 'CLI', token_endpoint_auth_method: 'none', redirect_uris: [CALLBACK] }));
    ({ client: signedApp } = await world.addClient({ client_name: 'Signed App', jwks, redirect_uris: [CALLBACK] }));
    ({ client: twinApp } = await world.addClient({ client_name: 'Twin App', jwks, redirect_uris: [CALLBACK] }));
    ({ client: remoteApp } = await world.addClient({ client_name: 'Remote App', jwks_uri: 'https://keys.example.com/jwks.json', redirect_uris: [CALLBACK] }));
  });
  after(() => world.close());

  /** Authenticates what a request to the token endpoint (or `endpoint`) presented. */
  const authenticate = (presented: Presented, using: ClientAuthDeps = deps) =>
    authenticateClient(using, { authorization: undefined, params: {}, endpoint: TOKEN_ENDPOINT, ...presented });

  /** `authenticated ID`, or the refusal as `STATUS CODE: description`. */
  async function answer(presented: Presented, using: ClientAuthDeps = deps): Promise<string> {
    try {
      return `authenticated ${(await authenticate(presented, using)).id}`;
    } catch (error) {
      if (error instanceof OAuthError) return `${error.status} ${error.code}: ${error.description}`;
      throw error;
    }
  }

  /** A client assertion as RFC 7523 §3 has it, for `clientId`, made now; `claims` override (undefined drops one). */
  function assertion(claims: JWTPayload = {}, { signer = es256, clientId = signedApp.id, header = {} as Record<string, unknown> } = {}): Promise<string> {
    const now = Math.floor(world.clock.now() / 1000);
    const payload = { iss: clientId, sub: clientId, aud: FLOW_ISSUER, jti: randomUUID(), iat: now, exp: now + 60, ...claims };
    const defined = Object.fromEntries(Object.entries(payload).filter(([, value]) => value !== undefined));
    return new SignJWT(defined).setProtectedHeader({ alg: signer.alg, kid: signer.kid, ...header }).sign(signer.key);
  }

  /** The form of a request authenticated with `jwt` (RFC 7523 §2.2), with `extra` parameters. */
  const asserted = (jwt: string, extra: Record<string, string> = {}, endpoint = TOKEN_ENDPOINT): Presented => ({
    params: { client_assertion_type: JWT_BEARER_ASSERTION, client_assertion: jwt, ...extra },
    endpoint,
  });

  it('authenticates a secret client by HTTP Basic or the form, whichever it registered (RFC 6749 §2.3.1)', async () => {
    for (const { client, secret } of [basicApp, postApp]) {
      assert.equal(await answer({ authorization: basic(client.id, secret) }), `authenticated ${client.id}`);
      assert.equal(await answer({ params: { client_id: client.id, client_secret: secret } }), `authenticated ${client.id}`);
      // The scheme is case-insensitive (RFC 9110 §11.1), and a client_id in the form may repeat Basic's.
      assert.equal(await answer({ authorization: `  basic ${basic(client.id, secret).slice(6)} ` }), `authenticated ${client.id}`);
      assert.equal(await answer({ authorization: basic(client.id, secret), params: { client_id: client.id } }), `authenticated ${client.id}`);
    }
    const found = await authenticate({ authorization: basic(basicApp.client.id, basicApp.secret) });
    assert.deepEqual(found, await world.store.clients.get(basicApp.client.id), 'the registration as stored');
  });

  it('form-decodes the client_id and secret inside Basic, as RFC 6749 §2.3.1 has them encoded', async () => {
    assert.ok(formEncode(ODD_ID) !== ODD_ID, 'the id needs encoding');
    assert.equal(await answer({ authorization: basic(ODD_ID, oddApp.secret) }), `authenticated ${ODD_ID}`);
    // `+` is a space in form encoding: an id whose + was left as is names another client.
    const plus = `${encodeURIComponent(ODD_ID).replace('%2B', '+')}:${oddApp.secret}`;
    assert.match(await answer({ authorization: rawBasic(plus) }), /^401 invalid_client: client authentication failed$/);
  });

  it('authenticates a public client by its client_id alone, in the form or as Basic with an empty password (RFC 6749 §2.1, §3.2.1)', async () => {
    assert.equal(await answer({ params: { client_id: publicApp.id } }), `authenticated ${publicApp.id}`);
    assert.equal(await answer({ authorization: basic(publicApp.id, '') }), `authenticated ${publicApp.id}`);
    // RFC 7662 §2.1: introspection wants a client that proves who it is; the endpoint enforces the list.
    assert.ok(TOKEN_AUTH_METHODS.includes('none'));
    assert.ok(!INTROSPECTION_AUTH_METHODS.includes('none'));
  });

  it('refuses every way a client can fail to authenticate with a secret or none with invalid_client and 401', async () => {
    const { client: basicClient, secret } = basicApp;
    const cases: [string, Presented, RegExp][] = [
      // HTTP Basic (RFC 7617) that is not one.
      ['another scheme in Authorization', { authorization: `Bearer ${secret}` }, /not valid HTTP Basic/],
      ['Basic that is not Base64', { authorization: 'Basic ***' }, /not valid HTTP Basic/],
      ['Basic without a colon', { authorization: rawBasic(basicClient.id) }, /not valid HTTP Basic/],
      ['Basic with an empty client_id', { authorization: rawBasic(`:${secret}`) }, /not valid HTTP Basic/],
      ['Basic whose client_id is not form-urlencoded (%zz)', { authorization: rawBasic(`%zz:${secret}`) }, /not valid HTTP Basic/],
      ['Basic whose secret is not form-urlencoded (%zz)', { authorization: rawBasic(`${basicClient.id}:%zz`) }, /not valid HTTP Basic/],
      // RFC 6749 §2.3.1: the secret.
      [
        'the right secret, with a client_id in the form naming another client',
        { authorization: basic(basicClient.id, secret), params: { client_id: postApp.client.id } },
        /client_id does not match/,
      ],
      ['a wrong secret by Basic', { authorization: basic(basicClient.id, `${secret}x`) }, /^client authentication failed$/],
      ['a wrong secret in the form', { params: { client_id: basicClient.id, client_secret: `${secret}x` } }, /^client authentication failed$/],
      ["another client's secret", { authorization: basic(basicClient.id, postApp.secret) }, /^client authentication failed$/],
      ['a client_id nobody has, by Basic', { authorization: basic('nobody', secret) }, /^client authentication failed$/],
      ['a client_id nobody has, in the form', { params: { client_id: 'nobody', client_secret: secret } }, /^client authentication failed$/],
      ['a client_id longer than 256 characters', { params: { client_id: 'x'.repeat(257), client_secret: secret } }, /^client authentication failed$/],
      ['client_secret without client_id', { params: { client_secret: secret } }, /authentication is required/],
      ['a confidential client with an empty Basic password', { authorization: basic(basicClient.id, '') }, /^client authentication failed$/],
      ['a client_id nobody has with an empty Basic password', { authorization: basic('nobody', '') }, /^client authentication failed$/],
      ['a public client with a secret by Basic', { authorization: basic(publicApp.id, 'guess') }, /public client has no secret/],
      ['a public client with a client_secret', { params: { client_id: publicApp.id, client_secret: 'guess' } }, /public client has no secret/],
      ['a private_key_jwt client with a secret', { authorization: basic(signedApp.id, 'guess') }, /private_key_jwt, not a secret/],
      // The client_id alone is a public client's (RFC 6749 §2.1).
      ['nothing at all', {}, /authentication is required/],
      ['the client_id alone of a client with a secret', { params: { client_id: basicClient.id } }, /must authenticate \(client_secret_basic\)/],
      ['the client_id alone of a private_key_jwt client', { params: { client_id: signedApp.id } }, /must authenticate \(private_key_jwt\)/],
      ['the client_id alone of no client', { params: { client_id: 'nobody' } }, /^client authentication failed$/],
    ];
    for (const [what, presented, description] of cases) {
      const refused = await answer(presented);
      assert.match(refused, /^401 invalid_client: /, what);
      assert.match(refused.replace(/^401 invalid_client: /, ''), description, what);
      assert.equal(refused.includes(secret), false, `${what}: the description never repeats a secret`);
    }
  });

  it('answers a wrong secret and a client nobody has alike, so that a refusal does not say which ids exist', async () => {
    const unknown = await answer({ params: { client_id: 'nobody', client_secret: 'guess' } });
    assert.equal(await answer({ params: { client_id: basicApp.client.id, client_secret: 'guess' } }), unknown);
    assert.equal(await answer({ authorization: basic('nobody', 'guess') }), unknown);
  });

  it('does not look up a client_id longer than 256 characters', async () => {
    const looked: string[] = [];
    const clients = new Proxy(world.store.clients, {
      get(target, name, receiver) {
        const value = Reflect.get(target, name, receiver);
        if (name !== 'get' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
        return (id: string) => {
          looked.push(id);
          return value.call(target, id);
        };
      },
    });
    const counting = { ...deps, store: new Proxy(world.store, { get: (target, name) => (name === 'clients' ? clients : Reflect.get(target, name)) }) as Store };
    const long = 'x'.repeat(257);
    for (const presented of [{ params: { client_id: long } }, { authorization: basic(long, 'guess') }, asserted(await assertion({ iss: long, sub: long }))]) {
      assert.match(await answer(presented, counting), /^401 invalid_client/);
    }
    assert.equal(await answer({ params: { client_id: publicApp.id } }, counting), `authenticated ${publicApp.id}`);
    assert.deepEqual(looked, [publicApp.id]);
  });

  it('accepts the previous secret after a rotation until its grace ends, and the new one at once', async () => {
    const { client } = await secretApp({ client_name: 'Rotating App' });
    const { secret: old } = await rotateClientSecret(world.manage, client.id, 0);
    const { secret: current } = await rotateClientSecret(world.manage, client.id, 60);
    const by = (secret: string) => answer({ authorization: basic(client.id, secret) });
    assert.equal(await by(current), `authenticated ${client.id}`);
    assert.equal(await by(old), `authenticated ${client.id}`, 'the previous secret within its 60 seconds');
    world.clock.advance(60_000 - 1);
    assert.equal(await by(old), `authenticated ${client.id}`, 'a millisecond before the grace ends');
    world.clock.advance(1);
    assert.match(await by(old), /^401 invalid_client/, 'when the grace ends');
    assert.equal(await by(current), `authenticated ${client.id}`);
    const stored = JSON.stringify(await world.store.clients.get(client.id));
    assert.equal(stored.includes(current) || stored.includes(old), false, 'the secrets are kept only hashed');

    const { client: other, secret: firstSecret } = await secretApp({ client_name: 'Rotated Now' });
    const { secret: next } = await rotateClientSecret(world.manage, other.id, 0);
    assert.match(await answer({ params: { client_id: other.id, client_secret: firstSecret } }), /^401 invalid_client/, 'no grace');
    assert.equal(await answer({ params: { client_id: other.id, client_secret: next } }), `authenticated ${other.id}`);
  });

  it('answers a request that uses two methods, or half an assertion, with invalid_request and 400 (RFC 6749 §2.3)', async () => {
    const jwt = await assertion();
    const { client, secret } = basicApp;
    const cases: [string, Presented][] = [
      ['Basic and client_secret', { authorization: basic(client.id, secret), params: { client_id: client.id, client_secret: secret } }],
      ['Basic and client_assertion', { authorization: basic(client.id, secret), ...asserted(jwt) }],
      ['client_secret and client_assertion', asserted(jwt, { client_id: signedApp.id, client_secret: secret })],
      ['Basic and client_assertion_type alone', { authorization: basic(client.id, secret), params: { client_assertion_type: JWT_BEARER_ASSERTION } }],
      ['client_assertion without its type', { params: { client_assertion: jwt } }],
      ['client_assertion_type without an assertion', { params: { client_assertion_type: JWT_BEARER_ASSERTION } }],
    ];
    for (const [what, presented] of cases) assert.match(await answer(presented), /^400 invalid_request: /, what);
  });

  it('authenticates a private_key_jwt client by an assertion for the issuer alone (RFC 7523 §3, RFC 7523bis)', async () => {
    const accepted: [string, Promise<string>, Record<string, string>?, string?][] = [
      ['aud the issuer', assertion({ aud: FLOW_ISSUER })],
      ['aud the issuer, at the PAR endpoint', assertion({ aud: FLOW_ISSUER }), {}, PAR_ENDPOINT],
      ['aud the issuer as the one member of an array', assertion({ aud: [FLOW_ISSUER] })],
      ['signed with the Ed25519 key', assertion({}, { signer: ed25519 })],
      ['with client_id alongside, naming the same client', assertion(), { client_id: signedApp.id }],
      ['without iat', assertion({ iat: undefined })],
      ['expired 29 seconds ago (30 of clock slack)', assertion({ exp: Math.floor(world.clock.now() / 1000) - 29 })],
      ['not before 29 seconds from now', assertion({ nbf: Math.floor(world.clock.now() / 1000) + 29 })],
      ['expiring in exactly the hour allowed', assertion({ exp: Math.floor(world.clock.now() / 1000) + 3600 })],
    ];
    for (const [what, jwt, extra, endpoint] of accepted) {
      assert.equal(await answer(asserted(await jwt, extra, endpoint)), `authenticated ${signedApp.id}`, what);
    }
  });

  /** The refusal of an assertion whose aud is not the issuer alone: it says what to send, and names the setting. */
  const AUDIENCE_REFUSED = `401 invalid_client: client_assertion: the aud claim must be this server's issuer identifier, ${FLOW_ISSUER}, as its only value (RFC 7523bis); the token endpoint's URL and other audiences are refused (an operator can accept them with TESSERA_CLIENT_ASSERTION_AUDIENCE=legacy)`;
  /** The audiences RFC 7523 §3 allowed and RFC 7523bis does not, each with the endpoint it is presented at. */
  const LEGACY_AUDIENCES: [string, JWTPayload['aud'], string][] = [
    ['aud the token endpoint (OIDC Core §9)', TOKEN_ENDPOINT, TOKEN_ENDPOINT],
    ['aud the token endpoint, presented at the PAR endpoint', TOKEN_ENDPOINT, PAR_ENDPOINT],
    ['aud the endpoint called (PAR, RFC 9126 §2)', PAR_ENDPOINT, PAR_ENDPOINT],
    ['aud the token endpoint as the one member of an array', [TOKEN_ENDPOINT], TOKEN_ENDPOINT],
    ['aud among others', ['https://elsewhere.example', FLOW_ISSUER], TOKEN_ENDPOINT],
    ['aud the issuer and the token endpoint', [FLOW_ISSUER, TOKEN_ENDPOINT], TOKEN_ENDPOINT],
  ];

  it('refuses an assertion for the token endpoint, the endpoint called, or the issuer among others with invalid_client (RFC 7523bis: audience injection)', async () => {
    for (const [what, aud, endpoint] of LEGACY_AUDIENCES) {
      const jti = randomUUID();
      assert.equal(await answer(asserted(await assertion({ aud, jti }), {}, endpoint)), AUDIENCE_REFUSED, what);
      // Refused before its jti is spent: the client's next assertion with the issuer is not turned away.
      assert.equal(await answer(asserted(await assertion({ jti }))), `authenticated ${signedApp.id}`, `${what}: the jti is still free`);
    }
    // What the assertion says is not repeated in the refusal, whatever it holds.
    const hostile = await answer(asserted(await assertion({ aud: ['<script>alert(1)</script>', FLOW_ISSUER] })));
    assert.equal(hostile, AUDIENCE_REFUSED);
  });

  it('accepts them again with TESSERA_CLIENT_ASSERTION_AUDIENCE=legacy, and still only audiences naming this server', async () => {
    const legacy = { ...deps, config: { ...deps.config, clientAuth: { ...deps.config.clientAuth, assertionAudience: 'legacy' as const } } };
    for (const [what, aud, endpoint] of LEGACY_AUDIENCES) {
      assert.equal(await answer(asserted(await assertion({ aud }), {}, endpoint), legacy), `authenticated ${signedApp.id}`, what);
    }
    assert.equal(await answer(asserted(await assertion({ aud: FLOW_ISSUER })), legacy), `authenticated ${signedApp.id}`, 'the issuer');
    assert.match(
      await answer(asserted(await assertion({ aud: 'https://elsewhere.example' })), legacy),
      /^401 invalid_client: client_assertion: the aud claim is not valid/,
    );
    assert.match(
      await answer(asserted(await assertion({ aud: `${FLOW_ISSUER}/oauth/revoke` }), {}, PAR_ENDPOINT), legacy),
      /^401 invalid_client: client_assertion: the aud claim is not valid/,
      "another of this server's endpoints than the one called",
    );
    assert.match(await answer(asserted(await assertion({ aud: TOKEN_ENDPOINT }, { header: { typ: 'at+jwt' } })), legacy), /typ must be/, 'typ is checked too');
  });

  it('takes an assertion without typ, typed JWT or typed client-authentication+jwt, and refuses one typed as another kind of JWT (RFC 7523bis, RFC 8725 §3.11)', async () => {
    const typed = (typ: unknown) => assertion({}, { header: typ === undefined ? {} : { typ } });
    for (const typ of [undefined, 'JWT', 'jwt', 'client-authentication+jwt', 'application/client-authentication+jwt', 'Client-Authentication+JWT']) {
      assert.equal(await answer(asserted(await typed(typ))), `authenticated ${signedApp.id}`, `typ ${String(typ)}`);
    }
    for (const typ of [
      'at+jwt',
      'application/at+jwt',
      'dpop+jwt',
      'logout+jwt',
      'secevent+jwt',
      'oauth-id-jag+jwt',
      'oauth-authz-req+jwt',
      'JOSE+JSON',
      '',
      42,
    ]) {
      assert.equal(
        await answer(asserted(await typed(typ))),
        '401 invalid_client: client_assertion typ must be client-authentication+jwt or JWT, or be left out (RFC 7523bis)',
        `typ ${JSON.stringify(typ)}`,
      );
    }
  });

  it('refuses every way a client assertion can fail with invalid_client and 401 (RFC 7521 §4.2, RFC 7523 §3)', async () => {
    const now = Math.floor(world.clock.now() / 1000);
    const hmac = new TextEncoder().encode(basicApp.secret);
    const unsigned = new UnsecuredJWT({ iss: signedApp.id, sub: signedApp.id, aud: FLOW_ISSUER, jti: randomUUID(), exp: now + 60 }).encode();
    const cases: [string, Promise<Presented> | Presented, RegExp][] = [
      [
        'an assertion type other than jwt-bearer',
        { params: { client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:saml2-bearer', client_assertion: await assertion() } },
        /client_assertion_type must be/,
      ],
      ['not a JWT', asserted('not-a-jwt'), /is not a JWT/],
      ['without sub', assertion({ sub: undefined }).then((jwt) => asserted(jwt)), /sub must be the client_id/],
      ['a sub that is not a string', assertion({ sub: 42 as unknown as string }).then((jwt) => asserted(jwt)), /sub must be the client_id/],
      ['with client_id alongside naming another client', assertion().then((jwt) => asserted(jwt, { client_id: twinApp.id })), /sub must be the client_id/],
      ['for a client nobody has', assertion({}, { clientId: 'nobody' }).then((jwt) => asserted(jwt)), /^client authentication failed$/],
      [
        'from a client with a secret',
        assertion({}, { clientId: basicApp.client.id }).then((jwt) => asserted(jwt)),
        /client_secret_basic, not a client_assertion/,
      ],
      ['from a public client', assertion({}, { clientId: publicApp.id }).then((jwt) => asserted(jwt)), /none, not a client_assertion/],
      [
        'client_secret_jwt: HS256 under the client secret, which this server does not take',
        new SignJWT({ iss: basicApp.client.id, sub: basicApp.client.id, aud: FLOW_ISSUER, jti: randomUUID(), exp: now + 60 })
          .setProtectedHeader({ alg: 'HS256' })
          .sign(hmac)
          .then((jwt) => asserted(jwt)),
        /not a client_assertion/,
      ],
      [
        'signed with HS256 by a private_key_jwt client',
        new SignJWT({ iss: signedApp.id, sub: signedApp.id, aud: FLOW_ISSUER, jti: randomUUID(), exp: now + 60 })
          .setProtectedHeader({ alg: 'HS256', kid: es256.kid })
          .sign(hmac)
          .then((jwt) => asserted(jwt)),
        /must be signed with one of RS256/,
      ],
      ['unsigned (alg none)', asserted(unsigned), /must be signed with one of/],
      ['signed by another key under the same kid', assertion({}, { signer: impostor }).then((jwt) => asserted(jwt)), /signature verification failed/],
      ['signed by a key the client does not have', assertion({}, { signer: stranger }).then((jwt) => asserted(jwt)), /not among the client's keys/],
      ['expired 31 seconds ago', assertion({ exp: now - 31, iat: now - 90 }).then((jwt) => asserted(jwt)), /has expired/],
      ['not before 31 seconds from now', assertion({ nbf: now + 31 }).then((jwt) => asserted(jwt)), /the nbf claim/],
      ['expiring a second past the hour allowed', assertion({ exp: now + 3601 }).then((jwt) => asserted(jwt)), /must expire within 3600 seconds/],
      ['without exp', assertion({ exp: undefined }).then((jwt) => asserted(jwt)), /the exp claim/],
      ['for another audience', assertion({ aud: 'https://elsewhere.example' }).then((jwt) => asserted(jwt)), /the aud claim must be/],
      [
        "for another of this server's endpoints than the one called",
        assertion({ aud: `${FLOW_ISSUER}/oauth/revoke` }).then((jwt) => asserted(jwt, {}, PAR_ENDPOINT)),
        /the aud claim must be/,
      ],
      ['without aud', assertion({ aud: undefined }).then((jwt) => asserted(jwt)), /the aud claim must be/],
      ['with an empty aud array', assertion({ aud: [] }).then((jwt) => asserted(jwt)), /the aud claim must be/],
      ['issued by someone else', assertion({ iss: twinApp.id }).then((jwt) => asserted(jwt)), /the iss claim/],
      ['without iss', assertion({ iss: undefined }).then((jwt) => asserted(jwt)), /the iss claim/],
      ['without jti', assertion({ jti: undefined }).then((jwt) => asserted(jwt)), /the jti claim/],
      ['an empty jti', assertion({ jti: '' }).then((jwt) => asserted(jwt)), /jti is not valid/],
      ['a jti that is not a string', assertion({ jti: 7 as unknown as string }).then((jwt) => asserted(jwt)), /jti is not valid/],
      ['a jti over 256 characters', assertion({ jti: 'j'.repeat(257) }).then((jwt) => asserted(jwt)), /jti is not valid/],
      [
        'whose keys could not be fetched from its jwks_uri',
        assertion({}, { clientId: remoteApp.id }).then((jwt) => asserted(jwt)),
        /keys could not be read: the JWKS could not be fetched/,
      ],
    ];
    for (const [what, presented, description] of cases) {
      const refused = await answer(await presented);
      assert.match(refused, /^401 invalid_client: /, what);
      assert.match(refused.replace(/^401 invalid_client: /, ''), description, what);
    }
    assert.ok(fetches > 0, "the jwks_uri client's keys were asked for, of the test's fetch");
  });

  it('takes TESSERA_CLIENT_ASSERTION_MAX_LIFETIME as the longest an assertion may live', async () => {
    const shorter = { ...deps, config: { ...deps.config, clientAuth: { ...deps.config.clientAuth, assertionMaxLifetimeSeconds: 120 } } };
    const now = Math.floor(world.clock.now() / 1000);
    assert.equal(await answer(asserted(await assertion({ exp: now + 120 })), shorter), `authenticated ${signedApp.id}`);
    assert.match(await answer(asserted(await assertion({ exp: now + 121 })), shorter), /^401 invalid_client: client_assertion must expire within 120 seconds$/);
  });

  it('accepts an assertion once, remembering its jti until it could no longer be accepted (OIDC Core §9)', async () => {
    const jti = randomUUID();
    const exp = Math.floor(world.clock.now() / 1000) + 60;
    const once = await assertion({ jti, exp });
    assert.equal(await answer(asserted(once)), `authenticated ${signedApp.id}`);
    assert.match(await answer(asserted(once)), /^401 invalid_client: client_assertion has been used already$/);
    assert.match(await answer(asserted(once, {}, PAR_ENDPOINT)), /used already/, 'at another endpoint too');
    assert.match(await answer(asserted(await assertion({ jti }))), /used already/, 'another assertion with the same jti');
    // The jti is the client's: another client's assertion may carry the same one.
    assert.equal(await answer(asserted(await assertion({ jti }, { clientId: twinApp.id }))), `authenticated ${twinApp.id}`);
    // Past exp, within the 30 seconds of slack, the assertion would still verify: its jti is still kept.
    world.clock.advance(75_000);
    assert.match(await answer(asserted(once)), /used already/, 'within the slack after exp');
    world.clock.advance(16_000);
    assert.match(await answer(asserted(once)), /has expired/);
    // Once no assertion of that exp could be accepted, the jti is free again.
    assert.equal(await answer(asserted(await assertion({ jti }))), `authenticated ${signedApp.id}`);
  });
});
