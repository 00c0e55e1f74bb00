/** The scopes this server knows (OIDC Core §5.4 and §11), with what each means to the user. */
export const SCOPE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  openid: 'Sign you in and know who you are',
  profile: 'See your name, nickname, username, picture, web pages, gender, birthdate, language and time zone',
  email: 'See your email address',
  address: 'See your postal address',
  phone: 'See your phone number',
  offline_access: 'Stay connected while you are away (until you revoke it)',
  // The groups an upstream provider or directory says the person is in.
  groups: 'See the groups you belong to',
  // The organization the person signs in for (docs/organizations.md): org_id and org_name.
  organization: 'Know which organization you sign in for',
};

export const SUPPORTED_SCOPES: readonly string[] = Object.keys(SCOPE_DESCRIPTIONS);

/**
 * The admin API's scopes (docs/admin-api.md): `admin:AREA` reads and changes an area,
 * `admin:AREA:read` only reads it. Given only to clients of the client_credentials grant alone.
 */
export const ADMIN_SCOPE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  'admin:clients': 'Manage clients',
  'admin:clients:read': 'Read clients',
  'admin:users': 'Manage users, their approvals, sessions, device requests and lockouts',
  'admin:users:read': 'Read users, their approvals, sessions, device requests and lockouts',
  'admin:resources': 'Manage APIs and their scopes',
  'admin:resources:read': 'Read APIs and their scopes',
  'admin:events': 'Read the audit trail',
  'admin:events:read': 'Read the audit trail',
  'admin:keys': 'Rotate signing keys',
  'admin:keys:read': 'Read signing keys',
  'admin:providers': 'Manage upstream identity providers',
  'admin:providers:read': 'Read upstream identity providers',
  // A webhook sends the audit trail's user and client events to a URL of its adder's choosing.
  'admin:webhooks': 'Manage webhooks, which send user and client events out (with admin:events or admin:events:read to add one)',
  'admin:webhooks:read': 'Read webhooks and their deliveries',
  // A SAML service provider is sent signed statements about the people who sign in to it.
  'admin:saml': 'Manage SAML service providers',
  'admin:saml:read': 'Read SAML service providers',
  // An organization's verified domain sends its people's sign-in to an upstream provider,
  // which setting also needs admin:providers (flows/manage/authority.ts).
  'admin:orgs': 'Manage organizations and their members',
  'admin:orgs:read': 'Read organizations and their members',
  // SCIM 2.0 (docs/scim.md): a provisioning client's token for <issuer>/admin with this scope
  // calls <issuer>/scim/v2 as a SCIM token does; it opens no admin API operation.
  scim: 'Provision people and groups over SCIM 2.0 (<issuer>/scim/v2)',
};

export const ADMIN_SCOPES: readonly string[] = Object.keys(ADMIN_SCOPE_DESCRIPTIONS);

/**
 * The Shared Signals receivers' scope (docs/events.md): a client holding it manages its own
 * event streams (SSF 1.0 §8), which carry every person's account and session events. Given,
 * like admin scopes, only to clients of the client_credentials grant alone, by the operator.
 */
export const SSF_SCOPE = 'ssf:manage';
export const SSF_SCOPE_DESCRIPTIONS: Readonly<Record<string, string>> = {
  [SSF_SCOPE]: 'Receive security events (Shared Signals: CAEP and RISC) about every account, through streams of its own',
};

/** The scopes given by the operator alone, to clients of the client_credentials grant alone. */
export const OPERATOR_GIVEN_SCOPES: readonly string[] = [...ADMIN_SCOPES, SSF_SCOPE];

/** The SSF management API's audience: the `resource` a receiver asks its tokens for (RFC 8707). */
export function ssfAudience(issuer: string): string {
  return `${issuer}/ssf`;
}

/**
 * The roles a person may be given for the operator console: `admin` manages
 * everything, `support` manages users and reads the rest, `viewer` reads. A role is the set
 * of admin scopes it stands for, so the console's permission checks are the admin API's.
 */
export const OPERATOR_ROLES = ['admin', 'support', 'viewer'] as const;
export type OperatorRole = (typeof OPERATOR_ROLES)[number];

export function isOperatorRole(value: string): value is OperatorRole {
  return (OPERATOR_ROLES as readonly string[]).includes(value);
}

const READ_SCOPES = ADMIN_SCOPES.filter((scope) => scope.endsWith(':read'));

export const ROLE_SCOPES: Readonly<Record<OperatorRole, readonly string[]>> = {
  // `scim` is a provisioning system's, not an operator's: no role stands for it.
  admin: ADMIN_SCOPES.filter((scope) => scope.startsWith('admin:') && !scope.endsWith(':read')),
  support: ['admin:users', ...READ_SCOPES.filter((scope) => scope !== 'admin:users:read')],
  viewer: READ_SCOPES,
};

/** The admin API's audience: the `resource` an admin client asks its tokens for (RFC 8707). */
export function adminAudience(issuer: string): string {
  return `${issuer}/admin`;
}

/** RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ), separated by single spaces. */
const SCOPE_TOKEN = /^[\x21\x23-\x5B\x5D-\x7E]+$/;

/** Splits a scope parameter into its distinct values, in order; null if malformed. */
export function parseScope(raw: string): string[] | null {
  const values = raw.split(' ').filter((value) => value !== '');
  if (!values.every((value) => SCOPE_TOKEN.test(value))) return null;
  return [...new Set(values)];
}
