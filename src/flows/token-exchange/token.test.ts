/**
 * The token-exchange grant without HTTP (RFC 8693): APIs, clients and a person's approval
 * written through the same operations the command uses, a subject token issued by the token
 * issuer, then each exchange's answer, its token's claims and the events it left.
 * test/token-exchange.test.ts drives the same rules through oauth4webapi and a sign-in.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import type { OAuthError } from '../../core/errors.ts';
import { TOKEN_TYPE_ACCESS_TOKEN, TOKEN_TYPE_ID_TOKEN } from '../../core/protocol.ts';
import type { ClientRecord, UserRecord } from '../../store/types.ts';
import { flowWorld, outcome } from '../../../test/helpers/flows.ts';
import { approvedGrant } from '../../../test/store/fixtures.ts';
import { clientCredentialsGrant } from '../client-credentials/token.ts';
import { addResource } from '../manage/resources.ts';
import { tokenTarget } from '../resources.ts';
import { tokenExchangeGrant } from './token.ts';

const PHOTOS = 'https://photos.example.com';
const PRINTS = 'https://prints.example.com';
const LEDGER = 'https://ledger.example.com';
const MAPS = 'https://maps.example.com';

/** A world with three APIs, a person's app, and the two APIs' own clients that exchange tokens. */
async function apis(env: Record<string, string> = {}) {
  const world = await flowWorld(env);
  await addResource(world.manage, { identifier: PHOTOS, name: 'Photos', scopes: [{ name: 'photos:read', description: 'See your photos' }] });
  await addResource(world.manage, {
    identifier: PRINTS,
    name: 'Prints',
    scopes: [
      { name: 'prints:order', description: 'Order prints' },
      { name: 'prints:status', description: 'See your orders' },
    ],
  });
  await addResource(world.manage, { identifier: LEDGER, name: 'Ledger', scopes: [{ name: 'ledger:read', description: 'See the ledger' }] });
  const { client: app } = await world.addClient({
    client_name: 'Photo app',
    redirect_uris: ['https://app.example/cb'],
    grant_types: ['authorization_code'],
    scope: 'openid photos:read prints:order prints:status ledger:read',
  });
  const { client: photos } = await world.addClient({
    client_name: 'Photo API',
    grant_types: ['token-exchange', 'client_credentials'],
    token_exchange_audiences: [PRINTS],
    scope: 'prints:status',
  });
  const { client: prints } = await world.addClient({ client_name: 'Print API', grant_types: ['token-exchange'], token_exchange_audiences: [PHOTOS] });
  const ada = await world.addUser({ username: 'ada' });
  /**
   * The person approves `scope` for the app; the app's access token for `resource` (holding
   * `requested` of it when given, all it may otherwise), and the grant.
   */
  const personToken = async (scope = ['openid', 'photos:read', 'prints:order'], resource = PHOTOS, user: UserRecord = ada, requested?: readonly string[]) => {
    const now = world.clock.now();
    const grantId = randomUUID();
    await world.store.grants.create(approvedGrant({ id: grantId, userId: user.id, clientId: app.id, scope }, now));
    const target = await tokenTarget(world.store, { scope, createdAt: now }, resource, requested);
    const issued = await world.tokens.issue({ client: app, user, ...target, grantId, authTime: now });
    return { token: issued.access_token, grantId };
  };
  const exchange = (client: ClientRecord, params: Record<string, string>) => tokenExchangeGrant.handle(world.deps, client, params, null);
  return { world, app, photos, prints, ada, personToken, exchange };
}

const subject = (token: string) => ({ subject_token: token, subject_token_type: TOKEN_TYPE_ACCESS_TOKEN });

