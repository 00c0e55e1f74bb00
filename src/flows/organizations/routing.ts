/**
 * Where an e-mail domain signs in (docs/organizations.md, docs/identity-providers.md): a
 * provider whose `--domain` names it, else the upstream provider of the organization whose
 * verified domain it is. Asked of the `login_hint` (OIDC Core §3.1.2.1) or `domain_hint` of
 * an authorization request, and of the address typed on the sign-in page before any password
 * is checked: the answer depends on the domain alone, never on whether an account exists.
 */
import type { IdentityProviderRecord, Store } from '../../store/types.ts';
import { providerSettings } from '../upstream/settings.ts';

/** The provider `domain` (lower-cased) signs in through, among `providers`; null: this server's own sign-in. */
export async function providerForDomain(
  store: Pick<Store, 'organizations'>,
  providers: readonly IdentityProviderRecord[],
  domain: string | null,
): Promise<IdentityProviderRecord | null> {
  if (domain === null || domain === '') return null;
  const named = providers.find((provider) => providerSettings(provider).domains.includes(domain));
  if (named !== undefined) return named;
  const organization = await store.organizations.byVerifiedDomain(domain);
  if (organization?.providerId == null) return null;
  return providers.find((provider) => provider.id === organization.providerId) ?? null;
}
