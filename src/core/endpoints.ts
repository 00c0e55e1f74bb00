/**
 * Where each endpoint and page is: every path is spelled here once. The routes (http/)
 * register at these paths, the pages (ui/) link and post to them, the flows build the links
 * they hand out from them (a device's verification_uri, a reset link), and the discovery
 * document (http/discovery.ts) names the endpoints from here. In core because all of those
 * use it, the flows included.
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

/**
 * RFC 7591 §3: where apps register themselves; RFC 7592 §2: each registration's own address
 * under it (`registration_client_uri`), when TESSERA_REGISTRATION allows.
 */
export const REGISTRATION_PATH = '/oauth/register';

/**
 * OpenID SSF 1.0 §7 (Shared Signals transmitter metadata) and its stream management
 * endpoints (§8.1), and RFC 8936's poll endpoint of a stream, under `SSF_POLL_PATH/<stream_id>`.
 */
export const SSF_CONFIGURATION_PATH = '/.well-known/ssf-configuration';
export const SSF_STREAMS_PATH = '/ssf/streams';
export const SSF_STATUS_PATH = '/ssf/status';
export const SSF_VERIFY_PATH = '/ssf/verify';
export const SSF_POLL_PATH = '/ssf/poll';
/** SSF 1.0 §8.1.3.2 and §8.1.3.3, named as the specification's examples name them. */
export const SSF_ADD_SUBJECT_PATH = '/ssf/subjects:add';
export const SSF_REMOVE_SUBJECT_PATH = '/ssf/subjects:remove';

/** The admin API (docs/admin-api.md): every operation is under this prefix. */
export const ADMIN_PREFIX = '/admin/v1';

/** The home page, and the probes of a load balancer or orchestrator (liveness, readiness). */
export const HOME_PATH = '/';
export const HEALTH_PATH = '/healthz';
export const READY_PATH = '/readyz';
/** Prometheus metrics, on a listener of their own (TESSERA_METRICS_PORT). */
export const METRICS_PATH = '/metrics';

/** What the pages load: their one stylesheet, and the passkey ceremonies' scripts. */
export const STYLESHEET_PATH = '/assets/tessera.css';
export const WEBAUTHN_SCRIPT_PATH = '/assets/webauthn.js';
export const PASSKEYS_SCRIPT_PATH = '/assets/passkeys.js';
/** Where the language menu's links lead: sets the choice, then returns to `return_to`. */
export const LOCALE_PATH = '/locale';

/** The sign-in form every flow leads to, and the browser's own sign-out. */
export const SIGN_IN_PATH = '/login';
export const SIGN_OUT_PATH = '/logout';
/** Signing in with a passkey: the ceremony's options, then the signed answer. */
export const PASSKEY_SIGN_IN_PATH = `${SIGN_IN_PATH}/passkey`;
export const PASSKEY_SIGN_IN_OPTIONS_PATH = `${PASSKEY_SIGN_IN_PATH}/options`;
/** The one-time code (or recovery code) asked for after the password. */
export const SECOND_FACTOR_PATH = `${SIGN_IN_PATH}/second-factor`;
/** Sign-in through an upstream identity provider: `/{id}` starts it, `/{id}/callback` is the redirect URI registered upstream. */
export const UPSTREAM_SIGN_IN_PATH = `${SIGN_IN_PATH}/upstream`;