describe('the token-exchange grant (RFC 8693)', () => {
  let w: Awaited<ReturnType<typeof apis>>;
  before(async () => {
    w = await apis();
  });
  after(() => w.world.close());

  it('issues a token for the API asked for, acting for the person: sub the person, client_id and act the exchanging API (§4.1)', async () => {
    const { token } = await w.personToken();
    const response = await w.exchange(w.photos, { ...subject(token), resource: PRINTS });
    assert.equal(response.issued_token_type, TOKEN_TYPE_ACCESS_TOKEN);
    assert.equal(response.token_type, 'Bearer');
    assert.equal(response.scope, 'prints:order', 'the print scopes the person approved, and no more');
    const claims = decodeJwt(response.access_token);
    assert.equal(claims.sub, w.ada.id);
    assert.equal(claims.aud, PRINTS);
    assert.equal(claims['client_id'], w.photos.id);
    assert.deepEqual(claims['act'], { sub: w.photos.id });
    assert.ok(claims.exp! <= decodeJwt(token).exp!, 'never outlives the subject token');
    const events = await w.world.store.events.list({ limit: 5 });
    const exchanged = events.find((event) => event.type === 'token.exchanged');
    assert.equal(exchanged?.userId, w.ada.id);
    assert.equal(exchanged?.detail['subject_client'], w.app.id);
  });

  it("takes the one exchange audience when none is named, and `audience` as `resource`'s equal", async () => {
    const { token } = await w.personToken();
    assert.equal(decodeJwt((await w.exchange(w.photos, subject(token))).access_token).aud, PRINTS);
    assert.equal(decodeJwt((await w.exchange(w.photos, { ...subject(token), audience: PRINTS })).access_token).aud, PRINTS);
    assert.equal(decodeJwt((await w.exchange(w.photos, { ...subject(token), audience: PRINTS, resource: PRINTS })).access_token).aud, PRINTS);
  });

  it('narrows the scope, never widens it (§2.1 scope)', async () => {
    const { token } = await w.personToken(['openid', 'photos:read', 'prints:order', 'prints:status']);
    const cases: [string, string, string][] = [
      ['one of the approved print scopes', 'prints:status', 'ok'],
      ['both approved print scopes', 'prints:order prints:status', 'ok'],
      ['another API’s scope, though approved', 'photos:read', 'invalid_scope'],
      ['an OpenID scope', 'openid prints:order', 'invalid_scope'],
      ['an empty scope', ' ', 'invalid_scope'],
    ];
    for (const [what, scope, expected] of cases) {
      assert.equal(await outcome(() => w.exchange(w.photos, { ...subject(token), resource: PRINTS, scope })), expected, what);
    }
    // Refused as an OpenID scope, not only as one the token does not carry: the answer says why.
    await assert.rejects(
      () => w.exchange(w.photos, { ...subject(token), resource: PRINTS, scope: 'openid' }),
      (error: OAuthError) => error.code === 'invalid_scope' && /OpenID scopes are for this server's own/.test(error.description),
    );
    const narrow = await w.personToken(['openid', 'photos:read']);
    assert.equal(await outcome(() => w.exchange(w.photos, { ...subject(narrow.token), resource: PRINTS })), 'invalid_scope', 'no print scope approved at all');
    assert.equal(
      await outcome(() => w.exchange(w.photos, { ...subject(narrow.token), resource: PRINTS, scope: 'prints:order' })),
      'invalid_scope',
      'a print scope the person never approved',
    );
  });

  it('for the subject token’s own API, passes on no more than that token carries, though the person approved more', async () => {
    // The app asked for a print token holding prints:status alone.
    const { token } = await w.personToken(['openid', 'prints:order', 'prints:status'], PRINTS, w.ada, ['prints:status']);
    assert.equal((await w.exchange(w.photos, { ...subject(token), resource: PRINTS })).scope, 'prints:status');
    assert.equal(await outcome(() => w.exchange(w.photos, { ...subject(token), resource: PRINTS, scope: 'prints:order' })), 'invalid_scope');
  });

  it('passes on no scope of an API registered after the person’s approval: they never approved it', async () => {
    // Approved when no API had maps:view (one removed since, say); an API registered later takes that name.
    const { token } = await w.personToken(['openid', 'photos:read', 'maps:view']);
    w.world.clock.advance(1000);
    await addResource(w.world.manage, { identifier: MAPS, name: 'Maps', scopes: [{ name: 'maps:view', description: 'See your maps' }] });
    const { client: mapper } = await w.world.addClient({ client_name: 'Map API', grant_types: ['token-exchange'], token_exchange_audiences: [MAPS] });
    assert.equal(await outcome(() => w.exchange(mapper, { ...subject(token), resource: MAPS })), 'invalid_scope');
    assert.equal(await outcome(() => w.exchange(mapper, { ...subject(token), resource: MAPS, scope: 'maps:view' })), 'invalid_scope');
  });

  it('refuses a target outside the client’s exchange audiences with invalid_target (§2.2.2)', async () => {
    const { token } = await w.personToken();
    const cases: [string, Record<string, string>][] = [
      ['an API registered but not among its audiences', { resource: LEDGER }],
      ['the subject token’s own API', { resource: PHOTOS }],
      ['resource and audience naming different APIs', { resource: PRINTS, audience: LEDGER }],
      ['a malformed resource', { resource: 'prints' }],
      ['an API that is not registered', { audience: 'https://unknown.example.com' }],
    ];
    for (const [what, params] of cases) assert.equal(await outcome(() => w.exchange(w.photos, { ...subject(token), ...params })), 'invalid_target', what);
  });

  it('refuses a subject or actor token that is missing, of another type or not live with invalid_request (§2.2.2), and records each refusal', async () => {
    const { token } = await w.personToken();
    const own = (await clientCredentialsGrant.handle(w.world.deps, w.photos, { scope: 'prints:status' }, null)).access_token;
    const forged = `${token.slice(0, -4)}AAAA`;
    const cases: [string, Record<string, string>][] = [
      ['no subject_token', { subject_token_type: TOKEN_TYPE_ACCESS_TOKEN }],
      ['no subject_token_type', { subject_token: token }],
      ['an ID token type', { subject_token: token, subject_token_type: TOKEN_TYPE_ID_TOKEN }],
      ['a forged signature', subject(forged)],
      ['not a token', subject('not-a-jwt')],
      ["a client's own token, which acts for no person", subject(own)],
      ['actor_token_type without actor_token', { ...subject(token), actor_token_type: TOKEN_TYPE_ACCESS_TOKEN }],
      ['actor_token without its type', { ...subject(token), actor_token: own }],
      ["the person's token as actor", { ...subject(token), actor_token: token, actor_token_type: TOKEN_TYPE_ACCESS_TOKEN }],
      ['a token type it does not issue', { ...subject(token), requested_token_type: 'urn:ietf:params:oauth:token-type:saml2' }],
    ];
    const refusals = async () => (await w.world.store.events.list({ limit: 200 })).filter((event) => event.type === 'token.exchange_refused').length;
    const before = await refusals();
    for (const [what, params] of cases) assert.equal(await outcome(() => w.exchange(w.photos, { resource: PRINTS, ...params })), 'invalid_request', what);
    assert.equal(await refusals(), before + cases.length);
    assert.equal(
      await outcome(() => w.exchange(w.photos, { ...subject(token), actor_token: own, actor_token_type: TOKEN_TYPE_ACCESS_TOKEN })),
      'ok',
      'its own token as actor',
    );
    // The print API may exchange this token for the photo API, but not in the photo API's name.
    const asOther = { ...subject(token), resource: PHOTOS, actor_token: own, actor_token_type: TOKEN_TYPE_ACCESS_TOKEN };
    assert.equal(await outcome(() => w.exchange(w.prints, asOther)), 'invalid_request', "another client's own token as actor");
    assert.equal(await outcome(() => w.exchange(w.prints, { ...subject(token), resource: PHOTOS })), 'ok', 'the same exchange without it');
    await assert.rejects(
      () => w.exchange(w.photos, { ...subject(own), resource: PRINTS }),
      (error: OAuthError) => error.code === 'invalid_request' && /acts for no person/.test(error.description),
      "a client's own token as subject is refused as such",
    );
  });

  it('nests act along a chain (§4.1): the print API exchanging the exchanged token back for a photo token', async () => {
    const { token } = await w.personToken();
    const printToken = (await w.exchange(w.photos, subject(token))).access_token;
    const back = decodeJwt((await w.exchange(w.prints, { ...subject(printToken), resource: PHOTOS })).access_token);
    assert.equal(back.sub, w.ada.id);
    assert.deepEqual(back['act'], { sub: w.prints.id, act: { sub: w.photos.id } });
    assert.equal(back['scope'], 'photos:read');
  });

  it('for an API a token of the chain was for, passes on no more than it carried: a detour through another API wins nothing back (§5)', async () => {
    // The person approved both print scopes and the ledger's; the app asked for a print token holding prints:status alone.
    const { token, grantId } = await w.personToken(['openid', 'prints:order', 'prints:status', 'ledger:read'], PRINTS, w.ada, ['prints:status']);
    const { client: broker } = await w.world.addClient({
      client_name: 'Broker',
      grant_types: ['token-exchange'],
      token_exchange_audiences: [PRINTS, LEDGER],
    });
    assert.equal(await outcome(() => w.exchange(broker, { ...subject(token), resource: PRINTS, scope: 'prints:order' })), 'invalid_scope', 'straight back');
    const ledger = (await w.exchange(broker, { ...subject(token), resource: LEDGER })).access_token;
    assert.equal(await outcome(() => w.exchange(broker, { ...subject(ledger), resource: PRINTS, scope: 'prints:order' })), 'invalid_scope', 'by the ledger');
    const back = await w.exchange(broker, { ...subject(ledger), resource: PRINTS });
    assert.equal(back.scope, 'prints:status');
    assert.deepEqual(decodeJwt(ledger)['chain_scope'], { [PRINTS]: 'prints:status' }, 'the ledger token remembers what the print token held');
    // Once more round: the print token from the detour remembers the ledger and the first print token.
    const again = (await w.exchange(broker, { ...subject(back.access_token), resource: LEDGER })).access_token;
    assert.deepEqual(decodeJwt(again)['chain_scope'], { [PRINTS]: 'prints:status', [LEDGER]: 'ledger:read' });
    assert.equal(await outcome(() => w.exchange(broker, { ...subject(again), resource: PRINTS, scope: 'prints:order' })), 'invalid_scope', 'twice round');

    // A ledger token exchanged before tokens carried chain_scope: narrowed by itself alone, as then.
    const ledgerApi = await w.world.store.resources.get(LEDGER);
    assert.ok(ledgerApi);
    const before = await w.world.tokens.issueExchanged({
      client: broker,
      userId: w.ada.id,
      grantId,
      scope: ['ledger:read'],
      resource: ledgerApi,
      act: { sub: broker.id },
      notAfter: decodeJwt(token).exp!,
      dpopJkt: null,
    });
    assert.equal(decodeJwt(before.access_token)['chain_scope'], undefined);
    assert.equal((await w.exchange(broker, { ...subject(before.access_token), resource: PRINTS })).scope, 'prints:order prints:status');
  });

  it('never issues a token that outlives its subject token', async () => {
    const { token } = await w.personToken();
    const subjectExp = decodeJwt(token).exp!;
    w.world.clock.set((subjectExp - 10) * 1000);
    const response = await w.exchange(w.photos, subject(token));
    assert.equal(decodeJwt(response.access_token).exp, subjectExp);
    assert.equal(response.expires_in, 10);
    w.world.clock.set(subjectExp * 1000 + 1000);
    assert.equal(await outcome(() => w.exchange(w.photos, subject(token))), 'invalid_request', 'an expired subject token');
  });

  it('refuses the subject token once its grant is revoked or its person disabled', async () => {
    const revoked = await w.personToken();
    await w.world.store.grants.revoke(revoked.grantId, w.world.clock.now());
    assert.equal(await outcome(() => w.exchange(w.photos, subject(revoked.token))), 'invalid_request', 'a revoked grant');
    const grace = await w.world.addUser({ username: 'grace' });
    const disabled = await w.personToken(undefined, PHOTOS, grace);
    await w.world.store.users.setDisabled(grace.id, true);
    assert.equal(await outcome(() => w.exchange(w.photos, subject(disabled.token))), 'invalid_request', 'a disabled person');
  });
});

describe('TESSERA_TOKEN_EXCHANGE_MAX_ACTORS', () => {
  it('refuses a chain longer than it allows: at 1, an exchanged token is not exchanged again', async () => {
    const w = await apis({ TESSERA_TOKEN_EXCHANGE_MAX_ACTORS: '1' });
    try {
      const { token } = await w.personToken();
      const printToken = (await w.exchange(w.photos, subject(token))).access_token;
      assert.equal(await outcome(() => w.exchange(w.prints, { ...subject(printToken), resource: PHOTOS })), 'invalid_request');
    } finally {
      await w.world.close();
    }
  });
});
