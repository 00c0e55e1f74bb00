/**
 * Token exchange (RFC 8693): the photo API's own client, holding a person's token for the
 * photo API, exchanges it through oauth4webapi for a token for the print API that acts for
 * that person: `sub` the person, `client_id` and `act` the exchanging client, the scopes the
 * person approved for the print API, never outliving the token it came from, and ending when
 * the person's approval is revoked or the person is disabled. Every refusal is the error
 * RFC 8693 §2.2.2 names, with nothing issued.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeJwt, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import * as oauth from 'oauth4webapi';
import { GRANT_AUTHORIZATION_CODE, GRANT_TOKEN_EXCHANGE, TOKEN_TYPE_ACCESS_TOKEN } from '../src/core/protocol.ts';
import { createClient, updateClient } from '../src/flows/manage/clients.ts';
import { revokeGrant } from '../src/flows/manage/grants.ts';
import { addOrganization, removeOrganizationMember, setOrganizationMember } from '../src/flows/manage/organizations.ts';
import { addResource } from '../src/flows/manage/resources.ts';
import { setDisabled } from '../src/flows/manage/users.ts';
import { FormBrowser } from './helpers/browser.ts';
import { signInRaw } from './helpers/lifecycle.ts';
import { runTessera } from './helpers/cli.ts';
import { clockAtStart } from './helpers/clock.ts';
import { dpopKey, insecure } from './helpers/dpop.ts';
import { manageDeps } from './helpers/manage.ts';
import { basic, postForm, REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';

const PHOTOS = 'https://photos.example.com';
const PRINTS = 'https://prints.example.com';
const LEDGER = 'https://ledger.example.com';

describe('token exchange (RFC 8693)', () => {
  const clock = clockAtStart();
  let server: TestServer;
  let as: oauth.AuthorizationServer;
  let app: TestClient;
  /** The photo API's client: exchanges people's photo tokens for print tokens. */
  let photos: TestClient;
  /** The print API's client: exchanges print tokens for photo tokens (a chain back). */
  let prints: TestClient;
  let user: TestUser;

  before(async () => {
    server = await startTestServer({ clock });
    const deps = manageDeps(server);
    await addResource(deps, { identifier: PHOTOS, name: 'Photos', scopes: [{ name: 'photos:read', description: 'See your photos' }] });
    await addResource(deps, {
      identifier: PRINTS,
      name: 'Prints',
      scopes: [
        { name: 'prints:order', description: 'Order prints' },
        { name: 'prints:status', description: 'See your orders' },
      ],
    });
    await addResource(deps, { identifier: LEDGER, name: 'Ledger', scopes: [{ name: 'ledger:read', description: 'See the ledger' }] });
    app = await server.addClient({
      scopes: ['openid', 'organization', 'photos:read', 'prints:order', 'prints:status', 'ledger:read'],
      grantTypes: [GRANT_AUTHORIZATION_CODE],
    });
    const made = await createClient(deps, {
      client_name: 'Photo API',
      grant_types: ['token-exchange', 'client_credentials'],
      token_exchange_audiences: [PRINTS],
      scope: 'prints:status',
    });
    photos = { clientId: made.client.id, clientSecret: made.secret! };
    const back = await createClient(deps, { client_name: 'Print API', grant_types: ['token-exchange'], token_exchange_audiences: [PHOTOS] });
    prints = { clientId: back.client.id, clientSecret: back.secret! };
    user = await server.addUser();
    const issuer = new URL(server.url);
    as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure));
  });
  after(() => server.close());

  /** The person signs in to the app and approves `scope`; the app's access token for `resource`. */
  async function personToken(scope = 'photos:read prints:order', resource = PHOTOS, who = user): Promise<string> {
    // Now, by the server's clock too: the APIs were registered by the system clock, and a
    // grant made before an API was registered does not cover it.
    clock.set(Date.now());
    const verifier = oauth.generateRandomCodeVerifier();
    const url = new URL(`${server.url}/oauth/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: app.clientId,
      redirect_uri: REDIRECT_URI,
      scope,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const page = await new FormBrowser(server.url).authorize(url.href, who);
    const code = new URL(page.location ?? 'http://invalid/').searchParams.get('code');
    assert.ok(code, `a code: ${page.status} ${page.location}`);
    const result = await postForm(
      `${server.url}/oauth/token`,
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier, resource },
      { authorization: basic(app.clientId, app.clientSecret) },
    );
    assert.equal(result.status, 200, JSON.stringify(result.body));
    return result.body['access_token'] as string;
  }

  /** A token exchange by `client` through oauth4webapi: its answer, or its OAuth error. */
  async function exchange(client: TestClient, parameters: Record<string, string>, options: { DPoP?: oauth.DPoPHandle } = {}) {
    const response = await oauth.genericTokenEndpointRequest(
      as,
      { client_id: client.clientId },
      oauth.ClientSecretBasic(client.clientSecret),
      GRANT_TOKEN_EXCHANGE,
      parameters,
      { ...insecure, ...options },
    );
    return oauth.processGenericTokenEndpointResponse(as, { client_id: client.clientId }, response);
  }

  /** The OAuth error a token exchange is refused with, and its status. */
  /** The photo API's own access token for the print API, through the client credentials grant. */
  async function photosOwnToken(): Promise<string> {
    const response = await oauth.clientCredentialsGrantRequest(
      as,
      { client_id: photos.clientId },
      oauth.ClientSecretBasic(photos.clientSecret),
      { resource: PRINTS },
      insecure,
    );
    return (await oauth.processClientCredentialsResponse(as, { client_id: photos.clientId }, response)).access_token;
  }

  async function refusal(client: TestClient, parameters: Record<string, string>): Promise<{ error: string; status: number; description: string }> {
    try {
      await exchange(client, parameters);
    } catch (error) {
      if (error instanceof oauth.ResponseBodyError) return { error: error.error, status: error.status, description: error.error_description ?? '' };
      throw error;
    }
    assert.fail('the exchange was not refused');
  }

  const subject = (token: string) => ({ subject_token: token, subject_token_type: TOKEN_TYPE_ACCESS_TOKEN });
  const introspect = async (client: TestClient, token: string) =>
    (await postForm(`${server.url}/oauth/introspect`, { token }, { authorization: basic(client.clientId, client.clientSecret) })).body;
  const printsApi = (token: string) =>
    jwtVerify(token, createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`)), {
      issuer: server.config.issuer,
      audience: PRINTS,
      typ: 'at+jwt',
      currentDate: new Date(clock.now()),
    });

  it('lists the grant in discovery (RFC 8414 grant_types_supported)', () => {
    assert.ok(as.grant_types_supported?.includes(GRANT_TOKEN_EXCHANGE));
  });

  it("exchanges a person's photo token for a print token that acts for them: sub the person, client_id and act the photo API, the print scopes they approved, issued_token_type", async () => {
    const token = await personToken();
    const result = await exchange(photos, { ...subject(token), audience: PRINTS });
    assert.equal(result['issued_token_type'], TOKEN_TYPE_ACCESS_TOKEN);
    assert.equal(result.token_type, 'bearer');
    assert.equal(result.scope, 'prints:order');
    assert.equal(result.refresh_token, undefined);
    const { payload } = await printsApi(result.access_token);
    assert.deepEqual([payload.sub, payload['client_id'], payload.aud, payload['scope']], [user.id, photos.clientId, PRINTS, 'prints:order']);
    assert.deepEqual(payload['act'], { sub: photos.clientId });
    assert.ok(payload.exp! <= decodeJwt(token).exp!, 'no later than the subject token');
    const seen = await introspect(photos, result.access_token);
    assert.deepEqual([seen['active'], seen['sub'], seen['client_id'], seen['act']], [true, user.id, photos.clientId, { sub: photos.clientId }]);
    // resource (RFC 8707) names the API as audience does.
    assert.equal(decodeJwt((await exchange(photos, { ...subject(token), resource: PRINTS })).access_token).aud, PRINTS);
    // With one exchange audience, the API need not be named.
    assert.equal(decodeJwt((await exchange(photos, subject(token))).access_token).aud, PRINTS);
  });

  it('carries the organization the person approved the app for into the exchanged token, while they are a member', async () => {
    const deps = manageDeps(server);
    const acme = await addOrganization(deps, { name: 'Acme Photo Club' });
    const olga = await server.addUser({ username: 'olga' });
    await setOrganizationMember(deps, acme.id, { username: 'olga' });
    const photoToken = await personToken('organization photos:read prints:order', PHOTOS, olga);
    assert.deepEqual([decodeJwt(photoToken)['org_id'], decodeJwt(photoToken)['org_name']], [acme.id, 'Acme Photo Club'], 'the subject token names it');
    const exchanged = await exchange(photos, { ...subject(photoToken), audience: PRINTS });
    const { payload } = await printsApi(exchanged.access_token);
    assert.deepEqual([payload['org_id'], payload['org_name'], payload.sub], [acme.id, 'Acme Photo Club', olga.id]);
    // No longer a member: the next exchange names no organization.
    await removeOrganizationMember(deps, acme.id, 'olga');
    const after = await printsApi((await exchange(photos, { ...subject(photoToken), audience: PRINTS })).access_token);
    assert.equal(after.payload['org_id'], undefined);
  });

  it('records the exchange as an event naming both clients, and each refusal as one', async () => {
    const token = await personToken();
    await exchange(photos, { ...subject(token), audience: PRINTS });
    await refusal(photos, { ...subject(token), audience: LEDGER });
    const events = await server.store.events.list({ limit: 20 });
    const exchanged = events.find((event) => event.type === 'token.exchanged')!;
    assert.deepEqual(
      [exchanged.userId, exchanged.clientId, exchanged.detail['subject_client'], exchanged.detail['resource'], exchanged.detail['act']],
      [user.id, photos.clientId, app.clientId, PRINTS, photos.clientId],
    );
    const refused = events.find((event) => event.type === 'token.exchange_refused')!;
    assert.deepEqual([refused.clientId, refused.detail['error']], [photos.clientId, 'invalid_target']);
  });

  it("narrows the scope, never widens it: a print scope the person did not approve, another API's or an OpenID scope is invalid_scope", async () => {
    const token = await personToken();
    assert.equal((await exchange(photos, { ...subject(token), audience: PRINTS, scope: 'prints:order' })).scope, 'prints:order');
    for (const scope of ['prints:status', 'prints:order prints:status', 'photos:read', 'openid']) {
      assert.equal((await refusal(photos, { ...subject(token), audience: PRINTS, scope })).error, 'invalid_scope', scope);
    }
    // Someone who approved nothing of the print API (approvals add up, per person and app): nothing to pass on.
    assert.equal(
      (await refusal(photos, { ...subject(await personToken('photos:read', PHOTOS, await server.addUser())), audience: PRINTS })).error,
      'invalid_scope',
    );
  });

  it("refuses an API outside the client's exchange audiences, or two different ones, with invalid_target", async () => {
    const token = await personToken('photos:read prints:order ledger:read');
    const targets: Record<string, string>[] = [
      { audience: LEDGER },
      { resource: LEDGER },
      { audience: 'https://unknown.example' },
      { audience: PRINTS, resource: PHOTOS },
    ];
    for (const target of targets) {
      assert.equal((await refusal(photos, { ...subject(token), ...target })).error, 'invalid_target', JSON.stringify(target));
    }
  });

  it('refuses a client not registered for the grant with unauthorized_client', async () => {
    assert.equal((await refusal(app, { ...subject(await personToken()), audience: PRINTS })).error, 'unauthorized_client');
  });

  it("refuses a subject token that is missing, of another type, forged, from another issuer or a client's own, with invalid_request", async () => {
    const token = await personToken();
    const stranger = await generateKeyPair('ES256');
    const forged = await new SignJWT({ ...decodeJwt(token) }).setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: 'x' }).sign(stranger.privateKey);
    const otherIssuer = await new SignJWT({ ...decodeJwt(token), iss: 'https://elsewhere.example' })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt' })
      .sign(stranger.privateKey);
    const [head, body] = token.split('.');
    const tampered = `${head}.${body}.${'A'.repeat(86)}`;
    const own = await photosOwnToken();
    const cases: Record<string, Record<string, string>> = {
      'no subject_token': { subject_token_type: TOKEN_TYPE_ACCESS_TOKEN },
      'no subject_token_type': { subject_token: token },
      'an ID token type': { subject_token: token, subject_token_type: 'urn:ietf:params:oauth:token-type:id_token' },
      'a refresh token type': { subject_token: token, subject_token_type: 'urn:ietf:params:oauth:token-type:refresh_token' },
      'not a token': subject('not-a-token'),
      'a forged signature': subject(forged),
      'a tampered signature': subject(tampered),
      'another issuer': subject(otherIssuer),
      "a client's own token": subject(own),
      'another requested_token_type': { ...subject(token), requested_token_type: 'urn:ietf:params:oauth:token-type:id_token' },
    };
    for (const [name, parameters] of Object.entries(cases)) {
      const refused = await refusal(photos, { ...parameters, audience: PRINTS });
      assert.deepEqual([refused.status, refused.error], [400, 'invalid_request'], name);
    }
  });

  it("takes the client's own token as actor_token, and refuses another client's, one without its type or not a token", async () => {
    const token = await personToken();
    const own = await photosOwnToken();
    const result = await exchange(photos, { ...subject(token), audience: PRINTS, actor_token: own, actor_token_type: TOKEN_TYPE_ACCESS_TOKEN });
    assert.deepEqual(decodeJwt(result.access_token)['act'], { sub: photos.clientId });
    const cases: Record<string, Record<string, string>> = {
      "another client's token": { actor_token: token, actor_token_type: TOKEN_TYPE_ACCESS_TOKEN },
      'no actor_token_type': { actor_token: own },
      'actor_token_type alone': { actor_token_type: TOKEN_TYPE_ACCESS_TOKEN },
      'not a token': { actor_token: 'nope', actor_token_type: TOKEN_TYPE_ACCESS_TOKEN },
    };
    for (const [name, parameters] of Object.entries(cases)) {
      assert.equal((await refusal(photos, { ...subject(token), audience: PRINTS, ...parameters })).error, 'invalid_request', name);
    }
  });

  it('nests act along a delegation chain (RFC 8693 §4.1), and refuses a chain past the depth limit', async () => {
    const token = await personToken('photos:read prints:order');
    const hop1 = (await exchange(photos, { ...subject(token), audience: PRINTS })).access_token;
    const hop2 = (await exchange(prints, { ...subject(hop1), audience: PHOTOS })).access_token;
    const claims = decodeJwt(hop2);
    assert.deepEqual([claims.sub, claims['client_id'], claims.aud, claims['scope']], [user.id, prints.clientId, PHOTOS, 'photos:read']);
    assert.deepEqual(claims['act'], { sub: prints.clientId, act: { sub: photos.clientId } });
    const hop3 = (await exchange(photos, { ...subject(hop2), audience: PRINTS })).access_token;
    const hop4 = (await exchange(prints, { ...subject(hop3), audience: PHOTOS })).access_token;
    // A fifth actor: two services passing a person's token back and forth.
    const refused = await refusal(photos, { ...subject(hop4), audience: PRINTS });
    assert.equal(refused.error, 'invalid_request');
    assert.match(refused.description, /delegation chain/);
  });

  it('binds the token to the DPoP key of a proof sent with the exchange (RFC 9449 §5)', async () => {
    const key = await dpopKey(photos);
    const request = () => exchange(photos, { ...subject(token), audience: PRINTS }, { DPoP: key.handle });
    const token = await personToken();
    // The server asks for a nonce first; oauth4webapi retries with it.
    const result = await request().catch((error: unknown) => (oauth.isDPoPNonceError(error) ? request() : Promise.reject(error)));
    assert.equal(result.token_type, 'dpop');
    assert.deepEqual(decodeJwt(result.access_token)['cnf'], { jkt: key.jkt });
  });

  it("never issues a token that outlives its subject token (Keycloak's CVE of 2026), and the exchanged token expires with it", async () => {
    const token = await personToken();
    const subjectExp = decodeJwt(token).exp!;
    // 100 seconds before the subject token expires.
    clock.set((subjectExp - 100) * 1000);
    const result = await exchange(photos, { ...subject(token), audience: PRINTS });
    assert.equal(decodeJwt(result.access_token).exp, subjectExp);
    assert.equal(result.expires_in, 100);
    assert.equal((await introspect(photos, result.access_token))['active'], true);
    clock.set(subjectExp * 1000 + 1000);
    assert.equal((await introspect(photos, result.access_token))['active'], false, 'expired with its subject token');
    assert.equal((await refusal(photos, { ...subject(token), audience: PRINTS })).error, 'invalid_request', 'an expired subject token');
    clock.set(Date.now());
  });

  it("ends the exchanged tokens when the person's approval is revoked, and refuses the subject token from then on", async () => {
    const token = await personToken();
    const exchanged = (await exchange(photos, { ...subject(token), audience: PRINTS })).access_token;
    assert.equal((await introspect(photos, exchanged))['active'], true);
    assert.ok(await revokeGrant(manageDeps(server), decodeJwt(token)['gid'] as string));
    assert.equal((await introspect(photos, exchanged))['active'], false, 'revoked with the grant it came from');
    assert.equal((await refusal(photos, { ...subject(token), audience: PRINTS })).error, 'invalid_request');
  });

  it('ends the exchanged tokens when the person is disabled', async () => {
    const other = await server.addUser();
    const token = await personToken(undefined, undefined, other);
    const exchanged = (await exchange(photos, { ...subject(token), audience: PRINTS })).access_token;
    await setDisabled(manageDeps(server), other.username, true);
    assert.equal((await introspect(photos, exchanged))['active'], false);
    assert.equal((await refusal(photos, { ...subject(token), audience: PRINTS })).error, 'invalid_request');
  });

  it("ends the exchanged tokens when the operator takes the API off the client's exchange audiences", async () => {
    const deps = manageDeps(server);
    const made = await createClient(deps, { client_name: 'Short-lived', grant_types: ['token-exchange'], token_exchange_audiences: [PRINTS, PHOTOS] });
    const client = { clientId: made.client.id, clientSecret: made.secret! };
    const exchanged = (await exchange(client, { ...subject(await personToken()), audience: PRINTS })).access_token;
    assert.equal((await introspect(client, exchanged))['active'], true);
    await updateClient(deps, client.clientId, { token_exchange_audiences: [PHOTOS] });
    assert.equal((await introspect(client, exchanged))['active'], false);
  });
});

