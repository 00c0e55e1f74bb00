/**
 * What an authorization request needs from the person before it can be answered: a sign-in,
 * an approval, or nothing more (OIDC Core §3.1.2.1 `prompt` and `max_age`; RFC 6749 §4.1.1),
 * given what they approved before for this client (their remembered consent).
 * The route file shows the page or sends the redirect this decides.
 */
import type { GrantRecord, SessionRecord } from '../../store/types.ts';
import { approvalScope, type AuthorizationRequest } from './request.ts';
import type { SignInAsked } from './sign-in-asked.ts';

export type NextStep<S> =
  /** OIDC Core §3.1.2.6: answered at the redirect URI, never with a page. */
  | { readonly kind: 'error'; readonly error: 'login_required' | 'consent_required'; readonly description: string }
  | { readonly kind: 'sign-in' }
  /**
   * The approval page. `scopes` is what it asks for: all of the request's, or, when part
   * of them was approved before, only the new ones (`more` is then true).
   */
  | { readonly kind: 'consent'; readonly signedIn: S; readonly scopes: readonly string[]; readonly more: boolean }
  /** Approved: by the person now, or by their remembered consent, or for a first-party app. */
  | { readonly kind: 'approve'; readonly signedIn: S }
  | { readonly kind: 'deny'; readonly signedIn: S }
  /** A decision that is neither approve nor deny. */
  | { readonly kind: 'invalid-decision' };

/**
 * Left out of the address to come back to after the sign-in: the form's own fields, and the
 * hints of who should sign in (OIDC Core §3.1.2.1), the longest values a request may have,
 * which would not fit that address. `login_hint` has served once the sign-in page is shown;
 * the person `id_token_hint` names must still be the one signed in after it, and comes back
 * in its place, checked once by the request and carried under the stamp's MAC
 * (sign-in-asked.ts `SIGN_IN_HINTED_FIELD`). What asked for the sign-in (`prompt`, `max_age`)
 * stays: a sign-in made since answers it (sign-in-asked.ts), as it must inside a request object
 * or a pushed request, which bring their own hints back too.
 */
export const SIGN_IN_RETURN_OMITS: readonly string[] = ['csrf_token', 'decision', 'id_token_hint', 'login_hint'];

/**
 * Left out of the approval form: its own fields, which a request that brought its own could
 * otherwise decide for the person with.
 */
export const CONSENT_FORM_OMITS: readonly string[] = ['csrf_token', 'decision'];

/**
 * Whether `request` asks for a sign-in made after it asked, not merely a signed-in person:
 * prompt=login, and select_account (one account a browser: answered as login), of which OIDC
 * Core §3.1.2.1 says "The Authorization Server SHOULD prompt the End-User for
 * reauthentication"; max_age=0 always does (§3.1.2.1 likens it to prompt=login).
 */
export function asksNewSignIn(request: Pick<AuthorizationRequest, 'prompt' | 'maxAge'>): boolean {
  return request.prompt.includes('login') || request.prompt.includes('select_account') || request.maxAge === 0;
}

/**
 * The person the request's `id_token_hint` names (OIDC Core §3.1.2.1), whom the sign-in must
 * be: the request's own hint (a request object or a pushed request brings it back from the
 * sign-in), or else the one the address to come back to carried under a stamp that matched
 * (`asked`), in place of the hint it leaves out; null when neither names anyone.
 */
export function hintedSub(request: Pick<AuthorizationRequest, 'hintedSub'>, asked: SignInAsked | null): string | null {
  return request.hintedSub ?? asked?.hintedSub ?? null;
}

/**
 * The next step for `request`, given the browser's sign-in (null when signed out), the
 * user's remembered grant for the client (null when none), the person's decision on the
 * approval page (null when none was posted), when and for whom this request asked this
 * browser for a sign-in (sign-in-asked.ts `readSignInAsked`; null when it has not), and
 * whether the sign-in policy (second-factor/policy.ts `approvalRefusal`) refuses this sign-in
 * for this request.
 */
