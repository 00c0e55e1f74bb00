/**
 * What an upstream identity provider is (docs/identity-providers.md): the one table the admin
 * API's schemas, the console's provider forms and `tessera provider add` / `update` derive
 * from (fields/field.ts). A provider is of a kind (an OpenID provider, GitHub or an LDAP
 * directory); a row that names `kinds` applies to those alone, and the operation refuses it
 * for another. Secrets are write-only: given (on the command line from standard input), never
 * answered; an answer says whether one is set. The rules each value must follow are
 * flows/manage/providers.ts's.
 */
import type { Field } from './field.ts';

export const PROVIDER_KIND_CHOICES = ['oidc', 'github', 'ldap'] as const;
export const MAX_PROVIDER_NAME = 60;
/** Longer than any real secret, URL or directory name; bounds what is stored. */
export const MAX_PROVIDER_TEXT = 1024;

const OAUTH = ['oidc', 'github'];
const TEXT = { kind: 'text', max: MAX_PROVIDER_TEXT } as const;

export const PROVIDER_FIELDS = [
  {
    // The command's first argument (`provider add oidc`); the console asks for it before the form.
    name: 'kind', type: { kind: 'choice', choices: PROVIDER_KIND_CHOICES }, description: 'An OpenID provider, GitHub (or GitHub Enterprise), or an LDAP directory; it cannot change',
    create: true, update: false, required: true, cli: null, form: null,
  },
  {
    name: 'id', type: { kind: 'text', max: 40 }, description: 'Its id, in its redirect URI: made from its name unless given; it cannot change',
    create: true, update: false, cli: { option: 'id', value: 'ID' }, form: { control: 'text', label: 'console.provider.id', hint: 'console.provider.id.hint' },
  },
  {
    name: 'name', type: { kind: 'text', max: MAX_PROVIDER_NAME }, description: 'What its sign-in button says ("Continue with NAME")', create: true, update: true, required: true,
    cli: { option: 'name', value: 'NAME' }, form: { control: 'text', label: 'console.provider.name', required: true },
  },
  {
    name: 'position', type: { kind: 'integer', min: 0, max: 1_000_000 }, description: 'Where its button stands among the others (lowest first); after the last unless given',
    create: true, update: true, cli: { option: 'position', value: 'N' }, form: { control: 'number', label: 'console.provider.position' },
  },
  {
    name: 'issuer', type: TEXT, description: "The OpenID provider's issuer URL, whose discovery document is read", kinds: ['oidc'], requiredKinds: ['oidc'],
    create: true, update: true, cli: { option: 'issuer', value: 'URL' }, form: { control: 'text', label: 'console.provider.issuer' },
  },
  {
    name: 'client_id', type: TEXT, description: 'The client id the provider gave Tessera', kinds: OAUTH, requiredKinds: OAUTH,
    create: true, update: true, cli: { option: 'client-id', value: 'ID' }, form: { control: 'text', label: 'console.provider.clientId' },
  },
  {
    name: 'client_secret', type: TEXT, description: 'The client secret the provider gave Tessera; given replaces the stored one, never answered', kinds: OAUTH, requiredKinds: ['github'], writeOnly: true,
    create: true, update: true, cli: { option: 'client-secret-stdin', stdin: true }, form: { control: 'secret', label: 'console.provider.clientSecret', hint: 'console.provider.secret.hint' },
  },
  {
    name: 'scopes', type: { kind: 'list', maxItems: 50, max: 128 }, description: 'The scopes asked of it (openid always; profile and email unless given)', kinds: ['oidc'],
    create: true, update: true, cli: { option: 'scope', value: 'SCOPE', replaces: true }, form: { control: 'area', label: 'console.provider.scopes' },
  },
  {
    name: 'trust_upstream_mfa', type: { kind: 'flag' }, description: 'Its amr "mfa" counts as a second factor here (needs every admin scope)', kinds: ['oidc'],
    create: true, update: true, cli: { option: 'trust-upstream-mfa' }, form: { control: 'check', label: 'console.provider.trustUpstreamMfa', group: 'options' },
  },
  {
    name: 'allowed_organizations', type: { kind: 'list', maxItems: 100, max: 39 }, description: 'Only members of these GitHub organisations sign in', kinds: ['github'],
    create: true, update: true, cli: { option: 'allowed-organization', value: 'ORG', replaces: true }, form: { control: 'area', label: 'console.provider.allowedOrganizations' },
  },
  {
    name: 'web_url', type: TEXT, description: 'GitHub Enterprise: its web address (https://github.com unless given)', kinds: ['github'],
    create: true, update: true, cli: { option: 'web-url', value: 'URL' }, form: { control: 'text', label: 'console.provider.webUrl' },
  },
  {
    name: 'api_url', type: TEXT, description: 'GitHub Enterprise: its API address (https://api.github.com unless given)', kinds: ['github'],
    create: true, update: true, cli: { option: 'api-url', value: 'URL' }, form: { control: 'text', label: 'console.provider.apiUrl' },
  },
  {
    name: 'url', type: TEXT, description: "The directory's address: ldaps://HOST, or ldap://HOST with start_tls", kinds: ['ldap'], requiredKinds: ['ldap'],
    create: true, update: true, cli: { option: 'url', value: 'ldaps://HOST' }, form: { control: 'text', label: 'console.provider.url' },
  },
  {
    name: 'start_tls', type: { kind: 'flag' }, description: 'Encrypt an ldap:// connection with StartTLS', kinds: ['ldap'],
    create: true, update: true, cli: { option: 'start-tls' }, form: { control: 'check', label: 'console.provider.startTls', group: 'options' },
  },
  {
    name: 'bind_dn', type: { kind: 'text', max: MAX_PROVIDER_TEXT, nullable: true }, description: 'Who Tessera searches the directory as; null: anonymously', kinds: ['ldap'],
    create: true, update: true, cli: { option: 'bind-dn', value: 'DN' }, form: { control: 'text', label: 'console.provider.bindDn' },
  },
  {
    name: 'bind_password', type: TEXT, description: "The bind DN's password; given replaces the stored one, never answered", kinds: ['ldap'], writeOnly: true,
    create: true, update: true, cli: { option: 'bind-password-stdin', stdin: true }, form: { control: 'secret', label: 'console.provider.bindPassword', hint: 'console.provider.secret.hint' },
  },
  {
    name: 'user_search_base', type: TEXT, description: 'Where people are searched, such as ou=people,dc=example,dc=com', kinds: ['ldap'], requiredKinds: ['ldap'],
    create: true, update: true, cli: { option: 'user-search-base', value: 'DN' }, form: { control: 'text', label: 'console.provider.userSearchBase' },
  },
  {
    name: 'user_filter', type: TEXT, description: 'How a person is found, {username} where what they typed goes ((uid={username}) unless given)', kinds: ['ldap'],
    create: true, update: true, cli: { option: 'user-filter', value: '"(uid={username})"' }, form: { control: 'text', label: 'console.provider.userFilter' },
  },
  {
    name: 'group_search_base', type: { kind: 'text', max: MAX_PROVIDER_TEXT, nullable: true }, description: "Where a person's groups are searched; null: not at all", kinds: ['ldap'],
    create: true, update: true, cli: { option: 'group-search-base', value: 'DN', clear: 'no-group-search' }, form: { control: 'text', label: 'console.provider.groupSearchBase' },
  },
  {
    name: 'group_filter', type: TEXT, description: "How a person's groups are found ((member={dn}) unless given)", kinds: ['ldap'],
    create: true, update: true, cli: { option: 'group-filter', value: '"(member={dn})"' }, form: { control: 'text', label: 'console.provider.groupFilter' },
  },
  {
    name: 'allowed_domains', type: { kind: 'list', maxItems: 100, max: 253 }, description: 'Only people whose verified e-mail address is in these domains sign in',
    create: true, update: true, cli: { option: 'allowed-domain', value: 'DOMAIN', replaces: true }, form: { control: 'area', label: 'console.provider.allowedDomains' },
  },
  {
    name: 'domains', type: { kind: 'list', maxItems: 100, max: 253 }, description: 'An address typed in these domains on the sign-in page goes to it',
    create: true, update: true, cli: { option: 'domain', value: 'DOMAIN', replaces: true }, form: { control: 'area', label: 'console.provider.domains' },
  },
  {
    name: 'claim_mapping', type: { kind: 'pairs', maxItems: 20, keyMax: 100, valueMax: 100 }, description: 'Which upstream claim or attribute fills a Tessera claim: {"username": "preferred_username"}',
    create: true, update: true, cli: { option: 'claim-mapping', value: 'CLAIM=UPSTREAM' }, form: { control: 'area', label: 'console.provider.claimMapping', hint: 'console.provider.claimMapping.hint' },
  },
  {
    name: 'only', type: { kind: 'flag' }, description: 'The only way in: the sign-in page goes straight to it',
    create: true, update: true, cli: { option: 'only' }, form: { control: 'check', label: 'console.provider.only', group: 'options' },
  },
  {
    name: 'allow_linking', type: { kind: 'flag' }, description: "A verified e-mail address of an existing user signs in as that user (needs every admin scope)",
    create: true, update: true, cli: { option: 'allow-linking' }, form: { control: 'check', label: 'console.provider.allowLinking', group: 'options' },
  },
  // Read only: what the server says of a provider.
  { name: 'client_secret_set', type: { kind: 'flag' }, description: 'Whether a client secret is stored', kinds: OAUTH, create: false, update: false, cli: null, form: null },
  { name: 'bind_password_set', type: { kind: 'flag' }, description: 'Whether a bind password is stored', kinds: ['ldap'], create: false, update: false, cli: null, form: null },
  { name: 'redirect_uri', type: { kind: 'text', max: 2048 }, description: 'The redirect URI to register with the provider', kinds: OAUTH, create: false, update: false, cli: null, form: null },
  { name: 'created_at', type: { kind: 'text', max: 40 }, description: 'When it was added', create: false, update: false, cli: null, form: null },
  { name: 'updated_at', type: { kind: 'text', max: 40 }, description: 'When it last changed', create: false, update: false, cli: null, form: null },
] as const satisfies readonly Field[];

/** The fields every answer about a provider has; the others as its kind has them. */
export const PROVIDER_ALWAYS = ['id', 'kind', 'name', 'position', 'only', 'allow_linking', 'allowed_domains', 'domains', 'claim_mapping', 'created_at', 'updated_at'] as const;
