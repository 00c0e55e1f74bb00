/**
 * Protocol vocabulary shared by every layer: the grant types this server knows (RFC 6749
 * §4.1.3, §6; RFC 8628 §3.4) and request parameters as they arrive, before any check.
 */

export const GRANT_AUTHORIZATION_CODE = 'authorization_code';
export const GRANT_DEVICE_CODE = 'urn:ietf:params:oauth:grant-type:device_code';
export const GRANT_REFRESH_TOKEN = 'refresh_token';
/** RFC 6749 §4.4: a client's token on its own behalf, for an API. */
export const GRANT_CLIENT_CREDENTIALS = 'client_credentials';

/** RFC 8693 §2.1: a client exchanges a person's token for one of its own, for another API, acting for them. */
export const GRANT_TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';

/**
 * RFC 7523 §2.1: a JWT as an authorization grant. Here the one profile of it this server
 * redeems: an Identity Assertion JWT Authorization Grant (draft-ietf-oauth-identity-assertion-authz-grant)
 * from an issuer the operator trusts.
 */
export const GRANT_JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

export type GrantType =
  | typeof GRANT_AUTHORIZATION_CODE
  | typeof GRANT_DEVICE_CODE
  | typeof GRANT_REFRESH_TOKEN
  | typeof GRANT_CLIENT_CREDENTIALS
  | typeof GRANT_TOKEN_EXCHANGE
  | typeof GRANT_JWT_BEARER;

/** RFC 8693 §3: the token type identifier of an OAuth 2.0 access token. */
export const TOKEN_TYPE_ACCESS_TOKEN = 'urn:ietf:params:oauth:token-type:access_token';
/** RFC 8693 §3: the token type identifier of an OpenID Connect ID token. */
export const TOKEN_TYPE_ID_TOKEN = 'urn:ietf:params:oauth:token-type:id_token';
/** draft-ietf-oauth-identity-assertion-authz-grant §3: the token type of an Identity Assertion JWT Authorization Grant. */
export const TOKEN_TYPE_ID_JAG = 'urn:ietf:params:oauth:token-type:id-jag';
/** draft-ietf-oauth-identity-assertion-authz-grant §3.1: the JOSE `typ` of an ID-JAG. */
export const ID_JAG_TYP = 'oauth-id-jag+jwt';
/** draft-ietf-oauth-identity-assertion-authz-grant: the profile `authorization_grant_profiles_supported` names. */
export const ID_JAG_PROFILE = 'urn:ietf:params:oauth:grant-profile:id-jag';

/** Query or form parameters as parsed: a name may repeat (RFC 6749 §3.1 forbids it; the flows refuse it). */
export type RawParams = Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * How a client authenticates at the token, device authorization, revocation and
 * introspection endpoints (RFC 7591 §2 `token_endpoint_auth_method`): a secret in HTTP Basic
 * or in the form body (RFC 6749 §2.3.1), a signed JWT (RFC 7523 §2.2, OIDC Core §9), or
 * nothing but its client_id (a public client, RFC 6749 §2.1).
 */
export const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post', 'private_key_jwt', 'none'] as const;
export type ClientAuthMethod = (typeof CLIENT_AUTH_METHODS)[number];

/** The two methods that present a secret: a client registered with either is accepted with the other. */
export const SECRET_AUTH_METHODS: readonly ClientAuthMethod[] = ['client_secret_basic', 'client_secret_post'];

/** RFC 7523 §2.2: the client_assertion_type of a JWT client assertion. */
export const JWT_BEARER_ASSERTION = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';

/**
 * Whether a client must use PKCE (`required`, the default) or, as a confidential OpenID
 * client, may rely on `nonce` instead (`optional`, RFC 9700 §2.1.1), or, as a confidential
 * client, may send neither (`optional-without-nonce`: what OIDC Core §3.1.2.1 alone allows,
 * and RFC 9700 §2.1.1 does not; for a conformance run or an application that cannot do better).
 */
export type PkcePolicy = 'required' | 'optional' | 'optional-without-nonce';
export const PKCE_POLICIES: readonly PkcePolicy[] = ['required', 'optional', 'optional-without-nonce'];

/**
 * The JWS algorithms a client may register for its request objects (RFC 9101, OIDC
 * Registration §2 `request_object_signing_alg`): `none` (unsigned, only for a client that
 * registered it), or an asymmetric one verified with the client's registered keys.
 */
export const REQUEST_OBJECT_ALGORITHMS = ['none', 'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const;
export type RequestObjectAlgorithm = (typeof REQUEST_OBJECT_ALGORITHMS)[number];
