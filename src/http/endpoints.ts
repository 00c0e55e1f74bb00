/**
 * Where each endpoint is: every path is spelled here once, and the discovery document
 * (discovery.ts) names the endpoints from here.
 */

/** RFC 6749 §3.1, and where its approval page posts the person's decision. */
export const AUTHORIZE_PATH = '/oauth/authorize';
export const DECISION_PATH = '/oauth/authorize/decision';
/** RFC 6749 §3.2. */
export const TOKEN_PATH = '/oauth/token';
/** RFC 9126 §2. */
export const PAR_PATH = '/oauth/par';
/** RFC 8628 §3.1. */
export const DEVICE_AUTHORIZATION_PATH = '/oauth/device/authorization';
/** RFC 7009 §2. */
export const REVOCATION_PATH = '/oauth/revoke';
/** RFC 7662 §2. */
export const INTROSPECTION_PATH = '/oauth/introspect';
/** OIDC Core §5.3. */
export const USERINFO_PATH = '/oauth/userinfo';
/** RP-Initiated Logout 1.0 §2, and where its confirmation page posts. */
export const END_SESSION_PATH = '/oauth/logout';
export const END_SESSION_CONFIRM_PATH = `${END_SESSION_PATH}/confirm`;
/** RFC 7517 §5: the signing keys. */
export const JWKS_PATH = '/.well-known/jwks.json';
/** OIDC Discovery 1.0 §4 and RFC 8414 §3: the same document at both. */
export const DISCOVERY_PATHS = ['/.well-known/openid-configuration', '/.well-known/oauth-authorization-server'] as const;

/** The account page, and the sign-in that leads back to it. */
export const ACCOUNT_PATH = '/account';
export const ACCOUNT_SIGN_IN = `/login?return_to=${encodeURIComponent(ACCOUNT_PATH)}`;

/** The operator console (issue 27): each of its sections. */
export const CONSOLE_PATHS = {
  dashboard: '/console',
  users: '/console/users',
  apps: '/console/apps',
  apis: '/console/apis',
  events: '/console/events',
  keys: '/console/keys',
} as const;

/** The discovery entries that say where each endpoint is (RFC 8414 §2, OIDC Discovery §3). */
export function endpointMetadata(issuer: string): Record<string, string> {
  return {
    authorization_endpoint: `${issuer}${AUTHORIZE_PATH}`,
    token_endpoint: `${issuer}${TOKEN_PATH}`,
    jwks_uri: `${issuer}${JWKS_PATH}`,
    pushed_authorization_request_endpoint: `${issuer}${PAR_PATH}`,
    device_authorization_endpoint: `${issuer}${DEVICE_AUTHORIZATION_PATH}`,
    userinfo_endpoint: `${issuer}${USERINFO_PATH}`,
    revocation_endpoint: `${issuer}${REVOCATION_PATH}`,
    introspection_endpoint: `${issuer}${INTROSPECTION_PATH}`,
    end_session_endpoint: `${issuer}${END_SESSION_PATH}`,
  };
}