describe('registering a client for token exchange', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
    await addResource(manageDeps(server), { identifier: PRINTS, name: 'Prints', scopes: [{ name: 'prints:order', description: 'Order prints' }] });
  });
  after(() => server.close());

  it('registers one with `tessera client add --grant token-exchange --exchange-audience URI`', async () => {
    const added = await runTessera(['client', 'add', '--name', 'Photo API', '--grant', 'token-exchange', '--exchange-audience', PRINTS, '--json'], {
      TESSERA_DATABASE: server.config.database,
    });
    assert.equal(added.code, 0, added.stderr);
    const client = JSON.parse(added.stdout) as Record<string, unknown>;
    assert.deepEqual([client['grant_types'], client['token_exchange_audiences']], [[GRANT_TOKEN_EXCHANGE], [PRINTS]]);
    const shown = await runTessera(['client', 'show', client['client_id'] as string], { TESSERA_DATABASE: server.config.database });
    assert.match(shown.stdout, /token exchange for: https:\/\/prints\.example\.com/);
  });

  it('refuses a public client, the grant without audiences, audiences without the grant, and an API that is not registered', async () => {
    const cases: Record<string, string[]> = {
      'a public client': ['--public', '--grant', 'token-exchange', '--exchange-audience', PRINTS],
      'no audience': ['--grant', 'token-exchange'],
      'no grant': ['--grant', 'client_credentials', '--scope', 'prints:order', '--exchange-audience', PRINTS],
      // Neither a registered API nor an issuer (another authorization server's, for an ID-JAG).
      'an unknown API': ['--grant', 'token-exchange', '--exchange-audience', 'prints-api'],
      'an issuer with a query': ['--grant', 'token-exchange', '--exchange-audience', 'https://as.example?x=1'],
      'plain http off loopback': ['--grant', 'token-exchange', '--exchange-audience', 'http://as.example'],
    };
    for (const [name, args] of Object.entries(cases)) {
      const added = await runTessera(['client', 'add', '--name', 'X', ...args], { TESSERA_DATABASE: server.config.database });
      assert.notEqual(added.code, 0, name);
      assert.match(added.stderr, /token-exchange|--exchange-audience/, `${name}: ${added.stderr}`);
    }
  });
});

