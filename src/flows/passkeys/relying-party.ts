/**
 * The WebAuthn relying party Tessera is (WebAuthn Level 3 §5.1.3 rp, §13.4.3 challenges).
 * The RP ID is the issuer's host, so passkeys made here work on no other site: a phishing
 * page on another origin cannot ask the browser for them (§13.4.9 origin validation).
 */
import { isIP } from 'node:net';
import type { Config } from '../../config/index.ts';
import { hashSecret } from '../../core/crypto.ts';
import type { WebauthnChallengeRecord } from '../../store/types.ts';
import type { FlowDeps } from '../types.ts';

/** What a ceremony's challenge needs. */
export type CeremonyDeps = Pick<FlowDeps, 'store' | 'clock' | 'config'>;

export interface RelyingParty {
  /** §5.1.3 rp.id: a registrable domain, the issuer's host. */
  readonly id: string;
  /** The origin responses must come from (§7.1 step 9, §7.2 step 13). */
  readonly origin: string;
  readonly name: string;
}

/** Named as the site is (TESSERA_SITE_NAME): the name authenticators show beside the passkey. */
export function relyingParty(config: Pick<Config, 'issuer' | 'site'>): RelyingParty {
  const url = new URL(config.issuer);
  return { id: url.hostname, origin: url.origin, name: config.site.name };
}

/**
 * Passkeys need a domain name: an RP ID cannot be an IP address (§5.1.3, "a valid domain
 * string"), so an issuer such as http://127.0.0.1:8080 offers none.
 */
export function passkeysAvailable(issuer: string): boolean {
  const host = new URL(issuer).hostname;
  return isIP(host.replace(/^\[|\]$/g, '')) === 0;
}

/** Remembers a challenge the browser was given, for the one response that may answer it. */
/**
 * A challenge is stored by the hash of itself with the browser that asked for it (a hash of
 * its CSRF cookie): answered from any other browser it is unknown, so a challenge
 * obtained in one browser cannot be completed in another (a relayed or phished ceremony).
 */
const challengeKey = (challenge: string, browser: string) => hashSecret(`${challenge} ${browser}`);

export async function storeChallenge(
  deps: CeremonyDeps,
  challenge: string,
  purpose: WebauthnChallengeRecord['purpose'],
  userId: string | null,
  browser: string,
): Promise<void> {
  const now = deps.clock.now();
  await deps.store.webauthnChallenges.create({
    challengeHash: challengeKey(challenge, browser),
    purpose,
    userId,
    createdAt: now,
    expiresAt: now + deps.config.secondFactor.ceremonyTimeout * 1000,
  });
}

/**
 * The challenge a response answers, read from its clientDataJSON (§5.8.1), and consumed:
 * whatever the verification then decides, it cannot be answered twice. Null when the
 * response carries none, or it is unknown, spent or expired.
 */
export async function consumeChallenge(
  deps: CeremonyDeps,
  clientDataJSON: string,
  purpose: WebauthnChallengeRecord['purpose'],
  browser: string,
): Promise<{ readonly challenge: string; readonly record: WebauthnChallengeRecord } | null> {
  let challenge: unknown;
  try {
    challenge = (JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8')) as { challenge?: unknown }).challenge;
  } catch {
    return null;
  }
  if (typeof challenge !== 'string' || challenge.length === 0 || challenge.length > 512) return null;
  const record = await deps.store.webauthnChallenges.consume(challengeKey(challenge, browser), purpose, deps.clock.now());
  return record ? { challenge, record } : null;
}

/** A response as the browser script posts it: JSON, checked for the shape the library reads. */
export function parseResponse(raw: string): { readonly id: string; readonly clientDataJSON: string; readonly value: Record<string, unknown> } | null {
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    return null;
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  const response = record['response'];
  if (typeof record['id'] !== 'string' || !/^[A-Za-z0-9_-]{1,1366}$/.test(record['id'])) return null;
  if (typeof response !== 'object' || response === null) return null;
  const clientDataJSON = (response as Record<string, unknown>)['clientDataJSON'];
  if (typeof clientDataJSON !== 'string') return null;
  return { id: record['id'], clientDataJSON, value: record };
}
