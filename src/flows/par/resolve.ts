/**
 * RFC 9126 §4 (Authorization Request): the authorization endpoint given `client_id` and a
 * `request_uri` from the pushed authorization request endpoint.
 *
 * "The authorization server MUST ... treat request_uri values as one-time use": the first
 * browser to bring a request_uri claims it, and only that browser goes on with it through
 * sign-in and approval, for `par.interactionLifetime`; the user's decision spends it.
 * §4: "the authorization server ... MUST ignore any other authorization request parameters
 * sent" beside it.
 */
import { hashSecret } from '../../core/crypto.ts';
import { OAuthError } from '../../core/errors.ts';
import type { RawParams } from '../../core/protocol.ts';
import { redirectUriRegistered } from '../../core/redirect-uri.ts';
import type { ClientRecord, PushedRequestRecord } from '../../store/types.ts';
import type { FlowDeps } from '../types.ts';
import { REQUEST_URI_PREFIX } from './push.ts';
import type { ResponseMode } from '../authorization-code/request.ts';

export type PushedRequestResolution =
  /** Nowhere safe to redirect to: show an error page (RFC 6749 §4.1.2.1). */
  | { readonly kind: 'fatal'; readonly error: OAuthError }
  /** The client is known: the error goes to its redirect URI. */
  | { readonly kind: 'redirect'; readonly redirectUri: string; readonly responseMode: ResponseMode; readonly state: string | null; readonly error: OAuthError }
  | {
      readonly kind: 'ok';
      /** The pushed parameters, to check as an authorization request. */
      readonly params: RawParams;
      /** The hash by which the decision spends it. */
      readonly hash: string;
    };

/** Whether the request carries a request_uri: then nothing else it sends is read. */
export function isPushedReference(params: RawParams): boolean {
  return params['request_uri'] !== undefined;
}

/**
 * The pushed request a `request_uri` stands for, for the browser `browser` (a hash of its
 * CSRF cookie). On the browser's first visit the request is claimed; later visits find it
 * claimed by them, with the parameters as pushed: a visit is no sign-in, and what asked for
 * one (`prompt=login`, `max_age`) is answered only by a sign-in made since it asked
 * (authorization-code/sign-in-asked.ts).
 */
export async function resolvePushedRequest(deps: FlowDeps, params: RawParams, browser: string): Promise<PushedRequestResolution> {
  const clientId = params['client_id'];
  const requestUri = params['request_uri'];
  if (typeof clientId !== 'string' || typeof requestUri !== 'string') {
    return { kind: 'fatal', error: new OAuthError('invalid_request', 'client_id and request_uri must each be sent once') };
  }
  const client = clientId.length <= 256 ? await deps.store.clients.get(clientId) : null;
  if (!client) return { kind: 'fatal', error: new OAuthError('invalid_request', 'client_id is not a registered client') };
  const unusable = new OAuthError('invalid_request_uri', 'the request_uri has expired, has been used, or is not one this client pushed');
  if (!requestUri.startsWith(REQUEST_URI_PREFIX) || requestUri.length > 256) return refuse(client, null, browser, unusable);

  const hash = hashSecret(requestUri);
  const now = deps.clock.now();
  const resumed = await deps.store.pushedRequests.resume(hash, client.id, browser, now);
  if (resumed) return { kind: 'ok', params: resumed.params, hash };
  const claimed = await deps.store.pushedRequests.claim(hash, client.id, browser, now, now + deps.config.par.interactionLifetime * 1000);
  if (claimed) return { kind: 'ok', params: claimed.params, hash };
  return refuse(client, await deps.store.pushedRequests.find(hash), browser, unusable);
}

/**
 * Spends the request on the user's decision (approve or deny): exactly one decision is
 * made on a request_uri. Null when it was already spent or has expired.
 */
export async function spendPushedRequest(deps: FlowDeps, clientId: string, hash: string, browser: string): Promise<PushedRequestRecord | null> {
  return deps.store.pushedRequests.decide(hash, clientId, browser, deps.clock.now());
}

/**
 * Where a request_uri that cannot be used is reported: the redirect URI it was pushed with,
 * when it is this client's and still registered; otherwise the client's one registered
 * redirect URI, if it has only one, since nothing says which of several was meant. The
 * pushed `state` goes back only to the browser that claimed the request (or to any, if none
 * did): another browser has no business with the client's state for this user.
 */
function refuse(client: ClientRecord, found: PushedRequestRecord | null, browser: string, error: OAuthError): PushedRequestResolution {
  const pushedTo = found?.clientId === client.id ? found.params['redirect_uri'] : undefined;
  if (found && typeof pushedTo === 'string' && redirectUriRegistered(client.redirectUris, pushedTo)) {
    const ownBrowser = found.browser === null || found.browser === browser;
    const state = found.params['state'];
    const responseMode = found.params['response_mode'] === 'form_post' ? 'form_post' : 'query';
    return { kind: 'redirect', redirectUri: pushedTo, responseMode, state: ownBrowser && typeof state === 'string' ? state : null, error };
  }
  if (client.redirectUris.length === 1) return { kind: 'redirect', redirectUri: client.redirectUris[0]!, responseMode: 'query', state: null, error };
  return { kind: 'fatal', error };
}
