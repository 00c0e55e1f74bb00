/**
 * Why a request got no answer, in words: Node's fetch says only "fetch failed",
 * and keeps the reason (connection refused, a name that does not resolve, a certificate) in
 * its `cause`. Operators read this in command output, start logs and stored upstream errors.
 */

/** The system and TLS codes people meet, as a few words each; any other code is shown as it is. */
const REASONS: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused: nothing listens there',
  ECONNRESET: 'the connection was reset',
  ENOTFOUND: 'the name does not resolve (DNS)',
  EAI_AGAIN: 'the name could not be resolved now (DNS)',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  UND_ERR_CONNECT_TIMEOUT: 'the connection timed out',
  UND_ERR_HEADERS_TIMEOUT: 'no answer in time',
  UND_ERR_SOCKET: 'the connection closed before an answer',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'TLS: the certificate is self-signed',
  SELF_SIGNED_CERT_IN_CHAIN: 'TLS: a self-signed certificate in the chain',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'TLS: the certificate cannot be verified',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: "TLS: the certificate's issuer is not trusted here",
  CERT_HAS_EXPIRED: 'TLS: the certificate has expired',
  ERR_TLS_CERT_ALTNAME_INVALID: 'TLS: the certificate is for another name',
  EPROTO: 'TLS: the handshake failed (is it plain http?)',
};

/**
 * "connection refused: nothing listens there (ECONNREFUSED)" for fetch's "fetch failed";
 * a timeout as a timeout; any other error's own message. Never throws.
 */
export function fetchFailure(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  if (error.name === 'TimeoutError' || error.name === 'AbortError') return 'no answer in time';
  // fetch wraps the reason once (cause), and an AggregateError of each address tried may hold it.
  let cause: unknown = error;
  for (let depth = 0; depth < 4 && cause instanceof Error; depth += 1) {
    const code = (cause as NodeJS.ErrnoException).code;
    if (typeof code === 'string' && code !== '') return `${REASONS[code] ?? cause.message} (${code})`;
    const inner: unknown = cause instanceof AggregateError && cause.errors.length > 0 ? cause.errors[0] : cause.cause;
    if (inner === undefined) break;
    cause = inner;
  }
  return cause instanceof Error && cause !== error && cause.message ? cause.message : error.message;
}
