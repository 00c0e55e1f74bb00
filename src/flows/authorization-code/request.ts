import { OAuthError } from '../../core/errors.ts';
import { GRANT_AUTHORIZATION_CODE, type RawParams } from '../../core/protocol.ts';
import { redirectUriRegistered } from '../../core/redirect-uri.ts';
import { parseScope } from '../../core/scopes.ts';
import type { ClientRecord, Store } from '../../store/types.ts';
import type { TokenIssuer } from '../../tokens/issue.ts';
import { parseClaimsRequest, scopesForClaims, type ClaimsRequest } from '../claims.ts';
import { parseClaimsLocales } from '../../tokens/claims.ts';
import { readRequestObject, unverifiedRequestObject, type RequestObjectDeps } from './request-object.ts';
import { checkRequestedAccess, describeAccess, ResourceCatalog, resourceParams, type DescribedAccess } from '../resources.ts';

/** OIDC Core §3.1.2.1 `prompt` values. */
export const PROMPT_VALUES = ['none', 'login', 'consent', 'select_account'] as const;
export type Prompt = (typeof PROMPT_VALUES)[number];

/**
 * How the answer reaches the client (OAuth 2.0 Multiple Response Type Encoding Practices
 * §2.1): `query` on the redirect, the default for `code`, or `form_post` (OAuth 2.0 Form
 * Post Response Mode §2), a form the browser posts to the redirect URI.
 */
export const RESPONSE_MODES = ['query', 'form_post'] as const;

/** A browser posts forms to web addresses only, not to an app's private-use scheme: there, form_post's answer goes in the query. */
const formPostable = (redirectUri: string): boolean => /^https?:/.test(redirectUri);
export type ResponseMode = (typeof RESPONSE_MODES)[number];

/** A validated authorization request (RFC 6749 §4.1.1, RFC 7636 §4.3, OIDC Core §3.1.2.1). */
export interface AuthorizationRequest {
  readonly client: ClientRecord;
  readonly redirectUri: string;
  readonly scope: readonly string[];
  /** RFC 8707 §2: the APIs named by `resource`, each registered. */
  readonly resources: readonly string[];
  /** The scope as the consent page shows it: OpenID scopes, then each API by its name. */
  readonly access: DescribedAccess;
  readonly state: string | null;
  readonly responseMode: ResponseMode;
  readonly nonce: string | null;
  /** The S256 challenge; empty when a client with PKCE optional sent none (it sent a nonce). */
  readonly codeChallenge: string;
  /** OIDC Core §3.1.2.1: the `prompt` values asked for (none alone, or any of the others). */
  readonly prompt: readonly Prompt[];
  /** OIDC Core §3.1.2.1: seconds since the user last signed in beyond which they must again. */
  readonly maxAge: number | null;
  /** RFC 9449 §10: the thumbprint of the DPoP key the code is bound to. */
  readonly dpopJkt: string | null;
  /** OIDC Core §3.1.2.1 acr_values: the classes asked for, in order of preference; null when none. */
  readonly acrValues?: readonly string[] | null;
  /** OIDC Core §5.5: the claims about the person asked for in the ID token (the `claims` parameter). */
  readonly idTokenClaims?: readonly string[];
  /** OIDC Core §5.5: the claims about the person asked for in UserInfo (the `claims` parameter's `userinfo`). */
  readonly userinfoClaims?: readonly string[];
  /**
   * The scopes of the claims asked for by name (§5.5) beyond `scope`, among those the client
   * may have: a claim needs the consent its scope needs (§5.4), so the person is asked for
   * these and the grant remembers them; but the tokens keep the scope asked for, and only the
   * claims named are released beyond it.
   */
  readonly claimsScope?: readonly string[];
  /** OIDC Core §5.2 `claims_locales`: the languages asked for the names in the ID token and UserInfo. */
  readonly claimsLocales?: readonly string[];
  /** OIDC Core §3.1.2.1 `id_token_hint`: the `sub` of the person it names, once checked; null when none was sent. */
  readonly hintedSub?: string | null;
}

/**
 * What the person approves, and their grant remembers: the scope asked for and the scopes of
 * the claims asked for by name (`claimsScope`).
 */
export function approvalScope(request: Pick<AuthorizationRequest, 'scope' | 'claimsScope'>): readonly string[] {
  const extra = (request.claimsScope ?? []).filter((scope) => !request.scope.includes(scope));
  return extra.length === 0 ? request.scope : [...request.scope, ...extra];
}

