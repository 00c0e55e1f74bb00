/**
 * Identity Assertion JWT Authorization Grants (draft-ietf-oauth-identity-assertion-authz-grant)
 * between two Tessera servers: one the enterprise identity provider, where the person signs in
 * to an agent and the agent exchanges their ID token for an ID-JAG (openid-client's
 * genericGrantRequest); the other the authorization server of an MCP server's API, which
 * trusts the first (`tessera trust add`) and redeems the ID-JAG with the jwt-bearer grant
 * (oauth4webapi) for an access token acting for the same person there. Every refusal is a
 * clear OAuth error with nothing issued, and a `token.exchange_refused` event.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createRemoteJWKSet, decodeJwt, decodeProtectedHeader, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import * as oauth from 'oauth4webapi';
import * as oidc from 'openid-client';
import { GRANT_JWT_BEARER, GRANT_TOKEN_EXCHANGE, ID_JAG_PROFILE, ID_JAG_TYP, TOKEN_TYPE_ID_JAG, TOKEN_TYPE_ID_TOKEN } from '../src/core/protocol.ts';
import { createClient } from '../src/flows/manage/clients.ts';
import { addResource } from '../src/flows/manage/resources.ts';
import { removeTrustedIssuer } from '../src/flows/manage/trusted-issuers.ts';
import { setDisabled } from '../src/flows/manage/users.ts';
import { FormBrowser } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { insecure } from './helpers/dpop.ts';
import { manageDeps } from './helpers/manage.ts';
import { basic, closeAll, postForm, REDIRECT_URI, startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';

const MCP = 'https://mcp.example.com/mcp';
/** The agent's client_id at both servers: the ID-JAG names it, and the resource's server checks it. */
const AGENT = 'agent-7';

