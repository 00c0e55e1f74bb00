/**
 * Why a redirect URI cannot be registered, or null if it can (RFC 6749 §3.1.2, RFC 9700
 * §2.1 and §4.1, RFC 8252 §7).
 */
export function validateRedirectUri(uri: string): string | null {
  let url: URL;
  try {
    url = new URL(uri);
  } catch {
    return 'must be an absolute URI';
  }
  if (url.hash || uri.includes('#')) return 'must not contain a fragment (RFC 6749 §3.1.2)';
  if (url.username || url.password) return 'must not contain a user name or password';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:') {
    // RFC 9700 §2.6 allows http only where nothing crosses a network: the loopback interface.
    if (['127.0.0.1', '[::1]', 'localhost'].includes(url.hostname)) return null;
    return 'http is allowed only for a loopback address; use https';
  }
  if (['javascript:', 'data:', 'file:', 'vbscript:', 'blob:'].includes(url.protocol)) return `the ${url.protocol} scheme is not allowed`;
  return 'must use https (or http on a loopback address)';
}
