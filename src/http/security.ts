import type { FastifyInstance, FastifyReply } from 'fastify';
import { FORM_POST_SCRIPT_SOURCE } from '../ui/form-post.ts';

// script-src and connect-src 'self': the passkey script and the WebAuthn library are
// served from here (no CDN) and fetch their options from here; nothing inline runs.
const IMG_SRC = "img-src 'self' data:";
const BASE_CSP = `default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; ${IMG_SRC}; frame-ancestors 'none'; base-uri 'none'`;
const DEFAULT_CSP = `${BASE_CSP}; form-action 'self'`;

/**
 * Headers on every response: pages cannot be framed (clickjacking of the approval page),
 * nothing is content-sniffed, and our URLs are never sent to another site as a Referer.
 */
export function registerSecurityHeaders(app: FastifyInstance, logoUrl: string | null = null): void {
  // The operator's logo is the one image from elsewhere a page may load.
  const logo = logoUrl === null ? null : new URL(logoUrl).origin;
  // A callback hook, not an async one: it runs on every response, and an async hook costs a
  // promise per response.
  app.addHook('onSend', (_request, reply, payload, done) => {
    reply.header('X-Content-Type-Options', 'nosniff');
    reply.header('X-Frame-Options', 'DENY');
    // same-origin, not no-referrer: with no-referrer browsers send `Origin: null` on our own
    // form posts, and the CSRF check relies on a real Origin.
    reply.header('Referrer-Policy', 'same-origin');
    if (!reply.hasHeader('Content-Security-Policy')) reply.header('Content-Security-Policy', DEFAULT_CSP);
    if (logo !== null) reply.header('Content-Security-Policy', String(reply.getHeader('Content-Security-Policy')).replace(IMG_SRC, `${IMG_SRC} ${logo}`));
    done(null, payload);
  });
}

/**
 * A page whose form leads (through a redirect) to a client's redirect_uri: browsers apply
 * form-action to the redirect too, so that target is allowed beside our own origin.
 */
export function allowFormTarget(reply: FastifyReply, ...targets: readonly string[]): void {
  const sources = [...new Set(targets.map(formSource))];
  reply.header('Content-Security-Policy', `${BASE_CSP}; form-action 'self'${sources.map((source) => ` ${source}`).join('')}`);
}

/**
 * A sign-in page (password, code, directory) whose post may end, through /authorize, at the
 * app the sign-in continues to: that client's registered redirect URIs, and nothing else,
 * are allowed as form targets. No client: our own origin only, as on every page.
 */
export function allowClientTargets(reply: FastifyReply, client: { readonly redirectUris: readonly string[] } | null): void {
  if (client !== null && client.redirectUris.length > 0) allowFormTarget(reply, ...client.redirectUris);
}

/** Where a page's form may post: our origin, and `target`'s (its scheme for a private-use one). */
function formSource(target: string): string {
  const url = new URL(target);
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol;
}

/**
 * The policy of a form post response (OAuth 2.0 Form Post Response Mode §2): its one inline
 * script, allowed by hash and nothing else, and a form that may post only to the client.
 * `andBack`: its answer may redirect back here too (browsers hold the redirects after a form's
 * post to its form-action), as an SP answers a LogoutRequest of single logout.
 */
export function formPostPolicy(target: string, andBack = false): string {
  const back = andBack ? " 'self'" : '';
  return `default-src 'none'; script-src ${FORM_POST_SCRIPT_SOURCE}; style-src 'self'; ${IMG_SRC}; frame-ancestors 'none'; base-uri 'none'; form-action ${formSource(target)}${back}`;
}
