/**
 * What an authorization request needs from the person before it can be answered: a sign-in,
 * an approval, or nothing more (OIDC Core §3.1.2.1 `prompt` and `max_age`; RFC 6749 §4.1.1).
 * The route file shows the page or sends the redirect this decides.
 */
import type { SessionRecord } from '../../store/types.ts';
import type { AuthorizationRequest } from './request.ts';

export type NextStep<S> =
  /** OIDC Core §3.1.2.6: answered at the redirect URI, never with a page. */
  | { readonly kind: 'error'; readonly error: 'login_required' | 'consent_required'; readonly description: string }
  | { readonly kind: 'sign-in' }
  | { readonly kind: 'consent'; readonly signedIn: S }
  | { readonly kind: 'approve'; readonly signedIn: S }
  | { readonly kind: 'deny'; readonly signedIn: S }
  /** A decision that is neither approve nor deny. */
  | { readonly kind: 'invalid-decision' };

/**
 * The parameters that asked for a sign-in: after signing in, the browser comes back
 * without them, so that it is not asked again (and the form fields it must not forge).
 */
export const SIGN_IN_RETURN_OMITS: readonly string[] = ['prompt', 'max_age', 'csrf_token', 'decision'];

/** Carried through the approval form: everything but what the sign-in already answered. */
export const CONSENT_FORM_OMITS: readonly string[] = ['prompt', 'max_age'];

/**
 * The next step for `request`, given the browser's sign-in (null when signed out) and the
 * person's decision on the approval page (null when none was posted).
 */
export function nextStep<S extends { readonly session: SessionRecord }>(
  request: AuthorizationRequest,
  signedIn: S | null,
  decision: string | null,
  now: number,
): NextStep<S> {
  const session = signedIn?.session ?? null;
  // OIDC Core §3.1.2.1: prompt=login and an exceeded max_age both ask for the password again.
  const stale =
    session !== null &&
    decision === null &&
    (request.prompt === 'login' || (request.maxAge !== null && now - session.authTime > request.maxAge * 1000));
  if (request.prompt === 'none') {
    // Every approval is asked for, so there is never a silent answer to give.
    return session
      ? { kind: 'error', error: 'consent_required', description: 'the user must approve this request' }
      : { kind: 'error', error: 'login_required', description: 'the user is not signed in' };
  }
  if (!signedIn || stale) return { kind: 'sign-in' };
  if (decision === 'approve') return { kind: 'approve', signedIn };
  if (decision === 'deny') return { kind: 'deny', signedIn };
  if (decision !== null) return { kind: 'invalid-decision' };
  return { kind: 'consent', signedIn };
}