describe('TESSERA_TOKEN_EXCHANGE_MAX_ACTORS', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { TESSERA_TOKEN_EXCHANGE_MAX_ACTORS: '1' } });
  });
  after(() => server.close());

  it('refuses a chain of more actors than it allows: here one, so an exchanged token is not exchanged again', async () => {
    const deps = manageDeps(server);
    await addResource(deps, { identifier: PHOTOS, name: 'Photos', scopes: [{ name: 'photos:read', description: 'See your photos' }] });
    await addResource(deps, { identifier: PRINTS, name: 'Prints', scopes: [{ name: 'prints:order', description: 'Order prints' }] });
    const app = await server.addClient({ scopes: ['photos:read', 'prints:order'], grantTypes: [GRANT_AUTHORIZATION_CODE] });
    const photos = await createClient(deps, { client_name: 'Photo API', grant_types: ['token-exchange'], token_exchange_audiences: [PRINTS] });
    const prints = await createClient(deps, { client_name: 'Print API', grant_types: ['token-exchange'], token_exchange_audiences: [PHOTOS] });
    const user = await server.addUser();
    const signedIn = await signInRaw(server, app, user, 'photos:read prints:order', { tokenParams: { resource: PHOTOS } });
    const exchange = (client: { client: { id: string }; secret: string | null }, token: string, audience: string) =>
      postForm(
        `${server.url}/oauth/token`,
        { grant_type: GRANT_TOKEN_EXCHANGE, subject_token: token, subject_token_type: TOKEN_TYPE_ACCESS_TOKEN, audience },
        { authorization: basic(client.client.id, client.secret!) },
      );
    const hop1 = await exchange(photos, signedIn['access_token'] as string, PRINTS);
    assert.equal(hop1.status, 200, JSON.stringify(hop1.body));
    const hop2 = await exchange(prints, hop1.body['access_token'] as string, PHOTOS);
    assert.deepEqual([hop2.status, hop2.body['error']], [400, 'invalid_request']);
    assert.match(String(hop2.body['error_description']), /2 actors: at most 1/);
  });
});