export type RequestCheck =
  /** The client or redirect_uri cannot be trusted: show an error page, never redirect (RFC 6749 §4.1.2.1). */
  | { readonly kind: 'fatal'; readonly error: OAuthError }
  /** Every other error goes back to the client's registered redirect_uri. */
  | { readonly kind: 'redirect'; readonly redirectUri: string; readonly responseMode: ResponseMode; readonly state: string | null; readonly error: OAuthError }
  /** `params`: the request's parameters, those of its request object taken in (without `request`). */
  | { readonly kind: 'ok'; readonly request: AuthorizationRequest; readonly params: Readonly<Record<string, string | readonly string[]>> };

/** What checking a request needs: the store, and the client's keys for a request object. */
export interface RequestCheckDeps extends RequestObjectDeps {
  readonly store: Store;
  /** Checks an `id_token_hint` (OIDC Core §3.1.2.1) as logout does its own. */
  readonly tokens: Pick<TokenIssuer, 'readIdTokenHint'>;
  /** The client of a Client ID Metadata Document URL (flows/registration/metadata-document.ts), when they are on. */
  readonly metadataClient?: (clientId: string) => Promise<ClientRecord | null>;
}

/** The S256 challenge is a base64url SHA-256 digest: 43 characters; so is a JWK SHA-256 thumbprint. */
const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;
/** Bounds what a client can make us store and echo. */
const MAX_VALUE_LENGTH = 1024;
/**
 * OIDC Core §3.1.2.1 `id_token_hint` is an ID token, and `login_hint` may be an e-mail
 * address or a token of the client's: longer than other values (an ID token with a long name
 * and address passes 1,024 characters), still bounded.
 */
export const MAX_HINT_LENGTH = 8192;
const LONG_VALUES: Readonly<Record<string, number>> = { id_token_hint: MAX_HINT_LENGTH, login_hint: MAX_HINT_LENGTH };

function single(params: RawParams, name: string): { value: string | null; repeated: boolean } {
  const raw = params[name];
  if (Array.isArray(raw)) return { value: null, repeated: raw.length > 1 };
  // RFC 6749 §3.1: parameters sent without a value are treated as if they were omitted.
  return { value: typeof raw === 'string' && raw !== '' ? raw : null, repeated: false };
}

/**
 * Validates an authorization request. The client and redirect_uri are checked first and
 * alone: until both are known good, nothing is sent to the redirect_uri. `pushed`: the
 * parameters came through a pushed authorization request (RFC 9126), being pushed or
 * resolved from its request_uri; `parRequired`: the server takes no other (`TESSERA_REQUIRE_PAR`).
 */