export function nextStep<S extends { readonly session: SessionRecord }>(
  request: AuthorizationRequest,
  signedIn: S | null,
  remembered: GrantRecord | null,
  decision: string | null,
  now: number,
  signInAsked: SignInAsked | null,
  refused = false,
): NextStep<S> {
  const session = signedIn?.session ?? null;
  // OIDC Core §3.1.2.1 max_age: "If the elapsed time is greater than this value, the OP
  // MUST attempt to actively re-authenticate the End-User." Measured from the sign-in at
  // every visit, whenever it was made: a sign-in that answered the request once grows too
  // old for it like any other.
  const pastMaxAge = session !== null && request.maxAge !== null && request.maxAge > 0 && now - session.authTime > request.maxAge * 1000;
  const tooOld = session !== null && (request.maxAge === 0 || pastMaxAge);
  // The re-authentication that prompt=login, select_account and max_age=0 ask for is a
  // sign-in made after this request asked for one, and no other: the request comes back from
  // it still asking (a request object or a pushed request cannot be changed on the way), and a
  // request brought again without that sign-in asks again.
  const signedInSinceAsked = session !== null && signInAsked !== null && session.authTime >= signInAsked.at;
  const asksConsent = request.prompt.includes('consent');
  // OIDC Core §3.1.2.1 id_token_hint: "If the End-User identified by the ID Token is logged in
  // or is logged in by the request, then the Authorization Server returns a positive response;
  // otherwise, it SHOULD return an error, such as login_required." Subjects are public
  // (discovery's subject_types_supported), so the hint's sub is the person's id.
  const hinted = hintedSub(request, signInAsked);
  const someoneElse = session !== null && hinted !== null && hinted !== session.userId;
  // RFC 6749 §10.2: repeated requests are not approved without the person "without
  // authenticating the client or relying on other measures to ensure that the repeated
  // request comes from the original client and not an impersonator". A confidential client
  // authenticates; an https redirect URI is the site's own. A public client's private-use
  // scheme or loopback port can be claimed by any app on the device (RFC 8252 §8.6), so
  // there the remembered approval is not relied on: the person is asked each time.
  const relied = remembered !== null && (request.client.secretHash !== null || new URL(request.redirectUri).protocol === 'https:') ? remembered : null;
  // What the page asks for: the scope with the scopes of the claims asked for by name.
  const asked = approvalScope(request);
  const notYetApproved = relied === null ? asked : asked.filter((scope) => !relied.scope.includes(scope));
  // The operator's own apps are trusted with what they ask for (in this flow only: the
  // device flow always shows its approval page, RFC 8628 §5.4).
  const covered = request.client.firstParty || notYetApproved.length === 0;

  if (request.prompt.includes('none')) {
    // "The Authorization Server MUST NOT display any authentication or consent user
    // interface pages. An error is returned if an End-User is not already authenticated or
    // the Client does not have pre-configured consent for the requested Claims".
    if (!signedIn) return { kind: 'error', error: 'login_required', description: 'the user is not signed in' };
    if (someoneElse) return { kind: 'error', error: 'login_required', description: 'the user signed in is not the one id_token_hint names' };
    if (tooOld) return { kind: 'error', error: 'login_required', description: 'the sign-in is older than max_age' };
    // §3.1.2.6 login_required: "The Authorization Server requires End-User authentication",
    // here a stronger sign-in than this one (acr_values, the client's or the server's policy).
    if (refused) return { kind: 'error', error: 'login_required', description: 'the request needs a stronger sign-in than the current one' };
    if (!covered) return { kind: 'error', error: 'consent_required', description: 'the user has not approved this request' };
    return { kind: 'approve', signedIn };
  }
  // id_token_hint: "otherwise, it SHOULD return an error, such as login_required". Someone
  // else signed in is asked once to sign in as the person the hint names; a sign-in made since
  // that is still not theirs ends the request (asked again, a request object or a pushed
  // request, which come back from the sign-in still hinting, would ask for ever). "Since" is
  // when the session began, not its auth_time: an upstream provider's sign-in carries the
  // provider's own, which may be hours before the request, and the wrong person coming back
  // from a provider whose session they already had would be asked again, for ever (with the
  // provider as the only way in, a loop of redirects that needs no click).
  const sessionBegunSinceAsked = session !== null && signInAsked !== null && session.createdAt >= signInAsked.at;
  if (someoneElse && sessionBegunSinceAsked) {
    return { kind: 'error', error: 'login_required', description: 'the user who signed in is not the one id_token_hint names' };
  }
  // A new sign-in is not asked for again once they have signed in since the request asked
  // (but a max_age it has outlived still asks), nor once a decision is posted: the approval
  // page it comes from was shown only to a sign-in that answered the request.
  const reauthenticate = decision === null && ((asksNewSignIn(request) && !signedInSinceAsked) || pastMaxAge);
  // Another person signed in is asked to sign in as the one the hint names, whatever they
  // decided: nothing is issued to the wrong person.
  if (!signedIn || reauthenticate || someoneElse) return { kind: 'sign-in' };
  if (decision === 'approve') return { kind: 'approve', signedIn };
  if (decision === 'deny') return { kind: 'deny', signedIn };
  if (decision !== null) return { kind: 'invalid-decision' };
  // prompt=consent: "The Authorization Server SHOULD prompt the End-User for consent before
  // returning information to the Client", whatever was approved before.
  if (asksConsent) return { kind: 'consent', signedIn, scopes: asked, more: false };
  // A remembered approval goes on without a page only for a sign-in the policy accepts; any
  // other is shown the approval step, which asks it to sign in again and says why.
  if (covered && !refused) return { kind: 'approve', signedIn };
  if (covered) return { kind: 'consent', signedIn, scopes: asked, more: false };
  return { kind: 'consent', signedIn, scopes: notYetApproved, more: notYetApproved.length < asked.length };
}
