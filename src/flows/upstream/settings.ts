/**
 * What each kind of upstream provider is configured with, read from its stored record
 * (`IdentityProviderRecord.settings`, checked when the operator wrote it: flows/manage/providers.ts).
 */
import { UPSTREAM_SIGN_IN_PATH } from '../../core/endpoints.ts';
import type { IdentityProviderRecord } from '../../store/identity-providers.ts';

/** The Tessera claims an upstream claim or directory attribute may fill. */
export const MAPPED_CLAIMS = ['username', 'name', 'given_name', 'family_name', 'email', 'picture', 'locale', 'zoneinfo', 'groups'] as const;
export type MappedClaim = (typeof MAPPED_CLAIMS)[number];

interface CommonSettings {
  /** The only way in: the sign-in page sends the browser straight to this provider. */
  readonly only: boolean;
  /**
   * A first sign-in whose verified e-mail address is an existing user's links to that user;
   * otherwise (the default) such a sign-in is refused rather than make a second account.
   */
  readonly allowLinking: boolean;
  /** The e-mail domains allowed to sign in through it; empty: any. */
  readonly allowedDomains: readonly string[];
  /** E-mail domains sent to this provider from the sign-in page (`login_hint`, or the address typed). */
  readonly domains: readonly string[];
  /** Which upstream claim (or directory attribute) fills each Tessera claim, where not the usual one. */
  readonly claimMapping: Readonly<Partial<Record<MappedClaim, string>>>;
}

export interface OidcSettings extends CommonSettings {
  readonly kind: 'oidc';
  /** The OpenID provider's issuer identifier: discovery is at its /.well-known/openid-configuration. */
  readonly issuer: string;
  readonly clientId: string;
  /** Asked for upstream; `openid` always among them. */
  readonly scopes: readonly string[];
  /**
   * The operator takes the provider's word (`amr` containing `mfa`) that it checked two
   * factors: the session then counts as a second-factor sign-in here. Off by default: the
   * `mfa` is dropped and the sign-in is one factor at most.
   */
  readonly trustUpstreamMfa: boolean;
}

export interface GithubSettings extends CommonSettings {
  readonly kind: 'github';
  readonly clientId: string;
  /** Organisations one of which the person must belong to; empty: anyone with a GitHub account. */
  readonly allowedOrganizations: readonly string[];
  /** Where GitHub's web pages are (https://github.com, or a GitHub Enterprise Server). */
  readonly webUrl: string;
  /** Where its REST API is (https://api.github.com, or a GitHub Enterprise Server's /api/v3). */
  readonly apiUrl: string;
}

export interface LdapSettings extends CommonSettings {
  readonly kind: 'ldap';
  /** ldap:// or ldaps:// */
  readonly url: string;
  /** Upgrade an ldap:// connection with StartTLS (RFC 4511 §4.14) before anything is sent. */
  readonly startTls: boolean;
  /** Whom Tessera binds as to search; null: searches anonymously. */
  readonly bindDn: string | null;
  readonly userSearchBase: string;
  /** An RFC 4515 filter with `{username}` where the typed username goes (escaped). */
  readonly userFilter: string;
  /** Where groups are searched; null: no groups. */
  readonly groupSearchBase: string | null;
  /** An RFC 4515 filter with `{dn}` (the user's entry) or `{username}`. */
  readonly groupFilter: string;
}

export type ProviderSettings = OidcSettings | GithubSettings | LdapSettings;

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : []);
const text = (value: unknown, fallback = ''): string => (typeof value === 'string' ? value : fallback);
const textOrNull = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null);

/** The provider's settings as its kind reads them. */
export function providerSettings(provider: IdentityProviderRecord): ProviderSettings {
  const s = provider.settings;
  const mapping: Partial<Record<MappedClaim, string>> = {};
  const rawMapping = s['claimMapping'];
  if (rawMapping && typeof rawMapping === 'object') {
    for (const claim of MAPPED_CLAIMS) {
      const from = (rawMapping as Record<string, unknown>)[claim];
      if (typeof from === 'string') mapping[claim] = from;
    }
  }
  const common: CommonSettings = {
    only: s['only'] === true,
    allowLinking: s['allowLinking'] === true,
    allowedDomains: strings(s['allowedDomains']),
    domains: strings(s['domains']),
    claimMapping: mapping,
  };
  switch (provider.kind) {
    case 'oidc':
      return {
        ...common,
        kind: 'oidc',
        issuer: text(s['issuer']),
        clientId: text(s['clientId']),
        scopes: strings(s['scopes']),
        trustUpstreamMfa: s['trustUpstreamMfa'] === true,
      };
    case 'github':
      return {
        ...common,
        kind: 'github',
        clientId: text(s['clientId']),
        allowedOrganizations: strings(s['allowedOrganizations']),
        webUrl: text(s['webUrl'], 'https://github.com'),
        apiUrl: text(s['apiUrl'], 'https://api.github.com'),
      };
    case 'ldap':
      return {
        ...common,
        kind: 'ldap',
        url: text(s['url']),
        startTls: s['startTls'] === true,
        bindDn: textOrNull(s['bindDn']),
        userSearchBase: text(s['userSearchBase']),
        userFilter: text(s['userFilter'], '(uid={username})'),
        groupSearchBase: textOrNull(s['groupSearchBase']),
        groupFilter: text(s['groupFilter'], '(member={dn})'),
      };
  }
}

/** Where the upstream provider sends the browser back: what the operator registers there. */
export function upstreamRedirectUri(issuer: string, providerId: string): string {
  return `${issuer}${UPSTREAM_SIGN_IN_PATH}/${encodeURIComponent(providerId)}/callback`;
}
