import type { FastifyRequest } from 'fastify';
import type { DpopNonces } from '../flows/dpop/nonce.ts';
import type { PasswordQueue } from '../core/password-queue.ts';
import type { FlowDeps, TokenGrant } from '../flows/types.ts';
import type { ClientKeySets } from '../tokens/client-jwks.ts';
import type { KeyManager } from '../tokens/keys.ts';
import type { SecretBox } from '../tokens/secret-box.ts';
import type { ClientRecord } from '../store/types.ts';
import type { RequestCheckDeps } from '../flows/authorization-code/request.ts';

/** Everything the HTTP layer needs, built by the composition root (app.ts for main.ts, cli, tests). */
export interface AppDeps extends FlowDeps {
  readonly keys: KeyManager;
  /** Checks sign-in passwords on threads of their own (core/password-queue.ts). */
  readonly passwords: PasswordQueue;
  /** The public keys of private_key_jwt clients, fetched and cached. */
  readonly clientKeys: ClientKeySets;
  /** The grant types of the token endpoint, in the order discovery lists them. */
  readonly grants: readonly TokenGrant[];
  /** RFC 9449 §8: the server nonces DPoP proofs must carry when `config.dpop.nonces` is on. */
  readonly dpopNonces: DpopNonces;
  /** Seals and opens upstream providers' secrets under the key encryption key. */
  readonly secrets: SecretBox;
  /**
   * The client of a Client ID Metadata Document URL, fetched and registered, a new
   * one counted against the address `ip`; absent when they are off.
   */
  readonly metadataClient?: (clientId: string, ip: string) => Promise<ClientRecord | null>;
  /** Whether the server is draining (`/readyz`). */
  readonly readiness: { readonly draining: boolean };
}

/** What checking an authorization request from `request` needs: a metadata document's new app is counted against its address. */
export function forAuthorizationRequest(deps: AppDeps, request: FastifyRequest): Omit<AppDeps, 'metadataClient'> & RequestCheckDeps {
  const { metadataClient, ...rest } = deps;
  return metadataClient === undefined ? rest : { ...rest, metadataClient: (clientId) => metadataClient(clientId, request.ip) };
}

/** The dependencies with the seam that names this request's address and user agent in its events. */
export function forRequest<T extends FlowDeps>(deps: T, request: FastifyRequest): T {
  return { ...deps, events: deps.events.forRequest({ ip: request.ip, userAgent: request.headers['user-agent'] ?? null }) };
}