export async function checkAuthorizationRequest(deps: RequestCheckDeps, sent: RawParams, pushed = false, parRequired = false): Promise<RequestCheck> {
  const { store } = deps;
  const clientId = single(sent, 'client_id');
  if (clientId.repeated || single(sent, 'redirect_uri').repeated) {
    return { kind: 'fatal', error: new OAuthError('invalid_request', 'client_id and redirect_uri must each be sent once') };
  }
  if (clientId.value === null) return { kind: 'fatal', error: new OAuthError('invalid_request', 'client_id is required') };
  let client: ClientRecord | null = null;
  if (clientId.value.length <= MAX_VALUE_LENGTH) {
    try {
      client = (await deps.metadataClient?.(clientId.value)) ?? (await store.clients.get(clientId.value));
    } catch (error) {
      // A metadata document that cannot be used: said to the person, never redirected.
      if (error instanceof OAuthError) return { kind: 'fatal', error };
      throw error;
    }
  }
  if (!client) return { kind: 'fatal', error: new OAuthError('invalid_request', 'client_id is not a registered client') };

  const withObject = await takeRequestObject(deps, client, sent);
  if (withObject.kind !== 'ok') return withObject;
  const params = withObject.params;
  const redirect = single(params, 'redirect_uri');
  if (redirect.repeated) return { kind: 'fatal', error: new OAuthError('invalid_request', 'client_id and redirect_uri must each be sent once') };
  if (redirect.value === null) return { kind: 'fatal', error: new OAuthError('invalid_request', 'redirect_uri is required') };
  if (!redirectUriRegistered(client.redirectUris, redirect.value)) {
    return { kind: 'fatal', error: new OAuthError('invalid_request', 'redirect_uri is not registered for this client') };
  }
  const redirectUri = redirect.value;
  const stateParam = single(params, 'state');
  const state = stateParam.repeated ? null : stateParam.value;
  // Form Post Response Mode §2: errors, too, go back the way the client asked, once the mode
  // is one we know; an unknown one is refused in the query.
  const mode = single(params, 'response_mode').value;
  const responseMode = RESPONSE_MODES.find((known) => known === mode) ?? 'query';
  const fail = (error: OAuthError): RequestCheck => ({ kind: 'redirect', redirectUri, responseMode, state, error });
  if (mode !== null && mode !== responseMode)
    return fail(new OAuthError('invalid_request', `response_mode ${mode.slice(0, 40)} is not supported (query, form_post)`));
  if (responseMode === 'form_post' && !formPostable(redirectUri)) {
    return {
      kind: 'redirect',
      redirectUri,
      responseMode: 'query',
      state,
      error: new OAuthError('invalid_request', 'response_mode=form_post needs an http or https redirect_uri'),
    };
  }

  for (const [name, value] of Object.entries(params)) {
    // RFC 8707 §2: "Multiple resource parameters MAY be used"; every other one is sent once.
    if (name !== 'resource' && Array.isArray(value) && value.length > 1) return fail(new OAuthError('invalid_request', `${name} must be sent once`));
    const values: readonly unknown[] = Array.isArray(value) ? value : [value];
    const limit = LONG_VALUES[name] ?? MAX_VALUE_LENGTH;
    if (values.some((item) => typeof item === 'string' && item.length > limit))
      return fail(new OAuthError('invalid_request', `${name} is too long (at most ${limit} characters)`));
  }
  const responseType = single(params, 'response_type').value;
  if (responseType === null) return fail(new OAuthError('invalid_request', 'response_type is required'));
  if (responseType !== 'code') return fail(new OAuthError('unsupported_response_type', 'only response_type=code is supported'));
  if (!client.grantTypes.includes(GRANT_AUTHORIZATION_CODE)) {
    return fail(new OAuthError('unauthorized_client', 'this client is not allowed the authorization code grant'));
  }
  // RFC 9126 §2.1: request_uri "MUST NOT be provided" in a pushed request; at the
  // authorization endpoint it is resolved before this check (pushed-request.ts).
  if (single(params, 'request_uri').value !== null) return fail(new OAuthError('invalid_request', 'request_uri cannot be sent here'));
  // RFC 9126 §6 require_pushed_authorization_requests: "the authorization server ... only
  // accepts authorization request parameters sent via PAR".
  if (!pushed && (client.requirePar || parRequired)) {
    return fail(new OAuthError('invalid_request', 'this client must push its authorization requests (PAR) first'));
  }

  // RFC 7636 §4.4.1 and RFC 9700 §2.1.1: PKCE is required, and only S256 is accepted; an
  // absent method means plain (RFC 7636 §4.3), so it is refused too. The one exception is
  // below: a confidential client registered with PKCE optional.
  const codeChallenge = single(params, 'code_challenge').value;
  const method = single(params, 'code_challenge_method').value;
  const withoutPkce = codeChallenge === null && client.pkce !== 'required' && client.authMethod !== 'none';
  if (codeChallenge === null && !withoutPkce) return fail(new OAuthError('invalid_request', 'code_challenge is required (PKCE with S256)'));
  if (withoutPkce && method !== null) return fail(new OAuthError('invalid_request', 'code_challenge_method was sent without a code_challenge'));
  if (codeChallenge !== null && method !== 'S256') return fail(new OAuthError('invalid_request', 'code_challenge_method must be S256'));
  if (codeChallenge !== null && !S256_CHALLENGE.test(codeChallenge)) {
    return fail(new OAuthError('invalid_request', 'code_challenge must be the base64url SHA-256 of the code_verifier (43 characters)'));
  }

  const rawScope = single(params, 'scope').value;
  // RFC 6749 §3.3: without a default scope, an omitted scope fails as invalid_scope.
  if (rawScope === null) return fail(new OAuthError('invalid_scope', 'scope is required'));
  const parsedScope = parseScope(rawScope);
  if (parsedScope === null || parsedScope.length === 0) return fail(new OAuthError('invalid_scope', 'scope is malformed'));
  // OIDC Core §5.5: the claims parameter, in an OpenID request. A claim asked for by name
  // needs the consent its scope needs (§5.4): the person is asked for that scope, and the
  // claim alone is released (claimsScope).
  let claims: ClaimsRequest | null;
  try {
    claims = parsedScope.includes('openid') ? parseClaimsRequest(single(params, 'claims').value) : null;
  } catch (error) {
    if (error instanceof OAuthError) return fail(error);
    throw error;
  }
  const scope = parsedScope;
  // Only those beyond the scope: a refresh narrowed to less than the scope asked for releases
  // none of the claims of what it left out, named or not (refresh/token.ts).
  const claimsScope = claims === null ? [] : scopesForClaims(claims, client.scopes).filter((extra) => !scope.includes(extra));
  const approving = approvalScope({ scope, claimsScope });
  const resources = resourceParams(params['resource']);
  const catalog = await ResourceCatalog.load(store, approving, resources);
  try {
    checkRequestedAccess(catalog, client, approving, resources);
  } catch (error) {
    if (error instanceof OAuthError) return fail(error);
    throw error;
  }

  // RFC 9700 §2.1.1: "Clients MAY use [...] the OpenID Connect "nonce" parameter [...] instead
  // of PKCE" only where the client is confidential and the request is an OpenID one, whose
  // ID token carries the nonce back to be checked.
  // A client registered `optional-without-nonce` is let through with neither: OIDC Core
  // §3.1.2.1 makes nonce OPTIONAL in the code flow, and certification sends requests so.
  const nonce = single(params, 'nonce').value;
  if (withoutPkce && client.pkce === 'optional' && (!scope.includes('openid') || nonce === null)) {
    return fail(new OAuthError('invalid_request', 'without PKCE (code_challenge), this client must send an OpenID request (scope openid) with a nonce'));
  }

  // OIDC Core §3.1.2.1: prompt is a space-delimited list; "If this parameter contains none
  // with any other value, an error is returned." Values it does not define are refused.
  const prompt: Prompt[] = [];
  for (const value of (single(params, 'prompt').value ?? '').split(' ').filter(Boolean)) {
    const known = PROMPT_VALUES.find((candidate) => candidate === value);
    if (known === undefined) return fail(new OAuthError('invalid_request', `prompt value not supported: ${value} (none, login, consent, select_account)`));
    if (!prompt.includes(known)) prompt.push(known);
  }
  if (prompt.includes('none') && prompt.length > 1) return fail(new OAuthError('invalid_request', 'prompt=none cannot be combined with other values'));

  const rawMaxAge = single(params, 'max_age').value;
  if (rawMaxAge !== null && !/^\d{1,9}$/.test(rawMaxAge)) return fail(new OAuthError('invalid_request', 'max_age must be a number of seconds'));
  const maxAge = rawMaxAge === null ? null : Number(rawMaxAge);

  // OIDC Core §3.1.2.1 id_token_hint: "ID Token previously issued by the Authorization Server
  // being passed as a hint about the End-User's current or past authenticated session with the
  // Client", and "The Authorization Server need not be listed as an audience of the ID Token
  // when it is used as an id_token_hint value": the signature, issuer and shape are checked, an
  // expired one is still a hint. One that is no such token, or was issued to another client,
  // is a request this server cannot answer as asked.
  const rawHint = single(params, 'id_token_hint').value;
  const hint = rawHint === null ? null : await deps.tokens.readIdTokenHint(rawHint);
  if (rawHint !== null && hint === null) return fail(new OAuthError('invalid_request', 'id_token_hint is not an ID token issued by this server'));
  if (hint !== null && !hint.aud.includes(client.id)) return fail(new OAuthError('invalid_request', 'id_token_hint was not issued to this client'));

  // RFC 9449 §10: "dpop_jkt: The value of the JWK SHA-256 Thumbprint" of the proof-of-
  // possession key the code is to be bound to.
  const dpopJkt = single(params, 'dpop_jkt').value;
  if (dpopJkt !== null && !S256_CHALLENGE.test(dpopJkt)) {
    return fail(new OAuthError('invalid_request', 'dpop_jkt must be a base64url JWK SHA-256 thumbprint (43 characters)'));
  }

  return {
    kind: 'ok',
    params,
    request: {
      client,
      redirectUri,
      scope,
      resources,
      access: describeAccess(catalog, approving),
      state,
      responseMode,
      nonce,
      codeChallenge: codeChallenge ?? '',
      prompt,
      maxAge,
      dpopJkt,
      // §5.5.1.1: acr is asked for by acr_values or by the claims parameter; acr_values' classes first.
      acrValues: parseAcrValues(single(params, 'acr_values').value) ?? claims?.idTokenAcr ?? null,
      idTokenClaims: claims?.idToken ?? [],
      userinfoClaims: claims?.userinfo ?? [],
      claimsScope,
      claimsLocales: parseClaimsLocales(single(params, 'claims_locales').value),
      hintedSub: hint?.sub ?? null,
    },
  };
}

