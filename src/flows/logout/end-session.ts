/**
 * OpenID Connect RP-Initiated Logout 1.0 §2-3: an app sends the browser to the end-session
 * endpoint to sign the person out, and may ask to be sent back afterwards. Whether the
 * person is signed out at once, asked first, or shown an error is decided here.
 */
import { OAuthError } from '../../core/errors.ts';
import type { RawParams } from '../../core/protocol.ts';
import type { ClientRecord, SessionRecord } from '../../store/types.ts';
import type { FlowDeps } from '../types.ts';

/** Bounds what a request can make us echo. */
const MAX_VALUE_LENGTH = 4096;

/** Where the browser goes once signed out: a URI the client registered, with `state`. */
export interface AfterLogout {
  readonly client: ClientRecord | null;
  /** Null: the signed-out page of this server. */
  readonly redirectUri: string | null;
  readonly state: string | null;
}

export type EndSessionStep =
  /** Nothing to trust: an error page, never a redirect (§3: an unregistered URI is not used). */
  | { readonly kind: 'error'; readonly error: OAuthError }
  /** Sign the session out now (or nothing to sign out), then go on. */
  | { readonly kind: 'end'; readonly after: AfterLogout }
  /** §2: without proof that the request comes from an app of this session, the person is asked. */
  | { readonly kind: 'confirm'; readonly after: AfterLogout };

function single(params: RawParams, name: string): string | null {
  const value = params[name];
  if (Array.isArray(value)) throw new OAuthError('invalid_request', `${name} must be sent once`);
  return typeof value === 'string' && value !== '' ? value : null;
}

/** Shown of a received value: enough to recognise it, never a page of it. */
const SHOWN_LENGTH = 200;

/**
 * Why `uri` is not used, with the value received, so that the app's developer can compare it
 * with what they registered; the most common slip, a trailing slash, is named.
 */
function unregisteredUri(client: ClientRecord, uri: string): string {
  const shown = uri.length > SHOWN_LENGTH ? `${uri.slice(0, SHOWN_LENGTH)}…` : uri;
  const slashed = uri.endsWith('/') ? uri.slice(0, -1) : `${uri}/`;
  const slash = client.postLogoutRedirectUris.includes(slashed)
    ? uri.endsWith('/')
      ? ' (it is registered without the trailing slash)'
      : ' (it is registered with a trailing slash)'
    : '';
  return `post_logout_redirect_uri ${shown} is not registered for this client${slash}; it must match a registered one exactly`;
}

/** The URL to send the browser to: the registered URI with `state` added to its query. */
export function postLogoutRedirect(after: AfterLogout): string | null {
  if (after.redirectUri === null) return null;
  const url = new URL(after.redirectUri);
  if (after.state !== null) url.searchParams.append('state', after.state);
  return url.href;
}

/**
 * Checks an end-session request (GET query or POST form, §2) against the browser's session.
 * `confirmed` is true for the confirmation form posted from our own page (CSRF-checked by
 * the caller): the person has said to sign out, no hint is needed.
 */
export async function checkEndSession(
  deps: Pick<FlowDeps, 'store' | 'tokens'>,
  params: RawParams,
  session: SessionRecord | null,
  confirmed: boolean,
): Promise<EndSessionStep> {
  let values: { hint: string | null; clientId: string | null; uri: string | null; state: string | null };
  try {
    values = {
      hint: single(params, 'id_token_hint'),
      clientId: single(params, 'client_id'),
      uri: single(params, 'post_logout_redirect_uri'),
      state: single(params, 'state'),
    };
  } catch (error) {
    return { kind: 'error', error: error as OAuthError };
  }
  // ui_locales and logout_hint are accepted and ignored: one language, one account a browser.
  for (const [name, value] of Object.entries(values)) {
    if (value !== null && value.length > MAX_VALUE_LENGTH) return { kind: 'error', error: new OAuthError('invalid_request', `${name} is too long`) };
  }

  // §2: "The OP need not be listed as an audience of the ID Token when it is used as an
  // id_token_hint"; an expired one is still a hint. One signed by someone else, or for
  // another issuer, proves nothing: it is as if there were none.
  const hint = values.hint === null ? null : await deps.tokens.readIdTokenHint(values.hint);
  const hintClient = hint === null ? null : (hint.azp ?? (hint.aud.length === 1 ? hint.aud[0]! : null));
  // §2: "If both client_id and id_token_hint are present, the OP MUST verify that the
  // Client Identifier from the client_id parameter matches the one in the ID Token Hint."
  if (hint !== null && values.clientId !== null && !hint.aud.includes(values.clientId)) {
    return { kind: 'error', error: new OAuthError('invalid_request', 'id_token_hint was not issued to client_id') };
  }
  const clientId = values.clientId ?? hintClient;
  const client = clientId === null ? null : await deps.store.clients.get(clientId);
  if (values.clientId !== null && client === null) {
    return { kind: 'error', error: new OAuthError('invalid_request', 'client_id is not a registered client') };
  }

  // §3: "The value MUST have been previously registered with the OP"; compared exactly,
  // and only among the URIs of this client.
  let redirectUri: string | null = null;
  if (values.uri !== null) {
    if (client === null) {
      if (values.hint !== null && hint === null) {
        // A hint we cannot trust names no client: go on without the redirect, asking first.
        return { kind: 'confirm', after: { client: null, redirectUri: null, state: null } };
      }
      return { kind: 'error', error: new OAuthError('invalid_request', 'post_logout_redirect_uri needs client_id or id_token_hint') };
    }
    if (!client.postLogoutRedirectUris.includes(values.uri)) {
      return { kind: 'error', error: new OAuthError('invalid_request', unregisteredUri(client, values.uri)) };
    }
    redirectUri = values.uri;
  }
  const after: AfterLogout = { client, redirectUri, state: redirectUri === null ? null : values.state };

  // Nobody is signed in: there is nothing to end and nothing to ask.
  if (session === null || confirmed) return { kind: 'end', after };
  // A valid hint for this very session is the app's proof that it acts for it.
  const forThisSession = hint !== null && (hint.sid !== null ? hint.sid === session.sid : hint.sub === session.userId);
  return forThisSession ? { kind: 'end', after } : { kind: 'confirm', after };
}
