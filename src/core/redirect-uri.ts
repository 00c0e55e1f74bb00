/**
 * Redirect URI rules: what may be registered (RFC 6749 §3.1.2, RFC 9700 §2.1 and §4.1,
 * RFC 8252 §7-8) and how a requested one is matched against the registered ones.
 */

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);
const DANGEROUS_SCHEMES = new Set(['javascript:', 'data:', 'file:', 'vbscript:', 'blob:', 'about:', 'ftp:', 'ws:', 'wss:']);

/**
 * RFC 8252 §7.3: a loopback address over http, where the app listens on a port of its
 * choosing. `localhost` is registered only by public native clients (see below).
 */
export function isLoopback(url: URL): boolean {
  return url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
}

/** Whether the issuer is on this machine's loopback interface (`http://localhost:8080`). */
export function isLoopbackIssuer(issuer: string): boolean {
  try {
    return isLoopback(new URL(issuer));
  } catch {
    return false;
  }
}

/** RFC 8252 §7.1: a private-use scheme is a reverse domain name, so it contains a dot. */
function isPrivateUseScheme(url: URL): boolean {
  return /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(url.protocol);
}

/**
 * Why a redirect URI cannot be registered, or null if it can. Confidential clients get https
 * and loopback http; public clients (native apps) also private-use schemes.
 */
export function redirectUriProblem(uri: string, options: { readonly publicClient: boolean; readonly issuerOnLoopback?: boolean }): string | null {
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
    // RFC 8252 §8.3 prefers the IP literal ("NOT RECOMMENDED" is localhost), since a hosts file
    // or a resolver could send localhost elsewhere; some native apps offer nothing else
    // (oidc-agent), so a public client may register it, under the same any-port rule. Where
    // the issuer itself is on loopback (a development machine: another Tessera as an
    // upstream provider, its redirect URI on http://localhost:PORT), whatever could send
    // localhost elsewhere sends the issuer there too, and a web app beside it may register it.
    if (url.hostname === 'localhost' && !options.publicClient && options.issuerOnLoopback !== true) {
      return 'http://localhost is for public native apps (register them with --public) and for web apps of an issuer that is itself on loopback; use the loopback address http://127.0.0.1 (or http://[::1]) (RFC 8252 §8.3)';
    }
    // RFC 9700 §2.6 allows http only where nothing crosses a network: the loopback interface.
    if (isLoopback(url)) return null;
    return 'http is allowed only for a loopback address (127.0.0.1, [::1], or localhost for a public client); use https';
  }
  if (DANGEROUS_SCHEMES.has(url.protocol)) return `the ${url.protocol} scheme is not allowed`;
  if (isPrivateUseScheme(url)) {
    return options.publicClient ? null : 'a private-use scheme is for native apps: register them with --public';
  }
  return 'must use https, http on a loopback address, or (for native apps) a reverse-domain private-use scheme such as com.example.app:/callback';
}

/**
 * Whether a redirect URI stays on the person's own machine: http on a loopback address
 * (RFC 8252 §7.3) or a private-use scheme (§7.1), what a native app registers. The open
 * registration policy takes only these, so that a stranger's registration can never send
 * a code to a web site.
 */
export function isNativeAppRedirect(uri: string): boolean {
  try {
    const url = new URL(uri);
    return isLoopback(url) || isPrivateUseScheme(url);
  } catch {
    return false;
  }
}

/**
 * Whether `requested` is one of `registered`: exact string match (RFC 9700 §2.1), except that
 * for a loopback http URI the port may differ (RFC 8252 §7.3: the server MUST allow any port
 * to be specified at the time of the request for loopback IP redirect URIs).
 */
export function redirectUriRegistered(registered: readonly string[], requested: string): boolean {
  if (registered.includes(requested)) return true;
  let url: URL;
  try {
    url = new URL(requested);
  } catch {
    return false;
  }
  if (!isLoopback(url) || url.username || url.password || url.hash || requested.includes('#')) return false;
  const withoutPort = (value: URL) => `${value.protocol}//${value.hostname}${value.pathname}${value.search}`;
  const wanted = withoutPort(url);
  return registered.some((candidate) => {
    try {
      const parsed = new URL(candidate);
      return isLoopback(parsed) && withoutPort(parsed) === wanted;
    } catch {
      return false;
    }
  });
}