/**
 * The request's parameters with those of its request object taken in (OIDC Core §6.3.3: "If
 * the same parameter exists both in the Request Object and the OAuth Authorization Request
 * parameters, the parameter in the Request Object is used"). A refused object is reported
 * at a registered redirect URI, the request's or else the object's own, with the state of
 * either; with neither, on the error page.
 */
async function takeRequestObject(
  deps: RequestCheckDeps,
  client: ClientRecord,
  sent: RawParams,
): Promise<{ readonly kind: 'ok'; readonly params: Readonly<Record<string, string | readonly string[]>> } | Exclude<RequestCheck, { kind: 'ok' }>> {
  const outer: Record<string, string | readonly string[]> = {};
  for (const [name, value] of Object.entries(sent)) if (value !== undefined) outer[name] = value;
  const request = single(sent, 'request');
  if (request.repeated) return { kind: 'fatal', error: new OAuthError('invalid_request', 'request must be sent once') };
  if (request.value === null) return { kind: 'ok', params: outer };
  delete outer['request'];
  try {
    const fromObject = await readRequestObject(deps, client, request.value);
    // OIDC Core §6.1: response_type "MUST match" the object's, where both are sent.
    const responseType = single(sent, 'response_type').value;
    if (responseType !== null && fromObject['response_type'] !== undefined && fromObject['response_type'] !== responseType) {
      throw new OAuthError('invalid_request_object', "the request object's response_type differs from the request's");
    }
    return { kind: 'ok', params: { ...outer, ...fromObject } };
  } catch (error) {
    if (!(error instanceof OAuthError)) throw error;
    const peeked = unverifiedRequestObject(request.value);
    const named = (name: string): string | null => {
      const value = single(sent, name).value ?? peeked?.[name];
      return typeof value === 'string' && value !== '' ? value : null;
    };
    const redirectUri = named('redirect_uri');
    if (redirectUri === null || !redirectUriRegistered(client.redirectUris, redirectUri)) return { kind: 'fatal', error };
    const responseMode = named('response_mode') === 'form_post' && formPostable(redirectUri) ? 'form_post' : 'query';
    return { kind: 'redirect', redirectUri, responseMode, state: named('state'), error };
  }
}