describe('ID-JAG between two Tessera servers', () => {
  let idp: TestServer;
  let ras: TestServer;
  /** The agent at the identity provider: signs people in, exchanges their ID tokens for ID-JAGs. */
  let agentAtIdp: TestClient;
  /** The same agent at the resource's server: redeems ID-JAGs (same client_id, its own secret). */
  let agentAtRas: TestClient;
  let person: TestUser;
  let personThere: TestUser;
  let rasMetadata: oauth.AuthorizationServer;

  before(async () => {
    [idp, ras] = await Promise.all([startTestServer(), startTestServer()]);
    // The resource's server: the MCP server's API, the identity provider trusted, the agent.
    await addResource(manageDeps(ras), {
      identifier: MCP,
      name: 'MCP tools',
      scopes: [
        { name: 'tools:read', description: 'Use read-only tools' },
        { name: 'tools:write', description: 'Use tools that change things' },
      ],
    });
    const trusted = await runTessera(['trust', 'add', '--issuer', idp.config.issuer, '--jwks-uri', `${idp.url}/.well-known/jwks.json`], {
      TESSERA_DATABASE: ras.config.database,
    });
    assert.equal(trusted.code, 0, trusted.stderr);
    const there = await createClient(manageDeps(ras), { client_id: AGENT, client_name: 'Agent', grant_types: ['jwt-bearer'], scope: 'tools:read tools:write' });
    agentAtRas = { clientId: there.client.id, clientSecret: there.secret! };
    // The identity provider: the agent signs people in and may ask for ID-JAGs for the resource's server.
    const here = await createClient(manageDeps(idp), {
      client_id: AGENT,
      client_name: 'Agent',
      grant_types: ['authorization_code', 'token-exchange'],
      redirect_uris: [REDIRECT_URI],
      scope: 'openid email',
      token_exchange_audiences: [ras.config.issuer],
    });
    agentAtIdp = { clientId: here.client.id, clientSecret: here.secret! };
    // The same person at both, found at the resource's server by their verified e-mail address.
    person = await idp.addUser({ email: 'ada@corp.example', profile: { emailVerified: true } });
    personThere = await ras.addUser({ email: 'ada@corp.example', profile: { emailVerified: true } });
    const issuer = new URL(ras.url);
    rasMetadata = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure));
  });
  after(() => closeAll(idp, ras));

  /** The person signs in to the agent at the identity provider: their ID token. */
  async function idToken(who: TestUser = person, client: TestClient = agentAtIdp): Promise<string> {
    const verifier = oauth.generateRandomCodeVerifier();
    const url = new URL(`${idp.url}/oauth/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: client.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'openid email',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const page = await new FormBrowser(idp.url).authorize(url.href, who);
    const code = new URL(page.location ?? 'http://invalid/').searchParams.get('code');
    assert.ok(code, `a code: ${page.status} ${page.location}`);
    const result = await postForm(
      `${idp.url}/oauth/token`,
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
      { authorization: basic(client.clientId, client.clientSecret) },
    );
    assert.equal(result.status, 200, JSON.stringify(result.body));
    return result.body['id_token'] as string;
  }

  /** openid-client against the identity provider, as the agent. */
  const idpConfig = (client: TestClient = agentAtIdp) =>
    oidc.discovery(new URL(idp.url), client.clientId, client.clientSecret, undefined, { execute: [oidc.allowInsecureRequests] });

  /** The agent's token exchange at the identity provider for an ID-JAG (openid-client genericGrantRequest). */
  async function idJag(subjectToken: string, extra: Record<string, string> = {}) {
    return oidc.genericGrantRequest(await idpConfig(), GRANT_TOKEN_EXCHANGE, {
      requested_token_type: TOKEN_TYPE_ID_JAG,
      subject_token: subjectToken,
      subject_token_type: TOKEN_TYPE_ID_TOKEN,
      audience: ras.config.issuer,
      resource: MCP,
      scope: 'tools:read',
      ...extra,
    });
  }

  /** The agent redeems an ID-JAG at the resource's server (oauth4webapi, the jwt-bearer grant). */
  async function redeem(assertion: string, client: TestClient = agentAtRas, extra: Record<string, string> = {}) {
    const response = await oauth.genericTokenEndpointRequest(
      rasMetadata,
      { client_id: client.clientId },
      oauth.ClientSecretBasic(client.clientSecret),
      GRANT_JWT_BEARER,
      { assertion, ...extra },
      insecure,
    );
    return oauth.processGenericTokenEndpointResponse(rasMetadata, { client_id: client.clientId }, response);
  }

  /** The OAuth error `attempt` is refused with. */
  async function refusal(attempt: () => Promise<unknown>): Promise<{ error: string; description: string }> {
    try {
      await attempt();
    } catch (error) {
      if (error instanceof oauth.ResponseBodyError) return { error: error.error, description: error.error_description ?? '' };
      throw error;
    }
    assert.fail('it was not refused');
  }

  /** An ID-JAG signed with the identity provider's own key, with `changes` to what a real one says. */
  async function forged(changes: Record<string, unknown>, header: Record<string, unknown> = {}) {
    const key = await idp.keys.signingKey('RS256');
    const now = Math.floor(Date.now() / 1000);
    const claims = {
      iss: idp.config.issuer,
      sub: person.id,
      aud: ras.config.issuer,
      client_id: AGENT,
      jti: crypto.randomUUID(),
      iat: now,
      exp: now + 120,
      resource: MCP,
      scope: 'tools:read',
      email: 'ada@corp.example',
      email_verified: true,
      ...changes,
    };
    return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: ID_JAG_TYP, ...header }).sign(key.privateKey);
  }

  const rasToken = (token: string) =>
    jwtVerify(token, createRemoteJWKSet(new URL(`${ras.url}/.well-known/jwks.json`)), { issuer: ras.config.issuer, audience: MCP, typ: 'at+jwt' });
  const introspect = async (token: string) =>
    (await postForm(`${ras.url}/oauth/introspect`, { token }, { authorization: basic(agentAtRas.clientId, agentAtRas.clientSecret) })).body;
  const refusedEvents = async (server: TestServer) =>
    (await server.store.events.list({ limit: 100 })).filter((event) => event.type === 'token.exchange_refused');

  it("lists the jwt-bearer grant and the ID-JAG profile in the resource server's discovery", () => {
    assert.ok(rasMetadata.grant_types_supported?.includes(GRANT_JWT_BEARER));
    assert.deepEqual(rasMetadata['authorization_grant_profiles_supported'], [ID_JAG_PROFILE]);
  });

  it("issues an ID-JAG for the person's ID token: typ oauth-id-jag+jwt, iss, sub, aud, client_id, jti, exp within 5 minutes, resource, scope; issued_token_type id-jag, token_type N_A", async () => {
    const result = await idJag(await idToken());
    assert.equal(result['issued_token_type'], TOKEN_TYPE_ID_JAG);
    assert.equal(result.token_type, 'n_a');
    assert.equal(result.refresh_token, undefined);
    assert.ok(result.expires_in! > 0 && result.expires_in! <= 300);
    const { payload, protectedHeader } = await jwtVerify(result.access_token, createRemoteJWKSet(new URL(`${idp.url}/.well-known/jwks.json`)), {
      issuer: idp.config.issuer,
      audience: ras.config.issuer,
      typ: ID_JAG_TYP,
    });
    assert.equal(protectedHeader.typ, ID_JAG_TYP);
    assert.deepEqual([payload.sub, payload['client_id'], payload['resource'], payload['scope']], [person.id, AGENT, MCP, 'tools:read']);
    assert.equal(typeof payload.jti, 'string');
    assert.ok(payload.exp! - payload.iat! <= 300, 'five minutes at most');
  });

  it("redeems the ID-JAG at the resource's server for a token for the MCP API acting for the same person there, once", async () => {
    const jag = (await idJag(await idToken())).access_token;
    const result = await redeem(jag);
    assert.equal(result.token_type, 'bearer');
    assert.equal(result.scope, 'tools:read');
    assert.equal(result.refresh_token, undefined);
    const { payload } = await rasToken(result.access_token);
    assert.deepEqual([payload.sub, payload['client_id'], payload.aud, payload['scope']], [personThere.id, AGENT, MCP, 'tools:read']);
    const seen = await introspect(result.access_token);
    assert.deepEqual([seen['active'], seen['sub'], seen['client_id']], [true, personThere.id, AGENT]);
    // The jti once (RFC 7523 §3): the same ID-JAG again is refused, nothing issued.
    const replayed = await refusal(() => redeem(jag));
    assert.equal(replayed.error, 'invalid_grant');
    assert.match(replayed.description, /used already/);
    const exchanged = (await ras.store.events.list({ limit: 50 })).find((event) => event.type === 'token.exchanged');
    assert.deepEqual([exchanged?.userId, exchanged?.clientId, exchanged?.detail['issuer']], [personThere.id, AGENT, idp.config.issuer]);
  });

  it('narrows the scope to what the ID-JAG, the client and the API have in common; a wider request scope is invalid_scope', async () => {
    const both = (await idJag(await idToken(), { scope: 'tools:read tools:write unknown:scope' })).access_token;
    assert.equal((await redeem(both)).scope, 'tools:read tools:write');
    const narrow = (await idJag(await idToken())).access_token;
    assert.equal((await refusal(() => redeem(narrow, agentAtRas, { scope: 'tools:write' }))).error, 'invalid_scope');
    const asked = (await idJag(await idToken())).access_token;
    assert.equal((await redeem(asked, agentAtRas, { scope: 'tools:read' })).scope, 'tools:read');
  });

  it('finds the person by an upstream identity of that issuer linked to them before their e-mail address', async () => {
    const linked = await ras.addUser({ email: null });
    const now = Date.now();
    await ras.store.identityProviders.create({
      id: 'corp',
      kind: 'oidc',
      name: 'Corp',
      position: 0,
      settings: { issuer: idp.config.issuer, clientId: 'tessera', scopes: ['openid'] },
      secret: null,
      createdAt: now,
      updatedAt: now,
    });
    const someone = await idp.addUser({ email: null });
    await ras.store.linkedIdentities.create({
      providerId: 'corp',
      subject: someone.id,
      userId: linked.id,
      label: null,
      groups: [],
      createdAt: now,
      lastUsedAt: null,
    });
    const result = await redeem((await idJag(await idToken(someone))).access_token);
    assert.equal(decodeJwt(result.access_token).sub, linked.id);
    // Nobody there: no link, no e-mail address.
    const stranger = await idp.addUser({ email: null });
    const refused = await refusal(async () => redeem((await idJag(await idToken(stranger))).access_token));
    assert.equal(refused.error, 'invalid_grant');
    assert.match(refused.description, /nobody here/);
  });

  it('refuses ID-JAGs of another issuer, typ, audience or client, with a bad signature, issued for too long or expired: invalid_grant, nothing issued, each an event', async () => {
    const stranger = await generateKeyPair('RS256');
    const key = await idp.keys.signingKey('RS256');
    const now = Math.floor(Date.now() / 1000);
    const before = (await refusedEvents(ras)).length;
    const cases: Record<string, string> = {
      'another issuer': await forged({ iss: 'https://untrusted.example' }),
      'typ JWT': await forged({}, { typ: 'JWT' }),
      'an access token typ': await forged({}, { typ: 'at+jwt' }),
      'another audience': await forged({ aud: 'https://other-as.example' }),
      'another client': await forged({ client_id: 'someone-else' }),
      'a bad signature': await new SignJWT({ ...decodeJwt(await forged({})) })
        .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: ID_JAG_TYP })
        .sign(stranger.privateKey),
      'issued for an hour': await forged({ exp: now + 3600 }),
      expired: await forged({ iat: now - 200, exp: now - 100 }),
      'no jti': await forged({ jti: undefined }),
      'not a JWT': 'not-a-jwt',
    };
    for (const [name, assertion] of Object.entries(cases)) {
      const refused = await refusal(() => redeem(assertion));
      assert.equal(refused.error, 'invalid_grant', `${name}: ${refused.description}`);
    }
    assert.equal((await refusedEvents(ras)).length - before, Object.keys(cases).length, 'a token.exchange_refused event each');
    // A forged ID-JAG signed with the identity provider's real key is accepted: the checks above are what refused the others.
    assert.equal((await redeem(await forged({}))).scope, 'tools:read');
  });

  it("refuses an API not registered at the resource's server with invalid_target, and a client not registered for the grant with unauthorized_client", async () => {
    assert.equal((await refusal(async () => redeem(await forged({ resource: 'https://unknown.example/api' })))).error, 'invalid_target');
    const other = await createClient(manageDeps(ras), {
      client_id: 'no-grant',
      client_name: 'No grant',
      grant_types: ['client_credentials'],
      scope: 'tools:read',
    });
    assert.equal(
      (await refusal(async () => redeem(await forged({ client_id: 'no-grant' }), { clientId: other.client.id, clientSecret: other.secret! }))).error,
      'unauthorized_client',
    );
  });

  it("refuses at the identity provider: another server's issuer not in the client's list, an access token as subject, another client's ID token, a disabled person", async () => {
    const token = await idToken();
    assert.equal((await refusal(() => idJag(token, { audience: 'https://elsewhere.example' }))).error, 'invalid_target');
    assert.equal((await refusal(() => idJag(token, { subject_token_type: 'urn:ietf:params:oauth:token-type:access_token' }))).error, 'invalid_request');
    assert.equal((await refusal(() => idJag('not-a-token'))).error, 'invalid_request');
    const otherApp = await createClient(manageDeps(idp), { client_name: 'Other app', redirect_uris: [REDIRECT_URI], scope: 'openid email' });
    const othersToken = await idToken(person, { clientId: otherApp.client.id, clientSecret: otherApp.secret! });
    assert.match((await refusal(() => idJag(othersToken))).description, /another client/);
    const leaver = await idp.addUser();
    const leaversToken = await idToken(leaver);
    await setDisabled(manageDeps(idp), leaver.username, true);
    assert.equal((await refusal(() => idJag(leaversToken))).error, 'invalid_request');
    const events = await refusedEvents(idp);
    assert.ok(events.length >= 5, 'each refusal an event');
    assert.ok(events.every((event) => event.clientId !== null));
  });

  it("ends the tokens issued from an issuer's ID-JAGs when it is no longer trusted, or the person is disabled there", async () => {
    const first = (await redeem((await idJag(await idToken())).access_token)).access_token;
    assert.equal((await introspect(first))['active'], true);
    await setDisabled(manageDeps(ras), personThere.username, true);
    assert.equal((await introspect(first))['active'], false, 'the person disabled there');
    await setDisabled(manageDeps(ras), personThere.username, false);
    assert.equal((await introspect(first))['active'], true);
    const jag = (await idJag(await idToken())).access_token;
    await removeTrustedIssuer(manageDeps(ras), idp.config.issuer);
    assert.equal((await introspect(first))['active'], false, 'the issuer no longer trusted');
    assert.match((await refusal(() => redeem(jag))).description, /not one this server trusts/);
    assert.equal(decodeProtectedHeader(jag).typ, ID_JAG_TYP);
  });
});

describe('TESSERA_ID_JAG_LIFETIME', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer({ env: { TESSERA_ID_JAG_LIFETIME: '60' } });
  });
  after(() => server.close());

  it('issues ID-JAGs for that long, and refuses to redeem one issued for longer', async () => {
    const audience = 'https://as.example.com';
    const made = await createClient(manageDeps(server), {
      client_name: 'Agent',
      grant_types: ['authorization_code', 'token-exchange', 'jwt-bearer'],
      redirect_uris: [REDIRECT_URI],
      scope: 'openid',
      token_exchange_audiences: [audience],
    });
    const user = await server.addUser();
    const verifier = oauth.generateRandomCodeVerifier();
    const url = new URL(`${server.url}/oauth/authorize`);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: made.client.id,
      redirect_uri: REDIRECT_URI,
      scope: 'openid',
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const page = await new FormBrowser(server.url).authorize(url.href, user);
    const code = new URL(page.location!).searchParams.get('code')!;
    const auth = { authorization: basic(made.client.id, made.secret!) };
    const signedIn = await postForm(
      `${server.url}/oauth/token`,
      { grant_type: 'authorization_code', code, redirect_uri: REDIRECT_URI, code_verifier: verifier },
      auth,
    );
    const jag = await postForm(
      `${server.url}/oauth/token`,
      {
        grant_type: GRANT_TOKEN_EXCHANGE,
        requested_token_type: TOKEN_TYPE_ID_JAG,
        subject_token: signedIn.body['id_token'] as string,
        subject_token_type: TOKEN_TYPE_ID_TOKEN,
        audience,
      },
      auth,
    );
    assert.equal(jag.status, 200, JSON.stringify(jag.body));
    const claims = decodeJwt(jag.body['access_token'] as string);
    assert.equal(claims.exp! - claims.iat!, 60);
    // As a resource's server: a trusted issuer's ID-JAG issued for two minutes is refused.
    const other = await generateKeyPair('RS256');
    const idpIssuer = 'https://idp.lifetime.example';
    await server.store.trustedIssuers.create({
      issuer: idpIssuer,
      jwksUri: null,
      jwks: { keys: [{ ...(await exportJWK(other.publicKey)), kid: 'k' }] },
      addedByOwner: true,
      createdAt: Date.now() - 1000,
    });
    const now = Math.floor(Date.now() / 1000);
    const sign = (lifetime: number) =>
      new SignJWT({ iss: idpIssuer, sub: 's', aud: server.config.issuer, client_id: made.client.id, jti: crypto.randomUUID(), iat: now, exp: now + lifetime })
        .setProtectedHeader({ alg: 'RS256', kid: 'k', typ: ID_JAG_TYP })
        .sign(other.privateKey);
    const long = await postForm(`${server.url}/oauth/token`, { grant_type: GRANT_JWT_BEARER, assertion: await sign(120) }, auth);
    assert.deepEqual([long.status, long.body['error']], [400, 'invalid_grant']);
    assert.match(String(long.body['error_description']), /issued for 120 seconds: at most 60/);
  });
});
