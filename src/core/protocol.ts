/**
 * Protocol vocabulary shared by every layer: the grant types this server knows (RFC 6749
 * §4.1.3, §6; RFC 8628 §3.4) and request parameters as they arrive, before any check.
 */

export const GRANT_AUTHORIZATION_CODE = 'authorization_code';
export const GRANT_DEVICE_CODE = 'urn:ietf:params:oauth:grant-type:device_code';
export const GRANT_REFRESH_TOKEN = 'refresh_token';

export type GrantType = typeof GRANT_AUTHORIZATION_CODE | typeof GRANT_DEVICE_CODE | typeof GRANT_REFRESH_TOKEN;

/** Query or form parameters as parsed: a name may repeat (RFC 6749 §3.1 forbids it; the flows refuse it). */
export type RawParams = Readonly<Record<string, string | readonly string[] | undefined>>;
