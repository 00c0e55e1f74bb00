/**
 * OIDC Core §3.1.2.1 `prompt=login`: "The Authorization Server SHOULD prompt the End-User for
 * reauthentication"; `max_age`: "If the elapsed time is greater than this value, the OP MUST
 * attempt to actively re-authenticate the End-User". The person leaves the request for the
 * sign-in page and comes back to the same request, which still asks: a signed request object
 * (RFC 9101) or a pushed request (RFC 9126) cannot be changed on the way, and must not be, and
 * a request sent in the URL comes back unchanged too, so that one rule serves all three: a
 * sign-in made after the request asked for it answers it (interaction.ts `nextStep`).
 *
 * When it asked rides in the address the sign-in comes back to, in one field: the time and a
 * MAC of it (HMAC-SHA-256 under a key derived from the signing key), bound to the browser (the
 * hash of its CSRF cookie, which it keeps through sign-in) and to the request's other
 * parameters. A browser can neither move the time back before a sign-in it already has nor
 * take it to another request or into another browser; the request brought again without it
 * asks again.
 */
import { constantTimeEqual } from '../../core/crypto.ts';
import { fieldsMac, type FormFields } from './approval-form.ts';

/** The parameter of the address to come back to that says when the sign-in was asked for. */
export const SIGN_IN_ASKED_FIELD = 'sign_in_asked';

/** The time in milliseconds, a dot, and the MAC. */
const STAMP = /^(\d{1,15})\.([A-Za-z0-9_-]{43})$/;

function withoutStamp(fields: FormFields): Record<string, string | readonly string[]> {
  const { [SIGN_IN_ASKED_FIELD]: _stamp, ...rest } = fields;
  return rest;
}

const stampMac = (secret: Uint8Array, browser: string, at: string, fields: FormFields) => fieldsMac(secret, `${browser}\n${at}`, withoutStamp(fields));

/** The request's `fields` to come back to after the sign-in asked for at `now` in `browser`: with when (in place of any earlier). */
export function signInAsked(secret: Uint8Array, browser: string, fields: FormFields, now: number): FormFields {
  const at = String(now);
  return { ...withoutStamp(fields), [SIGN_IN_ASKED_FIELD]: `${at}.${stampMac(secret, browser, at, fields)}` };
}

/**
 * When this request, as `fields` carry it, asked `browser` for a sign-in (milliseconds); null
 * when it did not, or when the time was changed or comes from another request or browser.
 */
export function signInAskedAt(secret: Uint8Array, browser: string, fields: FormFields): number | null {
  const stamp = fields[SIGN_IN_ASKED_FIELD];
  const parts = typeof stamp === 'string' ? STAMP.exec(stamp) : null;
  if (!parts) return null;
  const [, at = '', mac = ''] = parts;
  return constantTimeEqual(mac, stampMac(secret, browser, at, fields)) ? Number(at) : null;
}
