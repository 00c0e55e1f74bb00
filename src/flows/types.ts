import type { Clock } from '../core/clock.ts';
import type { Config } from '../config/index.ts';
import type { Events } from '../core/events.ts';
import type { GrantType } from '../core/protocol.ts';
import type { JWTVerifyGetKey } from 'jose';
import type { ClientRecord, Store, TrustedIssuerRecord } from '../store/types.ts';
import type { TokenIssuer, TokenResponse } from '../tokens/issue.ts';
import type { DpopProof } from './dpop/proof.ts';

/** What the protocol flows are given: no Fastify, so tests can call them directly. */
export interface FlowDeps {
  readonly store: Store;
  readonly clock: Clock;
  readonly config: Config;
  readonly tokens: TokenIssuer;
  /**
   * Where a flow reports something an operator should look at (a guessing attack across the
   * server, say). One JSON log line, beside the audit events.
   */
  readonly alert?: (event: { readonly type: string } & Record<string, unknown>) => void;
  /** Waits `ms`; tests may pass one that returns at once. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** The audit trail's seam: what happened, for the log, the events table and the metrics. */
  readonly events: Events;
  /** A trusted issuer's keys, fetched and cached (flows/jwt-bearer/token.ts); absent: a cache of the flow's own. */
  readonly issuerKeys?: (issuer: TrustedIssuerRecord) => JWTVerifyGetKey;
}

/** Token request parameters (RFC 6749 §3.2): each present at most once, empty ones dropped. */
export type Params = Readonly<Record<string, string>>;

/**
 * One grant type at the token endpoint (RFC 6749 §4.1.3, RFC 8628 §3.4, …). `proof`: the
 * request's checked DPoP proof (RFC 9449 §5), null without one; the tokens are bound to its key.
 */
export interface TokenGrant {
  readonly type: GrantType;
  handle(deps: FlowDeps, client: ClientRecord, params: Params, proof: DpopProof | null): Promise<TokenResponse>;
}
