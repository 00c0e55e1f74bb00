/**
 * Where an e-mail domain signs in (providerForDomain), over organizations made by the same
 * operations as `tessera org add|update|remove` (flows/manage/organizations.ts): a provider's
 * own `--domain` first, else the provider of the organization whose verified domain it is, else
 * this server's own sign-in. Domains are compared lower-cased: the organization's as it is
 * stored, the one asked about as its callers give it (emailDomain, the `domain_hint` trimmed
 * and lower-cased). test/organizations-browser.test.ts and test/upstream-oidc.test.ts follow a
 * routed sign-in through the pages, by `login_hint` and by the address typed.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { IdentityProviderRecord } from '../../store/types.ts';
import { flowWorld, oidcProviderRecord, type FlowWorld } from '../../../test/helpers/flows.ts';
import { addOrganization, removeOrganization, updateOrganization } from '../manage/organizations.ts';
import { emailDomain } from '../upstream/accounts.ts';
import { providerForDomain } from './routing.ts';

const SSO = oidcProviderRecord('acme-sso');
const NAMED = oidcProviderRecord('named', { domains: ['named.example', 'both.example'] });

describe('where an e-mail domain signs in (flows/organizations/routing.ts)', () => {
  let world: FlowWorld;
  let providers: IdentityProviderRecord[];

  before(async () => {
    world = await flowWorld();
    for (const record of [SSO, NAMED]) await world.store.identityProviders.create(record);
    providers = await world.store.identityProviders.list();
    const org = (name: string, input: Parameters<typeof addOrganization>[1]) => addOrganization(world.manage, { name, ...input });
    await org('Acme', { domain: 'Acme.EXAMPLE', domain_verified: true, provider: SSO.id });
    await org('Pending', { domain: 'pending.example', provider: SSO.id });
    await org('Without provider', { domain: 'alone.example', domain_verified: true });
    await org('Both', { domain: 'both.example', domain_verified: true, provider: SSO.id });
  });
  after(() => world.close());

  const routed = async (domain: string | null, among = providers) => (await providerForDomain(world.store, among, domain))?.id ?? null;

  it("sends a verified domain to its organization's provider, and every other domain to this server's own sign-in", async () => {
    const cases: [string, string | null, string | null][] = [
      ["an organization's verified domain, stored lower-cased", 'acme.example', SSO.id],
      ['an address of it, written otherwise', emailDomain('Pat@ACME.Example'), SSO.id],
      ['a domain given but not verified', 'pending.example', null],
      ['a verified domain with no provider', 'alone.example', null],
      ['a domain no organization has', 'unknown.example', null],
      ['a subdomain of a verified domain', 'eu.acme.example', null],
      ['a parent of a verified domain', 'example', null],
      ["a provider's own --domain", 'named.example', NAMED.id],
      ["a subdomain of a provider's --domain", 'eu.named.example', null],
      ["a provider's --domain, written otherwise by the caller (callers lower-case it)", emailDomain('pat@Named.Example'), NAMED.id],
      ["a provider's --domain, though an organization verified it too", 'both.example', NAMED.id],
      ['no domain (an address without one)', emailDomain('pat'), null],
      ['an empty domain', '', null],
    ];
    for (const [what, domain, expected] of cases) assert.equal(await routed(domain), expected, what);
  });

  it('sends no one to a provider not among those given', async () => {
    assert.equal(await routed('acme.example', [NAMED]), null);
    assert.equal(await routed('named.example', [SSO]), null);
  });

  it('follows the organization: unverified, moved or removed, its old domain signs in here', async () => {
    await addOrganization(world.manage, { name: 'Moving', domain: 'moving.example', domain_verified: true, provider: SSO.id });
    assert.equal(await routed('moving.example'), SSO.id);
    await updateOrganization(world.manage, 'Moving', { domain: 'moved.example' });
    assert.deepEqual([await routed('moving.example'), await routed('moved.example')], [null, null], 'a new domain routes once verified again');
    await updateOrganization(world.manage, 'Moving', { domain_verified: true });
    assert.equal(await routed('moved.example'), SSO.id);
    await updateOrganization(world.manage, 'Moving', { domain_verified: false });
    assert.equal(await routed('moved.example'), null);
    await updateOrganization(world.manage, 'Moving', { domain_verified: true, provider: null });
    assert.equal(await routed('moved.example'), null, 'its provider taken away');
    await updateOrganization(world.manage, 'Moving', { provider: SSO.id });
    assert.equal(await routed('moved.example'), SSO.id);
    await removeOrganization(world.manage, 'Moving');
    assert.equal(await routed('moved.example'), null);
  });
});
