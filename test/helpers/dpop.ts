/**
 * DPoP (RFC 9449) and PAR (RFC 9126) through oauth4webapi, which implements both as a client,
 * and hand-made proofs for the bad inputs the library would never send.
 */
import assert from 'node:assert/strict';
import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import * as oauth from 'oauth4webapi';
import { FormBrowser } from './browser.ts';
import { REDIRECT_URI, type TestClient, type TestServer, type TestUser } from './server.ts';

export const insecure = { [oauth.allowInsecureRequests]: true } as const;

/** A key pair as oauth4webapi and jose make them. */
export type KeyPair = Awaited<ReturnType<typeof oauth.generateKeyPair>>;

export async function discover(server: TestServer): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(server.url);
  return oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, insecure));
}

export function clientAuth(client: TestClient): oauth.ClientAuth {
  return client.clientSecret === '' ? oauth.None() : oauth.ClientSecretBasic(client.clientSecret);
}

/** A DPoP key pair and oauth4webapi's handle for it. */
export interface DpopKey {
  readonly keys: KeyPair;
  readonly handle: oauth.DPoPHandle;
  readonly jkt: string;
}

export async function dpopKey(_client: TestClient, alg = 'ES256'): Promise<DpopKey> {
  const keys = await oauth.generateKeyPair(alg, { extractable: true });
  const handle = oauth.DPoP({}, keys);
  return { keys, handle, jkt: await handle.calculateThumbprint() };
}

/** The authorization request parameters of a code flow with PKCE. */
export async function codeRequest(scope = 'openid profile'): Promise<{ params: Record<string, string>; verifier: string; state: string; nonce: string }> {
  const verifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const nonce = oauth.generateRandomNonce();
  return {
    verifier,
    state,
    nonce,
    params: {
      redirect_uri: REDIRECT_URI,
      response_type: 'code',
      scope,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      state,
      nonce,
      // Every request asks again, so that each test sees the approval page whatever an
      // earlier one approved (consent is remembered per user and client).
      prompt: 'consent',
    },
  };
}

/** Pushes `params` to the PAR endpoint (RFC 9126) as `client`, with `options` (a DPoP handle); the answer as oauth4webapi checks it. */
export async function pushRequest(
  as: oauth.AuthorizationServer,
  client: TestClient,
  params: Readonly<Record<string, string>> | URLSearchParams,
  options: Omit<oauth.PushedAuthorizationRequestOptions, typeof oauth.allowInsecureRequests> = {},
): Promise<oauth.PushedAuthorizationResponse> {
  return oauth.processPushedAuthorizationResponse(
    as,
    { client_id: client.clientId },
    await oauth.pushedAuthorizationRequest(as, { client_id: client.clientId }, clientAuth(client), params, { ...options, ...insecure }),
  );
}

/** The authorization endpoint's address with `params`, the client's `client_id` among them. */
export function authorizationUrl(as: oauth.AuthorizationServer, clientId: string, params: Readonly<Record<string, string>>): URL {
  const url = new URL(as.authorization_endpoint!);
  for (const [name, value] of Object.entries({ ...params, client_id: clientId })) url.searchParams.set(name, value);
  return url;
}

/**
 * The token endpoint's answer to the code in `callback`, as oauth4webapi asks for it: the
 * client authenticated as it registered (./dpop.ts `clientAuth`), `request`'s PKCE verifier,
 * and `options` (a DPoP handle, more parameters).
 */
export function redeemCode(
  as: oauth.AuthorizationServer,
  client: TestClient,
  callback: URLSearchParams,
  request: { readonly verifier: string },
  options: Omit<oauth.TokenEndpointRequestOptions, typeof oauth.allowInsecureRequests> = {},
): Promise<Response> {
  return oauth.authorizationCodeGrantRequest(as, { client_id: client.clientId }, clientAuth(client), callback, REDIRECT_URI, request.verifier, {
    ...options,
    ...insecure,
  });
}

/** The tokens of a redemption's answer, as oauth4webapi checks them: an ID token is required, with `request`'s nonce. */
export function redeemedTokens(
  as: oauth.AuthorizationServer,
  client: TestClient,
  response: Response,
  request: { readonly nonce: string },
): Promise<oauth.TokenEndpointResponse> {
  return oauth.processAuthorizationCodeResponse(as, { client_id: client.clientId }, response, { expectedNonce: request.nonce, requireIdToken: true });
}

/** Signs in and approves at `url`; returns the callback parameters, checked by oauth4webapi. */
export async function approveAt(
  as: oauth.AuthorizationServer,
  client: TestClient,
  url: URL,
  user: TestUser | null,
  state: string,
  browser = new FormBrowser(url.origin),
): Promise<URLSearchParams> {
  const page = await browser.authorize(url.href, user);
  assert.ok(page.location?.startsWith(REDIRECT_URI), `redirected to ${page.location}`);
  return oauth.validateAuthResponse(as, { client_id: client.clientId }, new URL(page.location!), state);
}

export interface ProofOptions {
  readonly htm?: string;
  readonly htu: string;
  readonly iat?: number;
  readonly jti?: string;
  readonly ath?: string;
  readonly nonce?: string;
  readonly alg?: string;
  readonly typ?: string;
  /** The jwk header as sent; the public key by default. */
  readonly jwk?: JWK;
  /** Signs with this key instead of the pair's private key. */
  readonly signWith?: CryptoKey | Uint8Array;
}

/** A DPoP proof made by hand, to send what a correct client never would. */
export async function handProof(keys: KeyPair, options: ProofOptions): Promise<string> {
  const publicJwk = await exportJWK(keys.publicKey);
  return new SignJWT({
    htm: options.htm ?? 'POST',
    htu: options.htu,
    ...(options.ath === undefined ? {} : { ath: options.ath }),
    ...(options.nonce === undefined ? {} : { nonce: options.nonce }),
  })
    .setProtectedHeader({ alg: options.alg ?? 'ES256', typ: options.typ ?? 'dpop+jwt', jwk: options.jwk ?? publicJwk })
    .setJti(options.jti ?? randomUUID())
    .setIssuedAt(options.iat ?? Math.floor(Date.now() / 1000))
    .sign(options.signWith ?? keys.privateKey);
}

/** An ES256 key pair whose private half jose can export. */
export async function handKeys(): Promise<{ keys: KeyPair; jkt: string; privateJwk: JWK }> {
  const keys = (await generateKeyPair('ES256', { extractable: true })) as KeyPair;
  return { keys, jkt: await calculateJwkThumbprint(await exportJWK(keys.publicKey)), privateJwk: await exportJWK(keys.privateKey) };
}

export function ath(accessToken: string): string {
  return createHash('sha256').update(accessToken).digest('base64url');
}
