/**
 * The OAuth error codes this server can answer with: RFC 6749 §4.1.2.1 and §5.2,
 * RFC 8628 §3.5, RFC 6750 §3.1, RFC 7009 §2.2.1, RFC 8707 §2, RFC 9449 §5 and §8 (DPoP), RFC 9126 §2.3 (PAR),
 * RFC 9101 §6.3 and OIDC Core §3.1.2.6 (request objects), RFC 7591 §3.2.2 (registration).
 */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'unsupported_token_type'
  | 'invalid_scope'
  | 'invalid_target'
  | 'access_denied'
  | 'server_error'
  | 'temporarily_unavailable'
  | 'authorization_pending'
  | 'slow_down'
  | 'expired_token'
  | 'invalid_token'
  | 'insufficient_scope'
  | 'login_required'
  | 'consent_required'
  | 'invalid_dpop_proof'
  | 'use_dpop_nonce'
  | 'invalid_request_uri'
  | 'invalid_request_object'
  // RFC 7591 §3.2.2: a refused registration.
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata'
  | 'invalid_software_statement'
  | 'unapproved_software_statement';

const defaultStatus: Partial<Record<OAuthErrorCode, number>> = {
  invalid_client: 401,
  invalid_token: 401,
  insufficient_scope: 403,
  server_error: 500,
  temporarily_unavailable: 503,
};

/**
 * The one error type of the protocol code. `description` is public: it is sent to the
 * client as `error_description`, so it never holds a secret or an internal detail; the
 * `cause` stays in the logs.
 */
/** A message of the pages' catalogues, by key (checked where it is shown), with its values. */
export interface PageMessage {
  readonly key: string;
  readonly values?: Readonly<Record<string, string | number>>;
}

export class OAuthError extends Error {
  readonly code: OAuthErrorCode;
  readonly description: string;
  readonly status: number;
  /** Seconds the client should wait before trying again (RFC 9110 §10.2.3 Retry-After), if it is told. */
  readonly retryAfterSeconds: number | undefined;
  /**
   * What a person reads when the error is shown as a page: a key of the pages' message
   * catalogues (src/ui/locales) and its values. The description stays English, for the
   * client's developer (it was shown as the page's sentence in every language).
   */
  readonly page: PageMessage | undefined;

  constructor(code: OAuthErrorCode, description: string, options: { status?: number; cause?: unknown; retryAfterSeconds?: number; page?: PageMessage } = {}) {
    // An OAuthError is an answer, not a fault: no stack trace is captured. Every refused
    // request makes one (a device poll answers authorization_pending with one), and capturing
    // the stack was a measurable part of the poll under `npm run bench`. A failure's `cause`
    // keeps its own stack.
    const stackTraceLimit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(`${code}: ${description}`, options.cause === undefined ? undefined : { cause: options.cause });
    Error.stackTraceLimit = stackTraceLimit;
    this.name = 'OAuthError';
    this.code = code;
    this.description = description;
    this.status = options.status ?? defaultStatus[code] ?? 400;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.page = options.page;
  }

  /** The RFC 6749 §5.2 error body. */
  toJSON(): { error: OAuthErrorCode; error_description: string } {
    return { error: this.code, error_description: this.description };
  }
}
