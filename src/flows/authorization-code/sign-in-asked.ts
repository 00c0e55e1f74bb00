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
 *
 * §3.1.2.1 `id_token_hint`: "If the End-User identified by the ID Token is logged in or is
 * logged in by the request, then the Authorization Server returns a positive response;
 * otherwise, it SHOULD return an error". The ID token is too long for that address and is left
 * out of it (interaction.ts `SIGN_IN_RETURN_OMITS`); the person it names comes back with the
 * stamp instead, in a field its MAC covers, so that the sign-in it asked for is still checked
 * against them.
 */
import { constantTimeEqual } from '../../core/crypto.ts';
import { fieldsMac, type FormFields } from './approval-form.ts';

/** The parameter of the address to come back to that says when the sign-in was asked for. */
export const SIGN_IN_ASKED_FIELD = 'sign_in_asked';

/**
 * The parameter of the address to come back to that names the person the request's verified
 * `id_token_hint` names (its `sub`, OIDC Core §3.1.2.1), covered by the MAC of
 * `SIGN_IN_ASKED_FIELD`. Only `signInAsked` writes it: one the request brought itself is dropped
 * before the MAC is made; and it is read only beside a stamp that matches (`readSignInAsked`).
 */
export const SIGN_IN_HINTED_FIELD = 'sign_in_hinted_sub';

/** When the sign-in was asked for, as the address to come back to says it and its MAC vouches for it. */
export interface SignInAsked {
  /** Milliseconds. */
  readonly at: number;
  /** The `sub` of the person the request's `id_token_hint` named; null when it had none. */
  readonly hintedSub: string | null;
}

/** The time in milliseconds, a dot, and the MAC. */
const STAMP = /^(\d{1,15})\.([A-Za-z0-9_-]{43})$/;

/** `fields` without what the stamp writes: ours alone, never the request's. */
function withoutStamp(fields: FormFields): Record<string, string | readonly string[]> {
  const { [SIGN_IN_ASKED_FIELD]: _stamp, [SIGN_IN_HINTED_FIELD]: _hinted, ...rest } = fields;
  return rest;
}

/** The MAC of `carried` (every field but the stamp, the hinted person's included) at `at` in `browser`. */
const stampMac = (secret: Uint8Array, browser: string, at: string, carried: FormFields) => fieldsMac(secret, `${browser}\n${at}`, carried);

/**
 * The request's `fields` to come back to after the sign-in asked for at `now` in `browser`:
 * with when (in place of any earlier), and the person `hintedSub` names (the request's
 * `id_token_hint`'s, or the one an earlier stamp carried; null: none), in place of any field of
 * that name the request brought.
 */
export function signInAsked(secret: Uint8Array, browser: string, fields: FormFields, now: number, hintedSub: string | null = null): FormFields {
  const at = String(now);
  const carried = hintedSub === null ? withoutStamp(fields) : { ...withoutStamp(fields), [SIGN_IN_HINTED_FIELD]: hintedSub };
  return { ...carried, [SIGN_IN_ASKED_FIELD]: `${at}.${stampMac(secret, browser, at, carried)}` };
}

/**
 * When this request, as `fields` carry it, asked `browser` for a sign-in, and for whom; null
 * when it did not, or when the time or the person was changed, added or taken away, or comes
 * from another request or browser.
 */
export function readSignInAsked(secret: Uint8Array, browser: string, fields: FormFields): SignInAsked | null {
  const { [SIGN_IN_ASKED_FIELD]: stamp, ...carried } = fields;
  const parts = typeof stamp === 'string' ? STAMP.exec(stamp) : null;
  if (!parts) return null;
  const [, at = '', mac = ''] = parts;
  if (!constantTimeEqual(mac, stampMac(secret, browser, at, carried))) return null;
  const hinted = carried[SIGN_IN_HINTED_FIELD];
  return { at: Number(at), hintedSub: typeof hinted === 'string' ? hinted : null };
}
