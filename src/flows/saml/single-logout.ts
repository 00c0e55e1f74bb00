/**
 * Single logout from this IdP to the SAML SPs of an ending session (SAML Profiles §4.4.3.3):
 * "the identity provider ... MUST ... send a <LogoutRequest> message to each session
 * participant", here one after the other, by the front channel: the browser is sent to each
 * SP's SingleLogoutService with a signed LogoutRequest that names the person by the NameID that
 * SP was given and the session by the SessionIndex it was given, and comes back with its
 * LogoutResponse, which sends it on to the next. After the last, it goes where the sign-out
 * was to end: the signed-out page, an address (an OpenID Connect app's post-logout redirect,
 * the account page), or, when an SP's own LogoutRequest started it (§4.4.3.4), that SP's
 * LogoutResponse, `PartialLogout` when another SP did not answer `Success`.
 *
 * What is left of a logout under way waits in the store under the hash of the SP and the ID
 * of the LogoutRequest sent to it, which the answer's InResponseTo names: found once, and only
 * by an answer from that SP.
 */
import { hashSecret } from '../../core/crypto.ts';
import type { SamlServiceProviderRecord, SamlSessionSpRecord, Store } from '../../store/types.ts';
import type { LogoutResponse } from './request.ts';
import { logoutRequest, newSamlId, type OutgoingMessage, type SamlSigner } from './response.ts';

/** Where a single logout ends, once every SP has been sent its LogoutRequest. */
export type LogoutEnd =
  /** The signed-out page. */
  | { readonly kind: 'page' }
  /** An address of this server or one an OpenID Connect app registered. */
  | { readonly kind: 'redirect'; readonly url: string }
  /** The LogoutResponse to the SP whose LogoutRequest started it. */
  | { readonly kind: 'saml'; readonly sp: string; readonly inResponseTo: string; readonly relayState: string | null };

/** A single logout under way, as the store keeps it. */
interface Chain {
  /** The SPs still to be sent a LogoutRequest. */
  readonly remaining: readonly SamlSessionSpRecord[];
  /** Whether an SP answered other than Success (§3.7.3.2 PartialLogout). */
  readonly partial: boolean;
  readonly end: LogoutEnd;
}

export type LogoutStep =
  /** Send the browser to `sp` with `message`. */
  | { readonly kind: 'send'; readonly sp: SamlServiceProviderRecord; readonly message: OutgoingMessage }
  /** Every SP was sent its LogoutRequest (or there was none): on to `end`. */
  | { readonly kind: 'done'; readonly end: LogoutEnd; readonly partial: boolean };

export interface SingleLogoutDeps {
  readonly store: Pick<Store, 'samlSessionSps' | 'samlLogouts' | 'samlServiceProviders'>;
  /** The IdP's entity ID. */
  readonly idp: string;
  readonly now: number;
  readonly signer: SamlSigner;
  /** How long a LogoutRequest is valid, and how long an SP has to answer it, in seconds. */
  readonly lifetime: number;
}

const chainKey = (spId: string, requestId: string) => hashSecret(`saml logout ${spId} ${requestId}`);

/** The LogoutRequest to the first of `remaining` that has a SingleLogoutService, or the end. */
async function next(deps: SingleLogoutDeps, remaining: readonly SamlSessionSpRecord[], partial: boolean, end: LogoutEnd): Promise<LogoutStep> {
  for (const [index, participant] of remaining.entries()) {
    const sp = await deps.store.samlServiceProviders.get(participant.spId);
    // An SP without a SingleLogoutService takes no part in single logout (SAML Profiles §4.4).
    if (sp === null || sp.sloUrl === null) continue;
    const id = newSamlId();
    const chain: Chain = { remaining: remaining.slice(index + 1), partial, end };
    await deps.store.samlLogouts.save(chainKey(sp.id, id), chain as unknown as Record<string, unknown>, deps.now + deps.lifetime * 1000);
    const message = logoutRequest(
      {
        idp: deps.idp,
        id,
        sp,
        nameId: participant.nameId,
        nameIdFormat: participant.nameIdFormat,
        sessionIndex: participant.sessionIndex,
        now: deps.now,
        lifetime: deps.lifetime,
      },
      deps.signer,
    );
    return { kind: 'send', sp, message };
  }
  return { kind: 'done', end, partial };
}

/**
 * Starts the single logout of the sessions `sids`, which have just ended: their SPs are taken
 * (each by exactly one caller, whoever else ends the same session), all but `except` (the SP
 * whose own LogoutRequest ended it: §4.4.3.3 "other than the requester"), and the first is
 * sent its LogoutRequest. `done` at once when no SP of theirs has a SingleLogoutService.
 */
export async function beginSingleLogout(deps: SingleLogoutDeps, sids: readonly string[], end: LogoutEnd, except: string | null = null): Promise<LogoutStep> {
  const participants: SamlSessionSpRecord[] = [];
  for (const sid of new Set(sids)) participants.push(...(await deps.store.samlSessionSps.take(sid)));
  return next(
    deps,
    participants.filter((participant) => participant.spId !== except),
    false,
    end,
  );
}

/**
 * An SP's answer to this IdP's LogoutRequest: the logout it belongs to goes on to the next SP,
 * or to its end. Null when no logout waits on that request from that SP (it was answered
 * already, it expired, or the answer is another SP's).
 */
export async function continueSingleLogout(deps: SingleLogoutDeps, response: LogoutResponse): Promise<LogoutStep | null> {
  const chain = (await deps.store.samlLogouts.take(chainKey(response.sp.id, response.inResponseTo), deps.now)) as Chain | null;
  if (chain === null) return null;
  // §4.4.3.4: a session participant that could not sign the person out makes the logout partial.
  return next(deps, chain.remaining, chain.partial || !response.success, chain.end);
}
