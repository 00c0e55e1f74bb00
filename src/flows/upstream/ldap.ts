/**
 * A password checked against an LDAP directory or Active Directory, with
 * ldapts: bind as the service account (or anonymously), search the person's entry with the
 * operator's filter, the typed username escaped (RFC 4515 §3: `*`, `(`, `)`, `\` and NUL as
 * `\XX`, so a username cannot change the filter), then bind as that entry with the
 * password (RFC 4513 §5.1.3). Their groups are searched with the service account's rights.
 */
import { createRequire } from 'node:module';
import type * as Ldapts from 'ldapts';
import type { Entry } from 'ldapts';
import { PASSWORD_ONLY } from '../../core/auth-methods.ts';
import type { IdentityProviderRecord } from '../../store/identity-providers.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';
import type { FlowDeps } from '../types.ts';
import type { UpstreamIdentity } from './accounts.ts';
import { UpstreamFailure } from './oidc.ts';
import type { LdapSettings, MappedClaim } from './settings.ts';

/** The directory attributes the standard claims come from, unless the operator mapped others (inetOrgPerson, RFC 2798). */
const DEFAULT_ATTRIBUTES: Readonly<Record<Exclude<MappedClaim, 'groups'>, string | null>> = {
  username: 'uid',
  name: 'cn',
  given_name: 'givenName',
  family_name: 'sn',
  email: 'mail',
  picture: null,
  locale: 'preferredLanguage',
  zoneinfo: null,
};

/** ldapts, loaded with the first directory asked or filter checked (manage/providers.ts): most servers have none (about 0.5 MiB). */
let ldaptsModule: typeof Ldapts | undefined;
export const ldapts = (): typeof Ldapts => (ldaptsModule ??= createRequire(import.meta.url)('ldapts') as typeof Ldapts);

/** A filter with the person's values put in, each escaped (RFC 4515 §3). */
export function ldapFilter(template: string, values: Readonly<Record<string, string>>): string {
  return Object.entries(values).reduce((filter, [name, value]) => filter.replaceAll(`{${name}}`, ldapts().Filter.escape(value)), template);
}

function attribute(entry: Entry, name: string | null): string | null {
  if (name === null) return null;
  // Attribute names are case-insensitive (RFC 4512 §2.5); ldapts keeps the server's spelling.
  const key = Object.keys(entry).find((candidate) => candidate.toLowerCase() === name.toLowerCase());
  const value = key === undefined ? undefined : entry[key];
  const first = Array.isArray(value) ? value[0] : value;
  const text = Buffer.isBuffer(first) ? first.toString('utf8') : first;
  return typeof text === 'string' && text.trim() !== '' ? text.trim() : null;
}

/** What a directory error means to the person: the directory down or slow, or refusing Tessera's own bind. */
function directoryFailure(error: unknown): UpstreamFailure {
  if (error instanceof UpstreamFailure) return error;
  return new UpstreamFailure('unavailable', error instanceof Error ? `${error.name}: ${error.message}` : String(error), { cause: error });
}

/**
 * Checks `password` for `username` in the directory: whether it matched and, if so, who
 * they are there. An unknown username or a wrong password is `matches: false`; a directory
 * that cannot be reached, is too slow or refuses the service account throws `UpstreamFailure`
 * (`unavailable`).
 */
export async function checkLdapPassword(
  deps: Pick<FlowDeps, 'config' | 'clock'> & { readonly secrets: SecretBox },
  provider: IdentityProviderRecord,
  settings: LdapSettings,
  username: string,
  password: string,
): Promise<{ readonly matches: boolean; readonly found: UpstreamIdentity | null }> {
  // RFC 4513 §5.1.2: a bind with a name and an empty password is an unauthenticated bind,
  // which many servers answer with success. It proves nothing: refused before asking.
  if (!username || !password) return { matches: false, found: null };
  const timeout = deps.config.upstream.timeout * 1000;
  const { Client, InvalidCredentialsError } = ldapts();
  const client = new Client({ url: settings.url, timeout, connectTimeout: timeout, strictDN: false });
  try {
    if (settings.startTls) await client.startTLS();
    if (settings.bindDn !== null) await client.bind(settings.bindDn, provider.secret === null ? '' : deps.secrets.open(provider.id, provider.secret));
    const mapping = settings.claimMapping;
    const attributeOf = (claim: Exclude<MappedClaim, 'groups'>) => mapping[claim] ?? DEFAULT_ATTRIBUTES[claim];
    const wanted = (Object.keys(DEFAULT_ATTRIBUTES) as Exclude<MappedClaim, 'groups'>[]).map(attributeOf).filter((name): name is string => name !== null);
    const { searchEntries } = await client.search(settings.userSearchBase, {
      scope: 'sub',
      filter: ldapFilter(settings.userFilter, { username }),
      attributes: wanted,
      // Two are enough to know the username is not one person's.
      sizeLimit: 2,
      timeLimit: deps.config.upstream.timeout,
    });
    if (searchEntries.length !== 1) return { matches: false, found: null };
    const entry = searchEntries[0]!;
    let groups: string[] = [];
    if (settings.groupSearchBase !== null) {
      const groupName = mapping.groups ?? 'cn';
      const found = await client.search(settings.groupSearchBase, {
        scope: 'sub',
        filter: ldapFilter(settings.groupFilter, { dn: entry.dn, username }),
        attributes: [groupName],
        sizeLimit: 500,
        timeLimit: deps.config.upstream.timeout,
      });
      groups = found.searchEntries.map((group) => attribute(group, groupName)).filter((name): name is string => name !== null);
    }
    try {
      await client.bind(entry.dn, password);
    } catch (error) {
      if (error instanceof InvalidCredentialsError) return { matches: false, found: null };
      throw error;
    }
    const email = attribute(entry, attributeOf('email'));
    const login = attribute(entry, attributeOf('username')) ?? username;
    return {
      matches: true,
      found: {
        subject: entry.dn,
        label: login,
        username: login,
        email,
        // The operator's own directory is the record of its people's addresses.
        emailVerified: email !== null,
        name: attribute(entry, attributeOf('name')),
        givenName: attribute(entry, attributeOf('given_name')),
        familyName: attribute(entry, attributeOf('family_name')),
        picture: attribute(entry, attributeOf('picture')),
        locale: attribute(entry, attributeOf('locale')),
        zoneinfo: attribute(entry, attributeOf('zoneinfo')),
        groups,
        // The directory checked the password the person typed here: that is all it proved, and now.
        amr: PASSWORD_ONLY,
        authTime: deps.clock.now(),
      },
    };
  } catch (error) {
    throw directoryFailure(error);
  } finally {
    await client.unbind().catch(() => undefined);
  }
}
