/**
 * RFC 9449 (OAuth 2.0 Demonstrating Proof of Possession, DPoP) §4.3: checking a DPoP proof,
 * at the token endpoint (§5) and at a protected resource (§7). Each check below quotes the
 * point of §4.3 it implements. The signature, `typ` and `alg` are checked by jose, with the
 * key the proof carries in its header (§4.2 `jwk`).
 */
import { createHash } from 'node:crypto';
import {
  calculateJwkThumbprint,
  decodeProtectedHeader,
  EmbeddedJWK,
  errors,
  jwtVerify,
  type CryptoKey,
  type FlattenedJWSInput,
  type JWK,
  type JWTHeaderParameters,
} from 'jose';
import type { Clock } from '../../core/clock.ts';
import type { DpopSettings } from '../../config/index.ts';
import { hashSecret } from '../../core/crypto.ts';
import { OAuthError } from '../../core/errors.ts';
import type { DpopProofStore } from '../../store/types.ts';
import type { DpopNonces } from './nonce.ts';

/**
 * The asymmetric JWS algorithms a proof may be signed with (§4.3 point 6: "not none or an
 * identifier for a symmetric algorithm"), published as `dpop_signing_alg_values_supported`
 * (§5.1).
 */
export const DPOP_SIGNING_ALGORITHMS: readonly string[] = ['ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'RS256', 'RS384', 'RS512', 'EdDSA', 'Ed25519'];

/** What a valid proof establishes: the key it was signed with, by its RFC 7638 thumbprint (§6.1 `jkt`). */
export interface DpopProof {
  readonly jkt: string;
}

/** What the proof must be for. */
export interface DpopTarget {
  /** §4.2 `htm`: the request's method. */
  readonly method: string;
  /**
   * §4.2 `htu`: the endpoint's URL, derived from the issuer rather than from the request's
   * Host header, which a client (or a proxy) writes.
   */
  readonly url: string;
  /** §4.2 `ath`: at a protected resource, the access token the proof is sent with. */
  readonly accessToken?: string;
}

export interface DpopDeps {
  readonly store: { readonly dpopProofs: DpopProofStore };
  readonly clock: Clock;
  readonly settings: DpopSettings;
  readonly nonces: DpopNonces;
}

/** A proof is a few hundred bytes; an RSA-4096 key makes it about 1.5 KiB. */
const MAX_PROOF_LENGTH = 8192;
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** The members of a JWK that only a private (or symmetric) key has (RFC 7518 §6). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k'];

/**
 * A client signs every proof with the same key: its import and thumbprint are made once and
 * kept for the next proofs (they were a third of a proof check's CPU). Bounded, the least
 * recently used key going first, so that a flood of new keys costs memory only up to this.
 */
const KEY_CACHE_SIZE = 1024;
const keyCache = new Map<string, Promise<{ readonly key: CryptoKey | Uint8Array; readonly jkt: string }>>();

/**
 * The proof's own key, through jose's `EmbeddedJWK` (which refuses a private or symmetric
 * `jwk`, one whose `alg` or `use` contradicts the header, and one that is not a key), and its
 * RFC 7638 thumbprint.
 */
async function embeddedKey(header: JWTHeaderParameters, token: FlattenedJWSInput): Promise<{ readonly key: CryptoKey | Uint8Array; readonly jkt: string }> {
  const cacheKey = `${header.alg}.${JSON.stringify(header.jwk)}`;
  let entry = keyCache.get(cacheKey);
  if (entry) {
    keyCache.delete(cacheKey);
  } else {
    entry = (async () => ({ key: await EmbeddedJWK(header, token), jkt: await calculateJwkThumbprint(header.jwk as JWK, 'sha256') }))();
    entry.catch(() => keyCache.delete(cacheKey));
    if (keyCache.size >= KEY_CACHE_SIZE) keyCache.delete(keyCache.keys().next().value!);
  }
  keyCache.set(cacheKey, entry);
  return entry;
}

const invalid = (description: string, cause?: unknown) => new OAuthError('invalid_dpop_proof', description, cause === undefined ? {} : { cause });

/** §4.2 `htu`: "without query and fragment parts". */
function withoutQueryAndFragment(value: string): string | null {
  try {
    const url = new URL(value);
    url.search = '';
    url.hash = '';
    return url.href;
  } catch {
    return null;
  }
}

/** §4.2 `ath`: "the base64url-encoded SHA-256 hash of the ASCII encoding of the associated access token's value". */
export function accessTokenHash(accessToken: string): string {
  return createHash('sha256').update(accessToken, 'ascii').digest('base64url');
}

/**
 * The DPoP proof of a request, checked against `target`: null when the request carries no
 * `DPoP` header. A proof that fails any check is `invalid_dpop_proof` (§5: 400 at the token
 * endpoint; the caller gives another status at a resource, §7.1), and one without the
 * current nonce, when nonces are required, is `use_dpop_nonce` (§8).
 */
export async function checkDpopProof(deps: DpopDeps, header: string | readonly string[] | undefined, target: DpopTarget): Promise<DpopProof | null> {
  if (header === undefined) return null;
  // §4.3 point 1: "There is not more than one DPoP HTTP request header field." Node joins a
  // repeated header with ", ", which no JWT contains.
  if (typeof header !== 'string' || header.includes(',')) throw invalid('send one DPoP header');
  // Point 2: "The DPoP HTTP request header field value is a single and well-formed JWT."
  if (header.length > MAX_PROOF_LENGTH || !JWT.test(header)) throw invalid('the DPoP header is not a well-formed JWT');

  let jwk: unknown;
  try {
    jwk = decodeProtectedHeader(header).jwk;
  } catch (error) {
    throw invalid('the DPoP proof header cannot be decoded', error);
  }
  // Point 7: "The jwk JOSE Header Parameter does not contain a private key." Said before
  // verification, so that a client that sent its private key is told so.
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) throw invalid('the DPoP proof must carry its public key in the jwk header');
  if (PRIVATE_MEMBERS.some((member) => member in jwk)) throw invalid('the jwk header of the DPoP proof must be a public key, never a private or symmetric one');

  const now = deps.clock.now();
  let payload: Record<string, unknown>;
  let jkt = '';
  try {
    // Points 3-6: the JWT has the required claims, `typ` is dpop+jwt, `alg` is asymmetric
    // and supported, and the signature verifies with the public key in `jwk`.
    const proofKey = async (protectedHeader: JWTHeaderParameters, token: FlattenedJWSInput) => {
      const embedded = await embeddedKey(protectedHeader, token);
      jkt = embedded.jkt;
      return embedded.key;
    };
    ({ payload } = await jwtVerify(header, proofKey, {
      typ: 'dpop+jwt',
      algorithms: [...DPOP_SIGNING_ALGORITHMS],
      requiredClaims: ['jti', 'htm', 'htu', 'iat'],
      currentDate: new Date(now),
    }));
  } catch (error) {
    throw invalid(verificationFailure(error), error);
  }

  const { jti, htm, htu, iat, ath, nonce } = payload;
  if (typeof jti !== 'string' || jti.length === 0 || jti.length > 256) throw invalid('the DPoP proof jti must be a string of at most 256 characters');
  // Point 8: "The htm claim matches the HTTP method of the current request."
  if (htm !== target.method) throw invalid(`the DPoP proof htm must be ${target.method}`);
  // Point 9: "The htu claim matches the HTTP URI value for the HTTP request in which the JWT
  // was received, ignoring any query and fragment parts." Both sides are normalised as URLs
  // (a default port, the case of the scheme and host), as §4.3 allows.
  if (typeof htu !== 'string' || withoutQueryAndFragment(htu) !== withoutQueryAndFragment(target.url)) {
    throw invalid(`the DPoP proof htu must be ${target.url}`);
  }
  // Point 10: "If the server provided a nonce value to the client, the nonce claim matches
  // the server-provided nonce value." §8: a proof without the current one is answered
  // use_dpop_nonce, with the nonce in the DPoP-Nonce header.
  if (deps.settings.nonces && !(typeof nonce === 'string' && (await deps.nonces.accepts(nonce)))) {
    throw new OAuthError('use_dpop_nonce', nonce === undefined ? 'the DPoP proof must carry the server nonce' : 'the DPoP nonce is not the current one');
  }
  // Point 11: "The creation time of the JWT, as determined by either the iat claim or a
  // server managed timestamp via the nonce claim, is within an acceptable window."
  const window = deps.settings.proofWindow;
  if (typeof iat !== 'number' || Math.abs(now / 1000 - iat) > window) {
    throw invalid(`the DPoP proof iat must be within ${window} seconds of the server's time`);
  }
  // Point 12: "If presented to a protected resource in conjunction with an access token,
  // ensure that the value of the ath claim equals the hash of that access token".
  if (target.accessToken !== undefined && ath !== accessTokenHash(target.accessToken)) {
    throw invalid('the DPoP proof ath does not match the access token');
  }

  // §11.1: "the server MUST only accept DPoP proofs once ... within the time window". A jti
  // is unique for its key (§4.2), so the two together name the proof. Kept until no clock
  // would accept the proof any more.
  const fresh = await deps.store.dpopProofs.use(hashSecret(`${jkt}.${jti}`), (iat + window + 1) * 1000, now);
  if (!fresh) throw invalid('this DPoP proof has already been used (jti)');
  return { jkt };
}

/** A client-facing reason for a proof jose refused. */
function verificationFailure(error: unknown): string {
  if (error instanceof errors.JOSEAlgNotAllowed) return `the DPoP proof alg must be one of ${DPOP_SIGNING_ALGORITHMS.join(', ')}`;
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'the DPoP proof signature does not verify with its jwk';
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'typ') return 'the DPoP proof typ must be dpop+jwt';
    return `the DPoP proof ${error.claim} claim is missing or invalid`;
  }
  if (error instanceof errors.JWTExpired) return 'the DPoP proof has expired';
  if (error instanceof errors.JWSInvalid) return 'the DPoP proof jwk header must be a public signing key for its alg';
  return 'the DPoP proof is not a valid signed JWT';
}
