/**
 * ID-JAGs without HTTP (draft-ietf-oauth-identity-assertion-authz-grant §4.3, §4.4): two
 * worlds, an identity provider and a resource's authorization server that trusts it by its
 * published keys. A person's ID token from the first is exchanged there for an ID-JAG, which
 * the second redeems with the jwt-bearer grant for the same person's access token to its API.
 * test/id-jag.test.ts does the same between two servers, through a sign-in and oauth4webapi.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import type { OAuthError } from '../../core/errors.ts';
import { ID_JAG_TYP, TOKEN_TYPE_ACCESS_TOKEN, TOKEN_TYPE_ID_JAG, TOKEN_TYPE_ID_TOKEN } from '../../core/protocol.ts';
import type { ClientRecord, UserRecord } from '../../store/types.ts';
import { FLOW_ISSUER, flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { approvedGrant } from '../../../test/store/fixtures.ts';
import { jwtBearerGrant } from '../jwt-bearer/token.ts';
import { addResource } from '../manage/resources.ts';
import { addTrustedIssuer } from '../manage/trusted-issuers.ts';
import { tokenExchangeGrant } from './token.ts';

const RAS = 'https://ras.example.com';
const TOOLS = 'https://tools.example.com';
const LOCAL_API = 'https://reports.example.com';

describe('ID-JAGs (draft-ietf-oauth-identity-assertion-authz-grant): issued for a person’s ID token, redeemed at the other server', () => {
  let idp: FlowWorld;
  let ras: FlowWorld;
  let agent: ClientRecord;
  let otherApp: ClientRecord;
  let agentThere: ClientRecord;
  let ada: UserRecord;
  let adaThere: UserRecord;

  before(async () => {
    [idp, ras] = await Promise.all([flowWorld(), flowWorld({ TESSERA_ISSUER: RAS })]);
    await addResource(idp.manage, { identifier: LOCAL_API, name: 'Reports', scopes: [{ name: 'reports:read', description: 'Read reports' }] });
    const code = { redirect_uris: ['https://agent.example/cb'], scope: 'openid email' };
    ({ client: agent } = await idp.addClient({
      client_name: 'Agent',
      grant_types: ['authorization_code', 'token-exchange'],
      token_exchange_audiences: [RAS, LOCAL_API],
      ...code,
    }));
    ({ client: otherApp } = await idp.addClient({ client_name: 'Other app', grant_types: ['authorization_code'], ...code }));
    ada = await idp.addUser({ username: 'ada', email: 'ada@corp.example', emailVerified: true });

    await addTrustedIssuer(ras.manage, { issuer: FLOW_ISSUER, jwks: await idp.keys.jwks() });
    await addResource(ras.manage, { identifier: TOOLS, name: 'Tools', scopes: [{ name: 'tools:read', description: 'Use the read-only tools' }] });
    ({ client: agentThere } = await ras.addClient({ client_id: agent.id, client_name: 'Agent', grant_types: ['jwt-bearer'], scope: 'tools:read' }));
    adaThere = await ras.addUser({ username: 'ada', email: 'ada@corp.example', emailVerified: true });
  });
  after(() => Promise.all([idp.close(), ras.close()]));

  /** The person signs in to `client` at the identity provider: the ID token it is given, and the access token. */
  async function signedIn(user = ada, client = agent): Promise<{ idToken: string; accessToken: string }> {
    const now = idp.clock.now();
    const grantId = randomUUID();
    await idp.store.grants.create(approvedGrant({ id: grantId, userId: user.id, clientId: client.id, scope: ['openid', 'email'] }, now));
    const issued = await idp.tokens.issue({ client, user, scope: ['openid', 'email'], grantId, authTime: now, nonce: 'n-1' });
    return { idToken: issued.id_token!, accessToken: issued.access_token };
  }

  const forIdJag = (subjectToken: string, params: Record<string, string> = {}) => ({
    requested_token_type: TOKEN_TYPE_ID_JAG,
    audience: RAS,
    resource: TOOLS,
    scope: 'tools:read',
    subject_token: subjectToken,
    subject_token_type: TOKEN_TYPE_ID_TOKEN,
    ...params,
  });
  const without = (params: Record<string, string>, name: string) => Object.fromEntries(Object.entries(params).filter(([key]) => key !== name));
  const exchange = (params: Record<string, string>, client = agent) => tokenExchangeGrant.handle(idp.deps, client, params, null);

  it('issues an ID-JAG naming the person, the other server, the agent and its API, which that server redeems for the same person there', async () => {
    const { idToken } = await signedIn();
    const response = await exchange(forIdJag(idToken));
    assert.equal(response.issued_token_type, TOKEN_TYPE_ID_JAG);
    assert.equal(response.token_type, 'N_A', 'RFC 8693 §2.2.1: not an access token');
    assert.equal(decodeProtectedHeader(response.access_token).typ, ID_JAG_TYP);
    const jag = decodeJwt(response.access_token);
    assert.equal(jag.iss, FLOW_ISSUER);
    assert.equal(jag.aud, RAS);
    assert.equal(jag.sub, ada.id);
    assert.equal(jag['client_id'], agent.id);
    assert.equal(jag['resource'], TOOLS);
    assert.equal(jag['email'], 'ada@corp.example');
    assert.ok(jag.exp! - jag.iat! <= 300, 'minutes long');

    const redeemed = await jwtBearerGrant.handle(ras.deps, agentThere, { assertion: response.access_token }, null);
    const token = decodeJwt(redeemed.access_token);
    assert.equal(token.sub, adaThere.id, 'the person with that verified e-mail address there');
    assert.equal(token.aud, TOOLS);
    assert.equal(redeemed.scope, 'tools:read');
  });

  it('refuses to exchange again, at the other server, a token redeemed from an ID-JAG, saying to ask the identity provider instead', async () => {
    const { idToken } = await signedIn();
    const jag = (await exchange(forIdJag(idToken))).access_token;
    const redeemed = (await jwtBearerGrant.handle(ras.deps, agentThere, { assertion: jag }, null)).access_token;
    const { client: toolsApi } = await ras.addClient({ client_name: 'Tools API', grant_types: ['token-exchange'], token_exchange_audiences: [TOOLS] });
    await assert.rejects(
      () => tokenExchangeGrant.handle(ras.deps, toolsApi, { subject_token: redeemed, subject_token_type: TOKEN_TYPE_ACCESS_TOKEN, resource: TOOLS }, null),
      (error: OAuthError) =>
        error.code === 'invalid_request' && /redeemed for an identity assertion \(ID-JAG\): ask its identity provider/.test(error.description),
    );
  });

  it('refuses what it will not issue an ID-JAG for, with the error RFC 8693 §2.2.2 names', async () => {
    const { idToken, accessToken } = await signedIn();
    const { idToken: othersIdToken } = await signedIn(ada, otherApp);
    const cases: [string, Record<string, string>, string][] = [
      ['no audience', without(forIdJag(idToken), 'audience'), 'invalid_request'],
      ['an audience not among the client’s', forIdJag(idToken, { audience: 'https://elsewhere.example.com' }), 'invalid_target'],
      ['an API of this server as audience', forIdJag(idToken, { audience: LOCAL_API }), 'invalid_target'],
      ['a malformed resource', forIdJag(idToken, { resource: 'tools' }), 'invalid_target'],
      ['an empty scope', forIdJag(idToken, { scope: ' ' }), 'invalid_scope'],
      ['an access token as subject', forIdJag(accessToken, { subject_token_type: TOKEN_TYPE_ACCESS_TOKEN }), 'invalid_request'],
      ['an access token said to be an ID token', forIdJag(accessToken), 'invalid_request'],
      ['an ID token issued to another client', forIdJag(othersIdToken), 'invalid_request'],
      ['an actor token', forIdJag(idToken, { actor_token: accessToken, actor_token_type: TOKEN_TYPE_ACCESS_TOKEN }), 'invalid_request'],
      ['no subject token', without(forIdJag(idToken), 'subject_token'), 'invalid_request'],
    ];
    for (const [what, params, expected] of cases) assert.equal(await outcome(() => exchange(params)), expected, what);
  });

  it('never outlives the ID token it came from, and refuses an expired one or a disabled person’s', async () => {
    const { idToken } = await signedIn();
    const idTokenExp = decodeJwt(idToken).exp!;
    idp.clock.set((idTokenExp - 20) * 1000);
    const late = decodeJwt((await exchange(forIdJag(idToken))).access_token);
    assert.equal(late.exp, idTokenExp);
    idp.clock.set((idTokenExp + 1) * 1000);
    assert.equal(await outcome(() => exchange(forIdJag(idToken))), 'invalid_request', 'an expired ID token');

    const grace = await idp.addUser({ username: 'grace', email: 'grace@corp.example', emailVerified: false });
    const graces = await signedIn(grace);
    const unverified = decodeJwt((await exchange(forIdJag(graces.idToken))).access_token);
    assert.equal(unverified['email'], undefined, 'an e-mail address not verified here is not asserted');
    await idp.store.users.setDisabled(grace.id, true);
    assert.equal(await outcome(() => exchange(forIdJag(graces.idToken))), 'invalid_request', 'a disabled person');
  });
});