/** OIDC Core §3.1.2.1: "a space-separated string"; an empty one asks for nothing. */
function parseAcrValues(raw: string | null): readonly string[] | null {
  const values = raw?.split(' ').filter(Boolean) ?? [];
  return values.length > 0 ? values : null;
}

/** The answer to an authorization request, for the browser to carry to the client. */
export interface ClientResponse {
  readonly redirectUri: string;
  readonly responseMode: ResponseMode;
  /** With `state` when the request had one, and `iss` (RFC 9207). */
  readonly params: Readonly<Record<string, string>>;
}

/**
 * The answer to the client (RFC 6749 §4.1.2 and §4.1.2.1) at `to.redirectUri`, the way the
 * request asked (`to.responseMode`), with `state` and `iss` (RFC 9207).
 */
export function clientResponse(
  to: { readonly redirectUri: string; readonly responseMode: ResponseMode; readonly state: string | null },
  issuer: string,
  params: Record<string, string>,
): ClientResponse {
  return { redirectUri: to.redirectUri, responseMode: to.responseMode, params: { ...params, ...(to.state === null ? {} : { state: to.state }), iss: issuer } };
}

/** `response` as a redirect: its parameters added to any query the registered URI already has. */
export function responseRedirectUrl(response: ClientResponse): string {
  const url = new URL(response.redirectUri);
  for (const [name, value] of Object.entries(response.params)) url.searchParams.append(name, value);
  return url.href;
}
