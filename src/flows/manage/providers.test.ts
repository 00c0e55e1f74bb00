/**
 * Upstream identity providers without HTTP: `addProvider`, `listProviders`, `getProvider`,
 * `updateProvider` and `removeProvider`, the operations behind `tessera provider …`,
 * /admin/providers and the console's providers page. Covered: each kind (OpenID Connect,
 * GitHub, LDAP) added with its defaults; a table of refusals, each naming its field, with the
 * bounds of fields/providers.ts; the client secret and bind password kept only sealed (never
 * in clear in the store, never answered, never in an event); an update changing only what it
 * names; the callers checkMayTrustProvider refuses; removal and a taken id.
 *
 * Nothing here reaches the network: adding or changing a provider neither reads an OpenID
 * provider's discovery document nor connects to a directory (an LDAP filter is only parsed);
 * those happen at sign-in (test/upstream-oidc.test.ts, test/upstream-github.test.ts,
 * test/upstream-ldap.test.ts). test/cli-providers.test.ts, test/admin-api.test.ts and
 * test/admin-authority.test.ts check what the command and the admin API make of the same rules.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { UPSTREAM_SIGN_IN_PATH } from '../../core/endpoints.ts';
import { ROLE_SCOPES } from '../../core/scopes.ts';
import type { IdentityProviderRecord } from '../../store/identity-providers.ts';
import { FLOW_ISSUER, flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import {
  addProvider,
  getProvider,
  listProviders,
  providerIdFor,
  providerJson,
  removeProvider,
  updateProvider,
  type ProviderDeps,
  type ProviderInput,
} from './providers.ts';

const CLIENT_SECRET = 'upstream-client-secret-0f3c9a';
const BIND_PASSWORD = 'directory-bind-password-7e21d4';

describe('upstream identity providers (flows/manage/providers.ts)', () => {
  let world: FlowWorld;
  let deps: ProviderDeps;
  let made = 0;

  before(async () => {
    world = await flowWorld();
    deps = { ...world.manage, secrets: world.secrets };
  });
  after(() => world.close());

  /** The same deps for a caller holding only these admin scopes (as an admin API token would). */
  const as = (...scopes: string[]): ProviderDeps => ({ ...deps, caller: { scopes } });

  /** A name no other provider of this file has, so each gets an id of its own. */
  const unique = (prefix: string) => {
    made += 1;
    return `${prefix} ${made}`;
  };
  const oidc = (input: ProviderInput = {}): ProviderInput => ({
    kind: 'oidc',
    name: unique('OIDC'),
    issuer: 'https://sso.example.com',
    client_id: 'tessera',
    client_secret: CLIENT_SECRET,
    ...input,
  });
  const github = (input: ProviderInput = {}): ProviderInput => ({
    kind: 'github',
    name: unique('GitHub'),
    client_id: 'Iv1.abc',
    client_secret: CLIENT_SECRET,
    ...input,
  });
  const ldap = (input: ProviderInput = {}): ProviderInput => ({
    kind: 'ldap',
    name: unique('Directory'),
    url: 'ldaps://ldap.example.com',
    user_search_base: 'ou=people,dc=example,dc=com',
    ...input,
  });

  /** A second later: the events of one provider come out in the order they were emitted (events at one instant are listed by their random ids). */
  const later = () => world.clock.advance(1000);
  /** The audit events about one provider, oldest first. */
  const eventsOf = async (id: string) =>
    (await world.store.events.list({ limit: 1000 })).filter((event) => event.detail['provider'] === id).sort((a, b) => a.at - b.at);

  /** Someone signs in through the provider: a change to where its word comes from would move them. */
  const linkSomeone = async (providerId: string) => {
    const person = await world.addUser();
    await world.store.linkedIdentities.create({
      providerId,
      subject: `upstream-${person.id}`,
      userId: person.id,
      label: null,
      groups: [],
      createdAt: world.clock.now(),
      lastUsedAt: null,
    });
    return person;
  };

  describe('adding', () => {
    it('adds an OpenID provider with its defaults: openid profile email, nothing linked or trusted, after the last button, its secret sealed', async () => {
      const last = (await listProviders(deps)).reduce((highest, provider) => Math.max(highest, provider.position), -1);
      const added = await addProvider(deps, {
        kind: 'oidc',
        name: 'Acme SSO',
        issuer: 'https://sso.acme.example/',
        client_id: 'tessera',
        client_secret: CLIENT_SECRET,
      });
      assert.equal(added.id, 'acme-sso', 'the id is made from the name');
      assert.equal(added.kind, 'oidc');
      assert.equal(added.position, last + 1, 'its button goes after the last');
      assert.deepEqual(added.settings, {
        only: false,
        allowLinking: false,
        allowedDomains: [],
        domains: [],
        claimMapping: {},
        issuer: 'https://sso.acme.example',
        clientId: 'tessera',
        trustUpstreamMfa: false,
        scopes: ['openid', 'profile', 'email'],
      });
      assert.deepEqual(await getProvider(deps, 'acme-sso'), added, 'the store holds what was answered');
      assert.equal(world.secrets.open('acme-sso', added.secret!), CLIENT_SECRET, 'the secret opens for its provider');
      const shown = providerJson(added, FLOW_ISSUER);
      assert.equal(shown['client_secret_set'], true);
      assert.equal(shown['redirect_uri'], `${FLOW_ISSUER}${UPSTREAM_SIGN_IN_PATH}/acme-sso/callback`, 'the redirect URI to register upstream');
      const events = await eventsOf('acme-sso');
      assert.deepEqual(
        events.map((event) => [event.type, event.detail]),
        [['provider.created', { provider: 'acme-sso', kind: 'oidc', by: 'operator' }]],
      );
    });

    it('adds an OpenID provider as given: openid always among its scopes, "a b" as two, domains lower-cased and said once, no secret when none is given', async () => {
      const added = await addProvider(
        deps,
        oidc({
          id: 'corp',
          position: 7,
          client_secret: undefined,
          scopes: ['email groups', 'email'],
          allowed_domains: ['@Example.COM', 'example.com', 'sub.example.org'],
          domains: ['Example.com'],
          claim_mapping: { username: 'preferred_username', groups: 'roles' },
          issuer: 'http://127.0.0.1:8080',
        }),
      );
      assert.equal(added.id, 'corp', 'an id given is kept');
      assert.equal(added.position, 7);
      assert.deepEqual(added.settings['scopes'], ['openid', 'email', 'groups']);
      assert.deepEqual(added.settings['allowedDomains'], ['example.com', 'sub.example.org']);
      assert.deepEqual(added.settings['domains'], ['example.com']);
      assert.deepEqual(added.settings['claimMapping'], { username: 'preferred_username', groups: 'roles' });
      assert.equal(added.settings['issuer'], 'http://127.0.0.1:8080', 'http on a loopback address, for a provider on the same machine');
      assert.equal(added.secret, null);
      assert.equal(providerJson(added, FLOW_ISSUER)['client_secret_set'], false);
    });

    it('adds a GitHub provider with github.com and its API by default, and a GitHub Enterprise one at its own addresses', async () => {
      const added = await addProvider(deps, github({ name: 'GitHub' }));
      assert.equal(added.id, 'github');
      assert.deepEqual(added.settings, {
        only: false,
        allowLinking: false,
        allowedDomains: [],
        domains: [],
        claimMapping: {},
        clientId: 'Iv1.abc',
        allowedOrganizations: [],
        webUrl: 'https://github.com',
        apiUrl: 'https://api.github.com',
      });
      assert.equal(world.secrets.open('github', added.secret!), CLIENT_SECRET);
      const enterprise = await addProvider(
        deps,
        github({ web_url: 'https://git.example.com/', api_url: 'https://git.example.com/api/v3', allowed_organizations: [' octo-org ', ''] }),
      );
      assert.deepEqual(
        [enterprise.settings['webUrl'], enterprise.settings['apiUrl'], enterprise.settings['allowedOrganizations']],
        ['https://git.example.com', 'https://git.example.com/api/v3', ['octo-org']],
      );
      assert.equal(enterprise.position, added.position + 1, 'after the last button');
      assert.equal(providerJson(enterprise, FLOW_ISSUER)['redirect_uri'], `${FLOW_ISSUER}${UPSTREAM_SIGN_IN_PATH}/${enterprise.id}/callback`);
    });

    it('adds an LDAP directory searched anonymously by default, with (uid={username}) and (member={dn}), no groups and no secret', async () => {
      const added = await addProvider(deps, ldap({ name: 'Staff Directory' }));
      assert.equal(added.id, 'staff-directory');
      assert.deepEqual(added.settings, {
        only: false,
        allowLinking: false,
        allowedDomains: [],
        domains: [],
        claimMapping: {},
        url: 'ldaps://ldap.example.com',
        startTls: false,
        bindDn: null,
        userSearchBase: 'ou=people,dc=example,dc=com',
        userFilter: '(uid={username})',
        groupSearchBase: null,
        groupFilter: '(member={dn})',
      });
      assert.equal(added.secret, null);
      assert.equal(providerJson(added, FLOW_ISSUER)['bind_password_set'], false);
      assert.equal(providerJson(added, FLOW_ISSUER)['redirect_uri'], undefined, 'a directory redirects nowhere');
    });

    it('adds an LDAP directory bound as a service account over StartTLS, its password sealed', async () => {
      const added = await addProvider(
        deps,
        ldap({
          url: 'ldap://ldap.example.com',
          start_tls: true,
          bind_dn: 'cn=tessera,dc=example,dc=com',
          bind_password: BIND_PASSWORD,
          user_filter: '(&(objectClass=person)(mail={username}))',
          group_search_base: 'ou=groups,dc=example,dc=com',
          group_filter: '(memberUid={username})',
        }),
      );
      assert.deepEqual(
        [added.settings['startTls'], added.settings['bindDn'], added.settings['userFilter'], added.settings['groupSearchBase'], added.settings['groupFilter']],
        [true, 'cn=tessera,dc=example,dc=com', '(&(objectClass=person)(mail={username}))', 'ou=groups,dc=example,dc=com', '(memberUid={username})'],
      );
      assert.equal(world.secrets.open(added.id, added.secret!), BIND_PASSWORD);
      assert.equal(providerJson(added, FLOW_ISSUER)['bind_password_set'], true);
    });

    it('makes an id from the name alone, as the redirect URI is worked out before the provider is added', () => {
      assert.equal(providerIdFor({ name: '  Acme Corp  SSO! ' }), 'acme-corp-sso');
      assert.equal(providerIdFor({ name: 'x'.repeat(60) }), 'x'.repeat(40), 'cut to 40 characters');
      assert.equal(providerIdFor({ name: `${'a'.repeat(39)} b` }), 'a'.repeat(39), 'no dash left at the end once cut');
      assert.equal(providerIdFor({ name: 'Whatever', id: ' okta ' }), 'okta');
    });
    it('makes an id of an accented name without the accents', () => {
      assert.equal(providerIdFor({ name: 'Zürich SSO' }), 'zurich-sso');
    });
  });

  describe('refusing', () => {
    it('refuses a provider a rule forbids, naming the field, and stores nothing', async () => {
      const long = (n: number) => 'a'.repeat(n);
      const cases: [string, ProviderInput, string][] = [
        // kind, name, id, position
        ['no kind', { ...oidc(), kind: undefined }, 'invalid:kind'],
        ['an unknown kind', oidc({ kind: 'saml' }), 'invalid:kind'],
        ['no name', oidc({ name: undefined }), 'invalid:name'],
        ['a blank name', oidc({ name: '   ' }), 'invalid:name'],
        ['a name past 60 characters', oidc({ name: 'N'.repeat(61) }), 'invalid:name'],
        ['a name with a direction override', oidc({ name: 'Acme\u202e' }), 'invalid:name'],
        ['an id with capitals and underscores', oidc({ id: 'Bad_Id' }), 'invalid:id'],
        ['an id past 40 characters', oidc({ id: long(41) }), 'invalid:id'],
        ['an id starting with a dash', oidc({ id: '-corp' }), 'invalid:id'],
        ['a name that makes no id', oidc({ name: '!!!' }), 'invalid:id'],
        ['a position below 0', oidc({ position: -1 }), 'invalid:position'],
        ['a position of no whole number', oidc({ position: 1.5 }), 'invalid:position'],
        ['a position past 1000000', oidc({ position: 1_000_001 }), 'invalid:position'],
        // OpenID Connect
        ['no issuer', oidc({ issuer: undefined }), 'invalid:issuer'],
        ['a blank issuer', oidc({ issuer: ' ' }), 'invalid:issuer'],
        ['an issuer that is no URL', oidc({ issuer: 'sso.example.com' }), 'invalid:issuer'],
        ['an http issuer off loopback', oidc({ issuer: 'http://sso.example.com' }), 'invalid:issuer'],
        // OpenID Connect Discovery 1.0 §2: the issuer "contains no query or fragment components".
        ['an issuer with a query', oidc({ issuer: 'https://sso.example.com/?tenant=1' }), 'invalid:issuer'],
        ['an issuer with a fragment', oidc({ issuer: 'https://sso.example.com/#x' }), 'invalid:issuer'],
        ['an issuer with credentials', oidc({ issuer: 'https://user:pw@sso.example.com' }), 'invalid:issuer'],
        ['an issuer past 1024 characters', oidc({ issuer: `https://sso.example.com/${long(1010)}` }), 'invalid:issuer'],
        ['no client_id', oidc({ client_id: undefined }), 'invalid:client_id'],
        ['a blank client_id', oidc({ client_id: '  ' }), 'invalid:client_id'],
        ['a client_id past 1024 characters', oidc({ client_id: long(1025) }), 'invalid:client_id'],
        ['a client_id with a control character', oidc({ client_id: 'tess\u0000era' }), 'invalid:client_id'],
        ['an empty client_secret', oidc({ client_secret: '' }), 'invalid:client_secret'],
        ['a client_secret past 1024 characters', oidc({ client_secret: long(1025) }), 'invalid:client_secret'],
        // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
        ['a scope with a quote', oidc({ scopes: ['email', 'say"what'] }), 'invalid:scopes'],
        ['a scope with a backslash', oidc({ scopes: ['a\\b'] }), 'invalid:scopes'],
        ['a scope past 128 characters', oidc({ scopes: [long(129)] }), 'invalid:scopes'],
        // Every kind
        ['a claim that is not mapped', oidc({ claim_mapping: { sub: 'oid' } }), 'invalid:claim_mapping'],
        ['a mapping from nothing', oidc({ claim_mapping: { username: '' } }), 'invalid:claim_mapping'],
        ['a mapping from a name with a space', oidc({ claim_mapping: { username: 'user name' } }), 'invalid:claim_mapping'],
        ['a mapping from a name past 100 characters', oidc({ claim_mapping: { username: long(101) } }), 'invalid:claim_mapping'],
        ['an allowed domain that is none', oidc({ allowed_domains: ['not a domain'] }), 'invalid:allowed_domains'],
        ['an allowed domain without a dot', oidc({ allowed_domains: ['localhost'] }), 'invalid:allowed_domains'],
        ['an allowed domain past 253 characters', oidc({ allowed_domains: [`${`${long(60)}.`.repeat(5)}com`] }), 'invalid:allowed_domains'],
        ['a routed domain with an empty label', oidc({ domains: ['example..com'] }), 'invalid:domains'],
        // Another kind's fields (fields/providers.ts `kinds`)
        ['an LDAP url on an OpenID provider', oidc({ url: 'ldaps://ldap.example.com' }), 'invalid:url'],
        ['organizations on an OpenID provider', oidc({ allowed_organizations: ['octo-org'] }), 'invalid:allowed_organizations'],
        ['an issuer on GitHub', github({ issuer: 'https://sso.example.com' }), 'invalid:issuer'],
        ['trusted mfa on GitHub', github({ trust_upstream_mfa: false }), 'invalid:trust_upstream_mfa'],
        ['scopes on GitHub', github({ scopes: ['read:org'] }), 'invalid:scopes'],
        ['a client secret on a directory', ldap({ client_secret: CLIENT_SECRET }), 'invalid:client_secret'],
        ['a bind DN on GitHub', github({ bind_dn: 'cn=x' }), 'invalid:bind_dn'],
        // GitHub
        ['GitHub without a client_id', github({ client_id: undefined }), 'invalid:client_id'],
        ['GitHub without a client_secret', github({ client_secret: undefined }), 'invalid:client_secret'],
        ['a web_url over http', github({ web_url: 'http://git.example.com' }), 'invalid:web_url'],
        ['an api_url with credentials', github({ api_url: 'https://token@git.example.com/api/v3' }), 'invalid:api_url'],
        ['an api_url that is no URL', github({ api_url: 'git.example.com/api' }), 'invalid:api_url'],
        ['an organization starting with a dash', github({ allowed_organizations: ['-octo'] }), 'invalid:allowed_organizations'],
        ['an organization past 39 characters', github({ allowed_organizations: [long(40)] }), 'invalid:allowed_organizations'],
        // LDAP
        ['a directory without a url', ldap({ url: undefined }), 'invalid:url'],
        ['a directory url that is no URL', ldap({ url: 'ldap.example.com' }), 'invalid:url'],
        ['a directory url over https', ldap({ url: 'https://ldap.example.com' }), 'invalid:url'],
        ['a directory without a search base', ldap({ user_search_base: undefined }), 'invalid:user_search_base'],
        ['a search base past 1024 characters', ldap({ user_search_base: long(1025) }), 'invalid:user_search_base'],
        ['StartTLS on ldaps:// (RFC 4511 §4.14 upgrades a plain connection)', ldap({ start_tls: true }), 'invalid:start_tls'],
        ['a bind DN without its password', ldap({ bind_dn: 'cn=tessera,dc=example,dc=com' }), 'invalid:bind_password'],
        ['an empty bind password', ldap({ bind_dn: 'cn=tessera', bind_password: '' }), 'invalid:bind_password'],
        ['a bind password past 1024 characters', ldap({ bind_dn: 'cn=tessera', bind_password: long(1025) }), 'invalid:bind_password'],
        ['a user filter without {username}', ldap({ user_filter: '(uid=admin)' }), 'invalid:user_filter'],
        // RFC 4515 §3: a filter is parenthesised.
        ['a user filter that does not parse', ldap({ user_filter: '(uid={username}' }), 'invalid:user_filter'],
        ['a group filter without {dn} or {username}', ldap({ group_filter: '(objectClass=group)' }), 'invalid:group_filter'],
        ['a group filter that does not parse', ldap({ group_filter: 'member={dn})(' }), 'invalid:group_filter'],
      ];
      const before = (await listProviders(deps)).length;
      for (const [what, input, expected] of cases) assert.equal(await outcome(() => addProvider(deps, input)), expected, what);
      assert.equal((await listProviders(deps)).length, before, 'nothing refused was stored');
    });

    it('takes each bound at its limit', async () => {
      const cases: [string, ProviderInput][] = [
        ['a name of 60 characters', oidc({ name: 'L'.repeat(60) })],
        ['an id of 40 characters', oidc({ id: `a${'b'.repeat(38)}c` })],
        ['position 1000000', oidc({ position: 1_000_000 })],
        ['a client secret of 1024 characters', oidc({ client_secret: 's'.repeat(1024) })],
        ['a scope of 128 characters', oidc({ scopes: ['s'.repeat(128)] })],
        ['an organization of 39 characters', github({ allowed_organizations: [`o${'r'.repeat(38)}`] })],
        ['a mapping from 100 characters', ldap({ claim_mapping: { groups: 'g'.repeat(100) } })],
        ['a group filter with {username}', ldap({ group_filter: '(memberUid={username})' })],
      ];
      for (const [what, input] of cases) assert.equal(await outcome(() => addProvider(deps, input)), 'ok', what);
    });

    it('refuses a provider whose id is taken, naming the id, and keeps the first', async () => {
      const first = await addProvider(deps, oidc({ name: 'Okta' }));
      assert.equal(await outcome(() => addProvider(deps, oidc({ name: 'Okta' }))), 'conflict:id', 'the same name makes the same id');
      assert.equal(await outcome(() => addProvider(deps, github({ id: 'okta' }))), 'conflict:id', 'an id given');
      assert.deepEqual(await getProvider(deps, 'okta'), first);
      assert.deepEqual(
        (await eventsOf('okta')).map((event) => event.type),
        ['provider.created'],
        'only the first was recorded',
      );
    });

    it('lets one provider alone be the only way in', async () => {
      const only = await addProvider(deps, oidc({ only: true }));
      assert.equal(await outcome(() => addProvider(deps, oidc({ only: true }))), 'conflict');
      const other = await addProvider(deps, oidc());
      assert.equal(await outcome(() => updateProvider(deps, other.id, { only: true })), 'conflict');
      assert.equal(await outcome(() => updateProvider(deps, only.id, { only: true, name: 'Still the only one' })), 'ok', 'itself is no other');
      await updateProvider(deps, only.id, { only: false });
      assert.equal(await outcome(() => updateProvider(deps, other.id, { only: true })), 'ok', 'once the first is off');
      await updateProvider(deps, other.id, { only: false });
    });
  });

  describe('secrets', () => {
    /** Whether `secret` appears anywhere in what the store holds of the provider, what is answered of it, or its events. */
    const leaks = async (provider: IdentityProviderRecord, secret: string) => {
      const stored = await world.store.identityProviders.get(provider.id);
      const listed = (await listProviders(deps)).find((candidate) => candidate.id === provider.id);
      const texts = [stored, listed, providerJson(stored!, FLOW_ISSUER), ...(await eventsOf(provider.id))].map((value) => JSON.stringify(value));
      return texts.some((text) => text.includes(secret));
    };

    it('keeps a client secret and a bind password only sealed for their provider: never in clear, never answered, never in an event', async () => {
      const openid = await addProvider(deps, oidc());
      const gh = await addProvider(deps, github());
      const directory = await addProvider(deps, ldap({ bind_dn: 'cn=tessera,dc=example,dc=com', bind_password: BIND_PASSWORD }));
      for (const [provider, secret] of [
        [openid, CLIENT_SECRET],
        [gh, CLIENT_SECRET],
        [directory, BIND_PASSWORD],
      ] as const) {
        assert.equal(await leaks(provider, secret), false, provider.kind);
        const shown = providerJson(provider, FLOW_ISSUER);
        assert.equal('client_secret' in shown || 'bind_password' in shown || 'secret' in shown, false, 'no secret field in the answer');
        assert.equal(provider.secret?.['enc'], 'A256GCM', 'sealed with AES-256-GCM');
        assert.equal(world.secrets.open(provider.id, provider.secret!), secret);
        assert.throws(() => world.secrets.open('another-provider', provider.secret!), 'sealed for its own provider: moved to another row it does not open');
      }
    });

    it('seals a new secret given on update, says so in the event without it, and keeps the old one when none is given', async () => {
      const added = await addProvider(deps, oidc());
      later();
      const renamed = await updateProvider(deps, added.id, { name: unique('Renamed') });
      later();
      assert.deepEqual(renamed.secret, added.secret, 'not named, the sealed secret stays as it was');
      const rotated = await updateProvider(deps, added.id, { client_secret: 'rotated-secret-55aa' });
      assert.notDeepEqual(rotated.secret, added.secret);
      assert.equal(world.secrets.open(added.id, (await getProvider(deps, added.id)).secret!), 'rotated-secret-55aa');
      assert.equal(await leaks(rotated, 'rotated-secret-55aa'), false);
      assert.deepEqual(
        (await eventsOf(added.id)).map((event) => [event.type, event.detail['secret_changed']]),
        [
          ['provider.created', undefined],
          ['provider.updated', false],
          ['provider.updated', true],
        ],
      );
    });

    it('forgets the bind password of a directory searched anonymously again, and asks for one when it binds without', async () => {
      const directory = await addProvider(deps, ldap({ bind_dn: 'cn=tessera,dc=example,dc=com', bind_password: BIND_PASSWORD }));
      const kept = await updateProvider(deps, directory.id, { bind_dn: 'cn=other,dc=example,dc=com' });
      assert.equal(world.secrets.open(directory.id, kept.secret!), BIND_PASSWORD, 'another DN keeps the stored password');
      const anonymous = await updateProvider(deps, directory.id, { bind_dn: null });
      assert.deepEqual([anonymous.settings['bindDn'], anonymous.secret], [null, null], 'a stored password would be used by no one');
      assert.equal(await outcome(() => updateProvider(deps, directory.id, { bind_dn: 'cn=tessera,dc=example,dc=com' })), 'invalid:bind_password');
      const ignored = await updateProvider(deps, directory.id, { bind_password: BIND_PASSWORD });
      assert.equal(ignored.secret, null, 'a password for nobody to bind with is not kept');
    });
  });

  describe('updating', () => {
    it('changes what it names and keeps the rest, the time it was added included', async () => {
      const added = await addProvider(
        deps,
        ldap({
          url: 'ldap://ldap.example.com',
          start_tls: true,
          bind_dn: 'cn=tessera,dc=example,dc=com',
          bind_password: BIND_PASSWORD,
          group_search_base: 'ou=groups,dc=example,dc=com',
          allowed_domains: ['example.com'],
          claim_mapping: { email: 'mail' },
        }),
      );
      world.clock.advance(60_000);
      const renamed = await updateProvider(deps, added.id, { name: 'Renamed directory', position: 42 });
      assert.deepEqual(renamed.settings, added.settings, 'no setting named, none changed');
      assert.deepEqual(
        [renamed.name, renamed.position, renamed.createdAt, renamed.updatedAt],
        ['Renamed directory', 42, added.createdAt, added.createdAt + 60_000],
      );
      assert.deepEqual(renamed.secret, added.secret);
      later();
      const changed = await updateProvider(deps, added.id, { group_search_base: null, user_filter: '(mail={username})', kind: 'ldap', id: added.id });
      assert.deepEqual(changed.settings, { ...added.settings, groupSearchBase: null, userFilter: '(mail={username})' });
      assert.deepEqual([changed.name, changed.position], ['Renamed directory', 42], 'the name and place given before stay');
      assert.deepEqual(await getProvider(deps, added.id), changed, 'the store holds what was answered');
      assert.deepEqual(
        (await eventsOf(added.id)).map((event) => [event.type, event.detail]),
        [
          ['provider.created', { provider: added.id, kind: 'ldap', by: 'operator' }],
          ['provider.updated', { provider: added.id, kind: 'ldap', secret_changed: false, by: 'operator' }],
          ['provider.updated', { provider: added.id, kind: 'ldap', secret_changed: false, by: 'operator' }],
        ],
      );
    });

    it('keeps the OpenID and GitHub settings not named', async () => {
      const openid = await addProvider(deps, oidc({ scopes: ['email'], trust_upstream_mfa: false, domains: ['example.com'] }));
      const scoped = await updateProvider(deps, openid.id, { scopes: ['groups'] });
      assert.deepEqual(scoped.settings, { ...openid.settings, scopes: ['openid', 'groups'] }, 'openid stays among them');
      const repointed = await updateProvider(deps, openid.id, { issuer: 'https://new.example.com/', client_id: 'other' });
      assert.deepEqual(repointed.settings, { ...scoped.settings, issuer: 'https://new.example.com', clientId: 'other' });
      const gh = await addProvider(
        deps,
        github({ web_url: 'https://git.example.com', api_url: 'https://git.example.com/api/v3', allowed_organizations: ['octo-org'] }),
      );
      const limited = await updateProvider(deps, gh.id, { allowed_domains: ['example.com'] });
      assert.deepEqual(limited.settings, { ...gh.settings, allowedDomains: ['example.com'] });
      const cleared = await updateProvider(deps, gh.id, { allowed_organizations: [], allowed_domains: [] });
      assert.deepEqual(cleared.settings, { ...gh.settings, allowedOrganizations: [] }, 'an empty list given empties it');
    });

    it('refuses a change a rule forbids, naming the field, and leaves the provider as it was', async () => {
      const openid = await addProvider(deps, oidc());
      const directory = await addProvider(deps, ldap({ url: 'ldap://ldap.example.com' }));
      const cases: [string, string, ProviderInput, string][] = [
        ['another kind', openid.id, { kind: 'github' }, 'invalid:kind'],
        ['another id (it is in the redirect URI registered upstream)', openid.id, { id: 'renamed' }, 'invalid:id'],
        ['a name past 60 characters', openid.id, { name: 'N'.repeat(61) }, 'invalid:name'],
        ['a position below 0', openid.id, { position: -1 }, 'invalid:position'],
        ['an http issuer off loopback', openid.id, { issuer: 'http://sso.example.com' }, 'invalid:issuer'],
        ['a blank issuer', openid.id, { issuer: '' }, 'invalid:issuer'],
        ['a scope with a quote', openid.id, { scopes: ['"'] }, 'invalid:scopes'],
        ['an empty client secret', openid.id, { client_secret: '' }, 'invalid:client_secret'],
        ["a directory's field", openid.id, { user_filter: '(uid={username})' }, 'invalid:user_filter'],
        ['a claim that is not mapped', openid.id, { claim_mapping: { sub: 'id' } }, 'invalid:claim_mapping'],
        ['StartTLS once its url is ldaps://', directory.id, { url: 'ldaps://ldap.example.com', start_tls: true }, 'invalid:start_tls'],
        ['a url over https', directory.id, { url: 'https://ldap.example.com' }, 'invalid:url'],
        ['a filter without {username}', directory.id, { user_filter: '(uid=x)' }, 'invalid:user_filter'],
        ["an OpenID provider's field", directory.id, { issuer: 'https://sso.example.com' }, 'invalid:issuer'],
      ];
      for (const [what, id, input, expected] of cases) assert.equal(await outcome(() => updateProvider(deps, id, input)), expected, what);
      assert.deepEqual(await getProvider(deps, openid.id), openid);
      assert.deepEqual(await getProvider(deps, directory.id), directory);
      assert.equal(await outcome(() => updateProvider(deps, 'no-such-provider', { name: 'X' })), 'not_found');
    });

    it('refuses a blank name, client_id or search base on update, as add does', async () => {
      const openid = await addProvider(deps, oidc());
      const directory = await addProvider(deps, ldap());
      assert.equal(await outcome(() => updateProvider(deps, openid.id, { name: '  ' })), 'invalid:name');
      assert.equal(await outcome(() => updateProvider(deps, openid.id, { client_id: '  ' })), 'invalid:client_id');
      assert.equal(await outcome(() => updateProvider(deps, directory.id, { user_search_base: '  ' })), 'invalid:user_search_base');
    });
  });

  describe('who may trust a provider (authority.ts checkMayTrustProvider)', () => {
    const PROVIDERS_ONLY = ['admin:providers'];

    it('lets a caller managing providers add one that only makes new accounts, and not one that links accounts or vouches for a second factor', async () => {
      const narrow = as(...PROVIDERS_ONLY);
      assert.equal(await outcome(() => addProvider(narrow, oidc({ allow_linking: false, trust_upstream_mfa: false }))), 'ok');
      const linking = oidc();
      assert.equal(await outcome(() => addProvider(narrow, { ...linking, allow_linking: true })), 'forbidden:allow_linking');
      assert.equal(await outcome(() => addProvider(narrow, oidc({ trust_upstream_mfa: true }))), 'forbidden:trust_upstream_mfa');
      assert.equal(await outcome(() => addProvider(narrow, github({ allow_linking: true }))), 'forbidden:allow_linking');
      assert.equal(
        await outcome(() => addProvider(as(...ROLE_SCOPES.support), oidc({ allow_linking: true }))),
        'forbidden:allow_linking',
        'nor a support operator',
      );
      assert.equal(await outcome(() => getProvider(deps, providerIdFor(linking))), 'not_found', 'nothing was added');
      assert.equal(await outcome(() => addProvider(as(...ROLE_SCOPES.admin), oidc({ allow_linking: true }))), 'ok', 'a caller holding every role scope may');
    });

    it('lets only a caller holding every admin scope turn linking or trusted mfa on, or change anything but the name and place of a provider that has them', async () => {
      const narrow = as(...PROVIDERS_ONLY);
      const plain = await addProvider(narrow, oidc());
      assert.equal(await outcome(() => updateProvider(narrow, plain.id, { allow_linking: true })), 'forbidden:allow_linking');
      assert.equal(await outcome(() => updateProvider(narrow, plain.id, { trust_upstream_mfa: true, name: 'Vouching' })), 'forbidden:trust_upstream_mfa');
      const trusted = await addProvider(deps, oidc({ allow_linking: true, trust_upstream_mfa: true }));
      const cases: [string, ProviderInput, string][] = [
        ['another issuer', { issuer: 'https://evil.example' }, 'forbidden:issuer'],
        ['another client', { client_id: 'attacker-app' }, 'forbidden:client_id'],
        ['another secret', { client_secret: 'another secret' }, 'forbidden:client_secret'],
        ['another mapping', { claim_mapping: { email: 'name' } }, 'forbidden:claim_mapping'],
        ['other domains', { allowed_domains: ['example.org'] }, 'forbidden:allowed_domains'],
        ['linking off, named first among the changes', { scopes: ['email'], allow_linking: false }, 'forbidden:allow_linking'],
        ['trusted mfa off', { trust_upstream_mfa: false }, 'forbidden:trust_upstream_mfa'],
        ['its name and place', { name: 'Trusted', position: 3 }, 'ok'],
        ['its kind and id as they are', { kind: 'oidc', id: trusted.id }, 'ok'],
      ];
      for (const [what, input, expected] of cases) assert.equal(await outcome(() => updateProvider(narrow, trusted.id, input)), expected, what);
      const linking = await addProvider(deps, oidc({ allow_linking: true }));
      assert.equal(
        await outcome(() => updateProvider(narrow, linking.id, { allow_linking: false, domains: ['example.com'] })),
        'forbidden:allow_linking',
        "linking before the change is enough: turning it off is the owner's too",
      );
      const now = await getProvider(deps, trusted.id);
      assert.deepEqual(now.settings, trusted.settings, 'nothing refused was changed');
      assert.deepEqual(now.secret, trusted.secret);
      assert.equal(await outcome(() => updateProvider(deps, trusted.id, { allow_linking: false, trust_upstream_mfa: false })), 'ok', 'the owner may');
    });

    it('lets only a caller holding every admin scope repoint a provider people already sign in through; its secret may be rotated, and one nobody uses repointed', async () => {
      const narrow = as(...PROVIDERS_ONLY);
      const used = await addProvider(narrow, oidc());
      const unused = await addProvider(narrow, oidc());
      const directory = await addProvider(narrow, ldap({ bind_dn: 'cn=tessera,dc=example,dc=com', bind_password: BIND_PASSWORD }));
      await linkSomeone(used.id);
      await linkSomeone(directory.id);
      const cases: [string, string, ProviderInput, string][] = [
        ['another issuer', used.id, { issuer: 'https://evil.example' }, 'forbidden:issuer'],
        ['another client', used.id, { client_id: 'attacker-app' }, 'forbidden:client_id'],
        ['another mapping', used.id, { claim_mapping: { username: 'name' } }, 'forbidden:claim_mapping'],
        ['a new secret for the same client', used.id, { client_secret: 'rotated upstream secret' }, 'ok'],
        ['other scopes', used.id, { scopes: ['email'] }, 'ok'],
        ['a provider nobody signs in through', unused.id, { issuer: 'https://other.example' }, 'ok'],
        ['another directory', directory.id, { url: 'ldaps://evil.example' }, 'forbidden:url'],
        ['another search base', directory.id, { user_search_base: 'dc=evil' }, 'forbidden:user_search_base'],
        ['another filter', directory.id, { user_filter: '(cn={username})' }, 'forbidden:user_filter'],
        ['another bind password', directory.id, { bind_password: 'another password' }, 'forbidden:bind_password'],
        ['StartTLS off', directory.id, { start_tls: false }, 'forbidden:start_tls'],
        ["the directory's group search", directory.id, { group_search_base: 'ou=groups,dc=example,dc=com' }, 'ok'],
      ];
      for (const [what, id, input, expected] of cases) assert.equal(await outcome(() => updateProvider(narrow, id, input)), expected, what);
      assert.equal((await getProvider(deps, used.id)).settings['issuer'], 'https://sso.example.com');
      assert.equal(await outcome(() => updateProvider(deps, used.id, { issuer: 'https://new.example.com' })), 'ok', 'the owner may');
    });
  });

  describe('listing and removing', () => {
    it('lists providers in the order of their buttons', async () => {
      const listed = await listProviders(deps);
      assert.ok(listed.length > 1);
      const order = listed.map((provider) => [provider.position, provider.id] as const);
      const sorted = [...order].sort((a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : 1));
      assert.deepEqual(order, sorted);
    });

    it('removes a provider and the links through it, keeps the users, and then finds it no more', async () => {
      const added = await addProvider(deps, oidc());
      const person = await linkSomeone(added.id);
      later();
      await removeProvider(deps, added.id);
      assert.equal(await outcome(() => getProvider(deps, added.id)), 'not_found');
      assert.equal(
        (await listProviders(deps)).some((provider) => provider.id === added.id),
        false,
      );
      assert.equal(await world.store.linkedIdentities.get(added.id, `upstream-${person.id}`), null, 'nobody signs in through it any more');
      assert.ok(await world.store.users.get(person.id), 'the user it signed in stays');
      assert.deepEqual(
        (await eventsOf(added.id)).map((event) => [event.type, event.detail]),
        [
          ['provider.created', { provider: added.id, kind: 'oidc', by: 'operator' }],
          ['provider.removed', { provider: added.id, kind: 'oidc', by: 'operator' }],
        ],
      );
      assert.equal(await outcome(() => removeProvider(deps, added.id)), 'not_found', 'removed once');
      assert.equal(await outcome(() => updateProvider(deps, added.id, { name: 'Back' })), 'not_found');
      assert.equal(await outcome(() => addProvider(deps, oidc({ id: added.id }))), 'ok', 'its id is free again');
    });
  });
});