/** The account page, and the sign-in that leads back to it. */
export const ACCOUNT_PATH = '/account';
export const ACCOUNT_SIGN_IN = `${SIGN_IN_PATH}?return_to=${encodeURIComponent(ACCOUNT_PATH)}`;
/** What the account page's forms post to. */
export const ACCOUNT_REVOKE_PATH = `${ACCOUNT_PATH}/revoke`;
export const SIGN_OUT_EVERYWHERE_PATH = `${ACCOUNT_PATH}/sign-out-everywhere`;
export const CHANGE_PASSWORD_PATH = `${ACCOUNT_PATH}/password`;
export const TOTP_SETUP_PATH = `${ACCOUNT_PATH}/totp/setup`;
export const TOTP_CONFIRM_PATH = `${ACCOUNT_PATH}/totp/confirm`;
export const TOTP_REMOVE_PATH = `${ACCOUNT_PATH}/totp/remove`;
/** Adding a passkey (its ceremony's options first) and removing one. */
export const PASSKEYS_PATH = `${ACCOUNT_PATH}/passkeys`;
export const PASSKEY_REGISTRATION_OPTIONS_PATH = `${PASSKEYS_PATH}/options`;
export const PASSKEY_REMOVE_PATH = `${PASSKEYS_PATH}/remove`;

/** Where a reset link (`tessera user reset-link`) leads: the person sets a new password. */
export const RESET_PASSWORD_PATH = '/reset-password';
/** "Forgot password?": asks for a reset link by e-mail (with a mail server only). */
export const FORGOT_PASSWORD_PATH = '/forgot-password';
/** Sign-up (TESSERA_SIGN_UP=open), and the page its mailed link leads to. */
export const SIGN_UP_PATH = '/sign-up';
export const SIGN_UP_VERIFY_PATH = '/sign-up/verify';
/** The options of a passkey made at sign-up (WebAuthn Level 3 §5.4). */
export const SIGN_UP_PASSKEY_OPTIONS_PATH = '/sign-up/passkey/options';
/** Where a person asks for a new e-mail address (the account page's form), and where the link mailed to it leads. */
export const CHANGE_EMAIL_PATH = '/account/email';
export const EMAIL_CHANGE_VERIFY_PATH = '/account/email/verify';
/** Where an invitation's link leads: the person invited makes their account. */
export const INVITATION_PATH = '/invitation';
/** The options of a passkey made on an invitation's page (WebAuthn Level 3 §5.4). */
export const INVITATION_PASSKEY_OPTIONS_PATH = '/invitation/passkey/options';

/** RFC 8628 §3.2 `verification_uri`: the person enters the code, then reviews and decides. */
export const DEVICE_VERIFICATION_PATH = '/device';
export const DEVICE_APPROVAL_PATH = `${DEVICE_VERIFICATION_PATH}/approve`;

/**
 * The SAML 2.0 identity provider (docs/saml.md): its metadata, whose address is also its
 * entity ID; single sign-on (HTTP-Redirect and HTTP-POST bindings), where the sign-in resumes
 * (`/resume`) and where the IdP starts one unasked (`/initiate`); single logout (`/slo`).
 */
export const SAML_PATHS = {
  metadata: '/saml/metadata',
  sso: '/saml/sso',
  resume: '/saml/sso/resume',
  initiate: '/saml/initiate',
  slo: '/saml/slo',
  sloResume: '/saml/slo/resume',
} as const;

/** The SAML endpoints as absolute URLs on `issuer`; `metadata` is the IdP's entity ID. */
export function samlEndpoints(issuer: string): { readonly [name in keyof typeof SAML_PATHS]: string } {
  return Object.fromEntries(Object.entries(SAML_PATHS).map(([name, path]) => [name, `${issuer}${path}`])) as { [name in keyof typeof SAML_PATHS]: string };
}

/** The operator console: each of its sections; a section's pages are under its path. */
export const CONSOLE_PATHS = {
  dashboard: '/console',
  users: '/console/users',
  apps: '/console/apps',
  apis: '/console/apis',
  providers: '/console/providers',
  events: '/console/events',
  keys: '/console/keys',
  webhooks: '/console/webhooks',
  saml: '/console/saml',
  scim: '/console/scim',
  orgs: '/console/orgs',
} as const;

/** SCIM 2.0 (RFC 7644 §3): the base of its resources, under the issuer (docs/scim.md). */
export const SCIM_PATH = '/scim/v2';

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
