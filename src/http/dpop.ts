import type { FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import { checkDpopProof, DPOP_SIGNING_ALGORITHMS, type DpopProof } from '../flows/dpop/proof.ts';
import type { AppDeps } from './deps.ts';

/**
 * The DPoP proof of a request to `path` (RFC 9449 §4.3), checked for the URL the issuer
 * names, not the one the request's Host header claims. With server nonces on (§8), every
 * answer carries the current nonce in `DPoP-Nonce`, and a `use_dpop_nonce` refusal does too.
 */
export function requestProof(
  deps: AppDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  path: string,
  accessToken?: string,
): Promise<DpopProof | null> | null {
  // Most requests carry no proof: answered without an async call, a URL built and a promise
  // awaited on every token request.
  if (request.headers.dpop === undefined && !deps.config.dpop.nonces) return null;
  return checkRequestProof(deps, request, reply, path, accessToken);
}

async function checkRequestProof(deps: AppDeps, request: FastifyRequest, reply: FastifyReply, path: string, accessToken?: string): Promise<DpopProof | null> {
  const settings = deps.config.dpop;
  if (settings.nonces) reply.header('DPoP-Nonce', await deps.dpopNonces.current());
  const url = `${deps.config.issuer}${path}`;
  try {
    return await checkDpopProof({ store: deps.store, clock: deps.clock, settings, nonces: deps.dpopNonces }, request.headers.dpop, {
      method: request.method,
      url,
      ...(accessToken === undefined ? {} : { accessToken }),
    });
  } catch (error) {
    // A client sends proofs to several endpoints (PAR, device authorization, token,
    // resources): the refusal says which one refused it.
    if (error instanceof OAuthError && error.code === 'invalid_dpop_proof') throw proofRefused(url, error.description, error);
    throw error;
  }
}

/** `invalid_dpop_proof` naming the endpoint that wanted (or refused) the proof. */
export function proofRefused(url: string, description: string, cause?: unknown): OAuthError {
  return new OAuthError('invalid_dpop_proof', `${description} (at ${url})`, cause === undefined ? {} : { cause });
}

const quoted = (value: string) => `"${value.replace(/["\\]/g, '')}"`;

/** RFC 9449 §7.1: the DPoP challenge of a protected resource, with the algorithms it accepts. */
export function dpopChallenge(error?: OAuthError): string {
  const challenge = `DPoP algs=${quoted(DPOP_SIGNING_ALGORITHMS.join(' '))}`;
  return error ? `${challenge}, error=${quoted(error.code)}, error_description=${quoted(error.description)}` : challenge;
}

/** Whether the access token or proof of a request is refused for a DPoP reason (§7.1, §9). */
export function isDpopError(error: OAuthError): boolean {
  return error instanceof OAuthError && (error.code === 'invalid_dpop_proof' || error.code === 'use_dpop_nonce');
}

/** The challenges a resource sends a request that carried no access token: both schemes. */
export function resourceChallenges(): string[] {
  return [`Bearer realm="tessera"`, dpopChallenge()];
}

/** Re-thrown at a resource: §7.1 and §9 answer a refused proof with 401, not 400. */
export function asResourceError(error: OAuthError): OAuthError {
  return new OAuthError(error.code, error.description, { status: 401, cause: error });
}
