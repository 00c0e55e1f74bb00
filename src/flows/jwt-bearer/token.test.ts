/**
 * The jwt-bearer grant without HTTP (RFC 7523 §2.1, in the Identity Assertion JWT
 * Authorization Grant's profile): an identity provider the operator trusts, given by its keys
 * (`tessera trust add --jwks`), signs ID-JAGs here with a key of the test's; each redemption's
 * answer, its token's claims and what the store kept. test/id-jag.test.ts drives the same
 * grant between two servers, the ID-JAG made by the other's token exchange.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it, mock } from 'node:test';
import { decodeJwt, exportJWK, generateKeyPair, type JWK, type JWTPayload, SignJWT } from 'jose';
import type { OAuthError } from '../../core/errors.ts';
import { ID_JAG_TYP } from '../../core/protocol.ts';
import type { ClientRecord, UserRecord } from '../../store/types.ts';
import { FLOW_ISSUER, flowWorld, linkIdentity, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { addResource } from '../manage/resources.ts';
import { addTrustedIssuer, MAX_ISSUER_LENGTH } from '../manage/trusted-issuers.ts';
import { jwtBearerGrant } from './token.ts';

const IDP = 'https://idp.example.com';
const TOOLS = 'https://tools.example.com';
const ELSEWHERE = 'https://docs.example.com';

type Key = Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];

describe('the jwt-bearer grant for ID-JAGs (RFC 7523 §2.1, draft-ietf-oauth-identity-assertion-authz-grant §4.4)', () => {
  let world: FlowWorld;
  let agent: ClientRecord;
  let other: ClientRecord;
  let ada: UserRecord;
  let idpKey: Key;
  let strangerKey: Key;
  /** The identity provider's public key, as the operator trusted it. */
  let published: JWK;

  before(async () => {
    world = await flowWorld();
    const idp = await generateKeyPair('ES256');
    idpKey = idp.privateKey;
    published = { ...(await exportJWK(idp.publicKey)), kid: 'idp-1', alg: 'ES256', use: 'sig' };
    ({ privateKey: strangerKey } = await generateKeyPair('ES256'));
    await addTrustedIssuer(world.manage, { issuer: IDP, jwks: { keys: [published] } });
    await addResource(world.manage, {
      identifier: TOOLS,
      name: 'Tools',
      scopes: [
        { name: 'tools:read', description: 'Use the read-only tools' },
        { name: 'tools:write', description: 'Use the tools that change things' },
      ],
    });
    await addResource(world.manage, { identifier: ELSEWHERE, name: 'Docs', scopes: [{ name: 'docs:read', description: 'Read the docs' }] });
    ({ client: agent } = await world.addClient({ client_name: 'Agent', grant_types: ['jwt-bearer'], scope: 'tools:read tools:write' }));
    ({ client: other } = await world.addClient({ client_name: 'Other agent', grant_types: ['jwt-bearer'], scope: 'tools:read' }));
    ada = await world.addUser({ username: 'ada', email: 'ada@example.com', emailVerified: true });
  });
  after(() => world.close());

  /** An ID-JAG from the identity provider for the agent, as §4.3 has it, with `claims` changed. */
  function idJag(claims: JWTPayload = {}, { key = idpKey, typ = ID_JAG_TYP } = {}): Promise<string> {
    const now = Math.floor(world.clock.now() / 1000);
    const payload: JWTPayload = {
      iss: IDP,
      sub: 'idp-user-ada',
      aud: FLOW_ISSUER,
      client_id: agent.id,
      jti: randomUUID(),
      iat: now,
      exp: now + 300,
      resource: TOOLS,
      scope: 'tools:read',
      email: 'ada@example.com',
      email_verified: true,
      ...claims,
    };
    const defined = Object.fromEntries(Object.entries(payload).filter(([, value]) => value !== undefined));
    return new SignJWT(defined).setProtectedHeader({ alg: 'ES256', kid: 'idp-1', typ }).sign(key);
  }

  const redeem = (assertion: string | undefined, params: Record<string, string> = {}, client = agent) =>
    jwtBearerGrant.handle(world.deps, client, assertion === undefined ? params : { assertion, ...params }, null);

  it('issues a token for the API the ID-JAG names, for the person with its verified e-mail address, with no refresh token', async () => {
    const response = await redeem(await idJag());
    assert.equal(response.token_type, 'Bearer');
    assert.equal(response.scope, 'tools:read');
    assert.equal(response.refresh_token, undefined, 'the agent asks the identity provider for a fresh ID-JAG instead');
    const claims = decodeJwt(response.access_token);
    assert.equal(claims.sub, ada.id);
    assert.equal(claims.aud, TOOLS);
    assert.equal(claims['client_id'], agent.id);
    const [event] = await world.store.events.list({ limit: 1 });
    assert.equal(event?.type, 'token.exchanged');
    assert.equal(event?.detail['issuer'], IDP);
  });

  it('redeems an ID-JAG once (RFC 7523 §3 item 7), even when two requests carry it at once', async () => {
    const assertion = await idJag();
    const results = await Promise.all([outcome(() => redeem(assertion)), outcome(() => redeem(assertion))]);
    assert.deepEqual(results.sort(), ['invalid_grant', 'ok']);
    assert.equal(await outcome(() => redeem(assertion)), 'invalid_grant', 'and again later');
  });

  it('refuses an ID-JAG it cannot take with invalid_grant (RFC 6749 §5.2)', async () => {
    const now = Math.floor(world.clock.now() / 1000);
    const cases: [string, Promise<string>][] = [
      ['not a JWT', Promise.resolve('not-a-jwt')],
      ['another typ', idJag({}, { typ: 'JWT' })],
      ['an issuer not trusted', idJag({ iss: 'https://other-idp.example.com' })],
      ['signed by a key not the issuer’s', idJag({}, { key: strangerKey })],
      ['for another authorization server', idJag({ aud: 'https://other-as.example.com' })],
      ['expired', idJag({ iat: now - 400, exp: now - 100 })],
      ['issued for longer than five minutes', idJag({ exp: now + 3600 })],
      ['without a jti', idJag({ jti: undefined })],
      ['for another client', idJag({ client_id: other.id })],
      ['for nobody here: an e-mail address no one has', idJag({ email: 'nobody@example.com' })],
      ['an e-mail address the identity provider did not verify', idJag({ email_verified: false })],
      ['a malformed scope', idJag({ scope: 42 })],
    ];
    for (const [what, assertion] of cases) assert.equal(await outcome(async () => redeem(await assertion)), 'invalid_grant', what);
    assert.equal(await outcome(() => redeem(undefined)), 'invalid_request', 'no assertion');
    // Said before any key is looked for: another kind of JWT is not mistaken for a bad ID-JAG.
    const plain = await idJag({}, { typ: 'JWT' });
    await assert.rejects(
      () => redeem(plain),
      (error: OAuthError) => error.code === 'invalid_grant' && /is not an ID-JAG/.test(error.description),
    );
  });

  it('gives the token to the API the ID-JAG names only (invalid_target otherwise)', async () => {
    const cases: [string, Promise<string>, Record<string, string>, string][] = [
      ['the same resource repeated in the request', idJag(), { resource: TOOLS }, 'ok'],
      ['another resource in the request', idJag(), { resource: ELSEWHERE }, 'invalid_target'],
      ['the resource in the request only', idJag({ resource: undefined }), { resource: TOOLS }, 'ok'],
      ['no resource anywhere', idJag({ resource: undefined }), {}, 'invalid_target'],
      ['an API not registered here', idJag({ resource: 'https://unknown.example.com' }), {}, 'invalid_target'],
    ];
    for (const [what, assertion, params, expected] of cases) assert.equal(await outcome(async () => redeem(await assertion, params)), expected, what);
  });

  it('gives the scopes the ID-JAG, the client and the API have in common, narrowed by a scope asked for (invalid_scope beyond)', async () => {
    // What each is answered: the token's scope, or the error.
    const cases: [string, JWTPayload, Record<string, string>, ClientRecord, string][] = [
      ['no scope in the ID-JAG: all the API’s the client has', { scope: undefined }, {}, agent, 'tools:read tools:write'],
      ['narrowed in the request', { scope: 'tools:read tools:write' }, { scope: 'tools:write' }, agent, 'tools:write'],
      ['wider than the ID-JAG', { scope: 'tools:read' }, { scope: 'tools:read tools:write' }, agent, 'invalid_scope'],
      ['wider than the client’s registration', { scope: 'tools:read tools:write', client_id: other.id }, { scope: 'tools:write' }, other, 'invalid_scope'],
      ['another API’s scope', { scope: 'tools:read docs:read' }, { scope: 'docs:read' }, agent, 'invalid_scope'],
      ['no scope in common', { scope: 'docs:read' }, {}, agent, 'invalid_scope'],
    ];
    for (const [what, claims, params, client, expected] of cases) {
      const assertion = await idJag(claims);
      let scope: string | undefined;
      const result = await outcome(async () => {
        scope = (await redeem(assertion, params, client)).scope;
      });
      assert.equal(result === 'ok' ? scope : result, expected, what);
    }
  });

  it('refuses an ID-JAG whose unverified iss could name no trusted issuer before looking for it (invalid_grant)', async () => {
    // The lookup is not made: a NUL character failed it on PostgreSQL, whose text holds none, as a 500.
    const lookups = mock.method(world.store.trustedIssuers, 'get');
    try {
      const cases: [string, string | undefined][] = [
        ['a NUL character', 'https://a\u0000b'],
        ['longer than any trusted issuer may be', `${IDP}/${'a'.repeat(MAX_ISSUER_LENGTH)}`],
        ['empty', ''],
        ['none', undefined],
      ];
      for (const [what, iss] of cases) {
        await assert.rejects(
          async () => redeem(await idJag({ iss })),
          (error: OAuthError) => error.code === 'invalid_grant' && /iss must be an issuer identifier/.test(error.description),
          what,
        );
      }
      assert.equal(lookups.mock.callCount(), 0);
    } finally {
      lookups.mock.restore();
    }
  });

  it('refuses an ID-JAG issued for longer than five minutes, by one second (invalid_grant)', async () => {
    const now = Math.floor(world.clock.now() / 1000);
    assert.equal(await outcome(async () => redeem(await idJag({ exp: now + 300 }))), 'ok', 'five minutes');
    await assert.rejects(
      async () => redeem(await idJag({ exp: now + 301 })),
      (error: OAuthError) => error.code === 'invalid_grant' && /issued for 301 seconds: at most 300/.test(error.description),
    );
  });

  it('finds nobody by an e-mail address whose owner here has not verified it, though the identity provider did', async () => {
    await world.addUser({ username: 'lin', email: 'lin@example.com', emailVerified: false });
    await assert.rejects(
      async () => redeem(await idJag({ sub: 'idp-user-lin', email: 'lin@example.com' })),
      (error: OAuthError) => error.code === 'invalid_grant' && /nobody here is idp-user-lin/.test(error.description),
    );
  });

  it("finds nobody by an upstream identity of another issuer, though its subject is the ID-JAG's", async () => {
    const linked = await world.addUser({ username: 'mae', email: null });
    await linkIdentity(world, linked.id, 'idp-user-mae');
    // The same subject at another issuer is another person: the trusted identity provider cannot speak for Elsewhere's.
    await assert.rejects(
      async () => redeem(await idJag({ sub: 'idp-user-mae', email: undefined, email_verified: undefined })),
      (error: OAuthError) => error.code === 'invalid_grant' && /nobody here is idp-user-mae/.test(error.description),
    );
  });

  it('refuses the ID-JAG of a person disabled here, and of an issuer no longer trusted', async () => {
    const grace = await world.addUser({ username: 'grace', email: 'grace@example.com', emailVerified: true });
    await world.store.users.setDisabled(grace.id, true);
    assert.equal(await outcome(async () => redeem(await idJag({ sub: 'idp-user-grace', email: 'grace@example.com' }))), 'invalid_grant', 'disabled');
    const assertion = await idJag();
    await world.store.trustedIssuers.remove(IDP);
    try {
      assert.equal(await outcome(() => redeem(assertion)), 'invalid_grant', 'no longer trusted');
    } finally {
      await addTrustedIssuer(world.manage, { issuer: IDP, jwks: { keys: [published] } });
    }
  });
});
