/**
 * Trusted issuers without HTTP: the operations behind `tessera trust …`, /admin/trusted-issuers
 * and the console's trust page, which say whose Identity Assertion JWT Authorization Grants
 * (ID-JAGs, draft-ietf-oauth-identity-assertion-authz-grant) the jwt-bearer grant redeems. An
 * issuer trusted with its keys given or at its jwks_uri (one of the two), the issuer
 * identifier's rules (RFC 8414 §2), the jwks_uri's (https for a delegate, never on a private
 * network unless TESSERA_ALLOW_PRIVATE_NETWORK_URLS; the server's owner may name its own
 * machine), the JWK Set's (public keys only), duplicates and the bound on how many, removal,
 * and the authority rule: only a caller holding every admin scope trusts an issuer, as one
 * signs in as anyone with a verified e-mail address. src/flows/jwt-bearer/token.test.ts
 * redeems ID-JAGs from a trusted issuer; test/id-jag.test.ts does it between two servers over
 * HTTP, and test/admin-api.test.ts lists the admin API's routes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { exportJWK, generateKeyPair, type JWK } from 'jose';
import { ADMIN_SCOPES, ROLE_SCOPES } from '../../core/scopes.ts';
import { FLOW_ISSUER, flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import type { ManageDeps } from './deps.ts';
import {
  addTrustedIssuer,
  getTrustedIssuer,
  listTrustedIssuers,
  MAX_TRUSTED_ISSUERS,
  removeTrustedIssuer,
  trustedIssuerJson,
  type TrustedIssuerInput,
} from './trusted-issuers.ts';

describe('trusted issuers (flows/manage/trusted-issuers.ts)', () => {
  let world: FlowWorld;
  let jwks: { keys: JWK[] };
  let made = 0;

  before(async () => {
    world = await flowWorld();
    const { publicKey } = await generateKeyPair('ES256');
    jwks = { keys: [{ ...(await exportJWK(publicKey)), kid: 'idp-1', alg: 'ES256', use: 'sig' }] };
  });
  after(() => world.close());

  /** An issuer not trusted yet. */
  const fresh = () => {
    made += 1;
    return `https://idp${made}.example.com`;
  };
  /** The deps of a caller the owner delegated to (an admin client, a console operator), holding `scopes`. */
  const delegate = (scopes: readonly string[] = ROLE_SCOPES.admin, allowPrivateNetworkUrls = false): ManageDeps => ({
    ...world.manage,
    config: { ...world.config, allowPrivateNetworkUrls },
    caller: { scopes },
  });
  const events = async (type: string) => (await world.store.events.list({ limit: 500 })).filter((event) => event.type === type);

  it('trusts an issuer whose keys are at its jwks_uri, or given as a JWK Set, and records it', async () => {
    world.clock.advance(1000);
    const issuer = fresh();
    const record = await addTrustedIssuer(world.manage, { issuer, jwks_uri: `${issuer}/.well-known/jwks.json` });
    assert.deepEqual(record, { issuer, jwksUri: `${issuer}/.well-known/jwks.json`, jwks: null, addedByOwner: true, createdAt: world.clock.now() });
    assert.deepEqual(await getTrustedIssuer(world.manage, issuer), record, 'the store holds it as returned');
    assert.deepEqual(trustedIssuerJson(record), {
      issuer,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      created_at: new Date(world.clock.now()).toISOString(),
    });
    const [added] = (await events('trusted_issuer.added')).filter((event) => event.detail['issuer'] === issuer);
    assert.deepEqual(added?.detail, { issuer, jwks_uri: record.jwksUri, by: 'operator' });

    const given = fresh();
    const withKeys = await addTrustedIssuer(world.manage, { issuer: given, jwks, jwks_uri: null });
    assert.deepEqual([withKeys.jwksUri, withKeys.jwks], [null, jwks]);
    assert.deepEqual((await getTrustedIssuer(world.manage, given)).jwks, jwks);
    assert.deepEqual(trustedIssuerJson(withKeys)['jwks'], jwks);
    const listed = (await listTrustedIssuers(world.manage)).map((one) => one.issuer);
    assert.ok(listed.includes(issuer) && listed.includes(given));
  });

  it('takes the issuer exactly as its ID-JAGs name it, an http issuer only on loopback, and the jwks_uri as parsed', async () => {
    // RFC 8414 §2 / RFC 7519 §4.1.1: iss is compared as a string, so it is kept as typed.
    const typed = 'https://IdP.Example.com/tenant/';
    assert.equal((await addTrustedIssuer(world.manage, { issuer: typed, jwks })).issuer, typed);
    assert.equal((await addTrustedIssuer(world.manage, { issuer: 'http://127.0.0.1:9000', jwks })).issuer, 'http://127.0.0.1:9000');
    assert.equal((await addTrustedIssuer(world.manage, { issuer: 'http://localhost:9000/idp', jwks })).issuer, 'http://localhost:9000/idp');
    const parsed = await addTrustedIssuer(world.manage, { issuer: fresh(), jwks_uri: 'https://IdP.Example.com:443/keys' });
    assert.equal(parsed.jwksUri, 'https://idp.example.com/keys', 'where its keys are, as the fetch will request it');
  });

  it('refuses an issuer a rule forbids, naming the field, and keeps nothing of it', async () => {
    const issuer = (value: unknown): TrustedIssuerInput => ({ issuer: value, jwks });
    const keys = (value: unknown): TrustedIssuerInput => ({ issuer: fresh(), jwks: value });
    const uri = (value: unknown): TrustedIssuerInput => ({ issuer: fresh(), jwks_uri: value });
    const cases: [string, TrustedIssuerInput, string][] = [
      ['no issuer', { jwks }, 'invalid:issuer'],
      ['an empty issuer', issuer(''), 'invalid:issuer'],
      ['an issuer that is not text', issuer(42), 'invalid:issuer'],
      ['a relative issuer', issuer('idp.example.com'), 'invalid:issuer'],
      ['an issuer with a query (RFC 8414 §2)', issuer('https://idp.example.com/?tenant=1'), 'invalid:issuer'],
      ['an issuer with an empty query', issuer('https://idp.example.com/?'), 'invalid:issuer'],
      ['an issuer with a fragment (RFC 8414 §2)', issuer('https://idp.example.com/#x'), 'invalid:issuer'],
      ['an issuer with a user name and password', issuer('https://user:pass@idp.example.com'), 'invalid:issuer'],
      ['an http issuer off loopback (RFC 8414 §2: "https" scheme)', issuer('http://idp.example.com'), 'invalid:issuer'],
      ['an issuer of another scheme', issuer('ftp://idp.example.com'), 'invalid:issuer'],
      ['an issuer past 2048 characters', issuer(`https://idp.example.com/${'a'.repeat(2030)}`), 'invalid:issuer'],
      ["this server's own issuer", issuer(FLOW_ISSUER), 'invalid:issuer'],
      ['neither jwks_uri nor jwks', { issuer: fresh() }, 'invalid:jwks_uri'],
      ['both jwks_uri and jwks', { issuer: fresh(), jwks_uri: 'https://idp.example.com/jwks', jwks }, 'invalid:jwks_uri'],
      ['an empty jwks_uri', uri(''), 'invalid:jwks_uri'],
      ['a jwks_uri that is not text', uri(7), 'invalid:jwks_uri'],
      ['a relative jwks_uri', uri('/jwks'), 'invalid:jwks_uri'],
      ['a jwks_uri of another scheme', uri('ftp://idp.example.com/jwks'), 'invalid:jwks_uri'],
      ['a jwks_uri with a user name and password', uri('https://user:pass@idp.example.com/jwks'), 'invalid:jwks_uri'],
      ['a jwks_uri with a fragment', uri('https://idp.example.com/jwks#keys'), 'invalid:jwks_uri'],
      ['a jwks_uri past 2048 characters', uri(`https://idp.example.com/${'a'.repeat(2030)}`), 'invalid:jwks_uri'],
      ['keys that are no JWK Set (RFC 7517 §5)', keys({ kty: 'EC' }), 'invalid:jwks'],
      ['keys as text', keys(JSON.stringify({ keys: [] })), 'invalid:jwks'],
      ['keys not a list', keys({ keys: {} }), 'invalid:jwks'],
      ['a private key among the keys', keys({ keys: [{ ...jwks.keys[0], d: 'c2VjcmV0' }] }), 'invalid:jwks'],
      ['a symmetric key (RFC 7518 §6.4)', keys({ keys: [{ kty: 'oct', k: 'c2VjcmV0' }] }), 'invalid:jwks'],
      ['a key that is no object', keys({ keys: ['not a key'] }), 'invalid:jwks'],
    ];
    const before = (await listTrustedIssuers(world.manage)).length;
    const added = (await events('trusted_issuer.added')).length;
    for (const [what, input, expected] of cases) assert.equal(await outcome(() => addTrustedIssuer(world.manage, input)), expected, what);
    assert.equal((await listTrustedIssuers(world.manage)).length, before, 'nothing kept');
    assert.equal((await events('trusted_issuer.added')).length, added, 'nothing recorded');
    await assert.rejects(() => addTrustedIssuer(world.manage, uri('')), /^ManageError: jwks_uri: an https URL$/, 'an empty jwks_uri is a missing one');
    const longest = `https://idp.example.com/${'a'.repeat(2048 - 24)}`;
    assert.equal(await outcome(() => addTrustedIssuer(world.manage, { issuer: longest, jwks })), 'ok', 'an issuer of exactly 2048 characters');
  });

  it('lets a delegate name only an https jwks_uri on the public network, and the owner its own machine or network too', async () => {
    const cases: [string, string, ManageDeps, string][] = [
      ['a delegate, a public https host', 'https://idp.example.com/jwks', delegate(), 'ok'],
      ['a delegate, http', 'http://idp.example.com/jwks', delegate(), 'invalid:jwks_uri'],
      ['a delegate, http with private networks allowed', 'http://10.0.0.8/jwks', delegate(ROLE_SCOPES.admin, true), 'invalid:jwks_uri'],
      ['a delegate, loopback', 'https://127.0.0.1/jwks', delegate(), 'invalid:jwks_uri'],
      ['a delegate, localhost', 'https://localhost:8443/jwks', delegate(), 'invalid:jwks_uri'],
      ['a delegate, IPv6 loopback', 'https://[::1]/jwks', delegate(), 'invalid:jwks_uri'],
      ['a delegate, a private address', 'https://10.0.0.8/jwks', delegate(), 'invalid:jwks_uri'],
      ['a delegate, a private IPv6 address', 'https://[fd00::8]/jwks', delegate(), 'invalid:jwks_uri'],
      // A cloud metadata service (RFC 3927 link-local).
      ['a delegate, link-local', 'https://169.254.169.254/latest', delegate(), 'invalid:jwks_uri'],
      ['a delegate, a private address with private networks allowed', 'https://10.0.0.8/jwks', delegate(ROLE_SCOPES.admin, true), 'ok'],
      ['a delegate, loopback with private networks allowed', 'https://127.0.0.1/jwks', delegate(ROLE_SCOPES.admin, true), 'ok'],
      ['the owner, loopback over http', 'http://127.0.0.1:9000/jwks', world.manage, 'ok'],
      ['the owner, localhost over http', 'http://localhost:9000/jwks', world.manage, 'ok'],
      ['the owner, a private address over http', 'http://10.0.0.8/jwks', world.manage, 'ok'],
      ['the owner, a public host over http: its keys could be swapped on the way', 'http://idp.example.com/jwks', world.manage, 'invalid:jwks_uri'],
      ['the owner, a public address over http', 'http://203.0.113.7/jwks', world.manage, 'invalid:jwks_uri'],
      ['the owner, a private address', 'https://10.0.0.8/jwks', world.manage, 'ok'],
      ['the owner, link-local', 'https://169.254.169.254/latest', world.manage, 'ok'],
    ];
    for (const [what, jwksUri, deps, expected] of cases)
      assert.equal(await outcome(() => addTrustedIssuer(deps, { issuer: fresh(), jwks_uri: jwksUri })), expected, what);
    const issuer = fresh();
    assert.equal((await addTrustedIssuer(delegate(), { issuer, jwks })).addedByOwner, false, 'held to the public network when its keys are fetched');
  });

  it('lets only a caller holding every admin scope trust an issuer, naming the field', async () => {
    const cases: [string, readonly string[], string][] = [
      ['a provider manager', ['admin:providers'], 'forbidden:issuer'],
      ['a console support operator', ROLE_SCOPES.support, 'forbidden:issuer'],
      ['every admin scope but the keys', ROLE_SCOPES.admin.filter((scope) => scope !== 'admin:keys'), 'forbidden:issuer'],
      ['every read scope', ROLE_SCOPES.viewer, 'forbidden:issuer'],
      ['no scope at all', [], 'forbidden:issuer'],
      ['every admin scope', ROLE_SCOPES.admin, 'ok'],
      ['every scope there is', ADMIN_SCOPES, 'ok'],
    ];
    const refused: string[] = [];
    for (const [what, scopes, expected] of cases) {
      const issuer = fresh();
      if (expected !== 'ok') refused.push(issuer);
      assert.equal(await outcome(() => addTrustedIssuer(delegate(scopes), { issuer, jwks })), expected, what);
    }
    for (const issuer of refused) assert.equal(await outcome(() => getTrustedIssuer(world.manage, issuer)), 'not_found', 'nothing kept of a refused one');
  });

  it('refuses an issuer trusted already, whatever keys it names now', async () => {
    const issuer = fresh();
    await addTrustedIssuer(world.manage, { issuer, jwks });
    assert.equal(await outcome(() => addTrustedIssuer(world.manage, { issuer, jwks_uri: `${issuer}/jwks` })), 'conflict');
    assert.deepEqual((await getTrustedIssuer(world.manage, issuer)).jwks, jwks, 'the keys it had');
  });

  it('stops trusting an issuer: then it is not found, removing it again is refused, and it may be trusted anew', async () => {
    const issuer = fresh();
    await addTrustedIssuer(world.manage, { issuer, jwks });
    await removeTrustedIssuer(world.manage, issuer);
    assert.equal(await world.store.trustedIssuers.get(issuer), null);
    assert.equal(await outcome(() => getTrustedIssuer(world.manage, issuer)), 'not_found');
    assert.equal(await outcome(() => removeTrustedIssuer(world.manage, issuer)), 'not_found');
    const removed = (await events('trusted_issuer.removed')).filter((event) => event.detail['issuer'] === issuer);
    assert.deepEqual(
      removed.map((event) => event.detail),
      [{ issuer, by: 'operator' }],
    );
    assert.equal(await outcome(() => addTrustedIssuer(world.manage, { issuer, jwks_uri: `${issuer}/jwks` })), 'ok', 'with other keys');
  });

  // Last: it leaves the world full.
  it(`holds a server to ${MAX_TRUSTED_ISSUERS} trusted issuers`, async () => {
    const first = fresh();
    await addTrustedIssuer(world.manage, { issuer: first, jwks });
    for (let i = (await listTrustedIssuers(world.manage)).length; i < MAX_TRUSTED_ISSUERS; i += 1) {
      const issuer = fresh();
      await addTrustedIssuer(world.manage, { issuer, jwks_uri: `${issuer}/jwks` });
    }
    const oneMore = fresh();
    assert.equal(await outcome(() => addTrustedIssuer(world.manage, { issuer: oneMore, jwks })), 'conflict');
    assert.equal((await listTrustedIssuers(world.manage)).length, MAX_TRUSTED_ISSUERS);
    await removeTrustedIssuer(world.manage, first);
    assert.equal(await outcome(() => addTrustedIssuer(world.manage, { issuer: oneMore, jwks })), 'ok', 'room again once one is removed');
  });
});
