/**
 * Trusted issuers: the identity providers whose Identity Assertion JWT Authorization Grants
 * (ID-JAGs, draft-ietf-oauth-identity-assertion-authz-grant) this server redeems at its token
 * endpoint (flows/jwt-bearer/token.ts). The one implementation `tessera trust`, the admin API
 * and the console call. An issuer's keys are a JWK Set given once, or fetched from its
 * `jwks_uri`: the server's owner (the command) may name any host, loopback included (an
 * identity provider beside it); anyone it delegated to (an admin client, a console operator)
 * only the public network unless TESSERA_ALLOW_PRIVATE_NETWORK_URLS, as with webhooks.
 */
import { isLoopbackHost, isPrivateNetworkHost } from '../../core/networks.ts';
import { requestRefusal, type UrlRule } from '../../core/outbound.ts';
import { DuplicateError, type TrustedIssuerRecord } from '../../store/types.ts';
import { ClientKeysError, parseJwks } from '../../tokens/client-jwks.ts';
import { issuerProblem } from './clients.ts';
import { checkMayTrustProvider } from './authority.ts';
import { isoTime, type ManageDeps } from './deps.ts';
import { conflict, field, invalid, notFound } from './errors.ts';

/** A server trusts at most this many issuers: each is a key set to fetch and keep. */
export const MAX_TRUSTED_ISSUERS = 100;

/** The longest issuer identifier a server trusts: an ID-JAG's longer `iss` names none of them. */
export const MAX_ISSUER_LENGTH = 2048;

export interface TrustedIssuerInput {
  readonly issuer?: unknown;
  readonly jwks_uri?: unknown;
  readonly jwks?: unknown;
}

/**
 * The rule for an issuer's jwks_uri (core/outbound.ts): none for the server's owner (the
 * command), the public network for anyone it delegated to unless private networks are allowed.
 */
export function trustedIssuerUrlRule(config: { readonly allowPrivateNetworkUrls: boolean }, addedByOwner: boolean): UrlRule | null {
  return addedByOwner ? null : { selfRegistered: false, delegated: true, allowPrivateNetworks: config.allowPrivateNetworkUrls };
}

function checkIssuer(raw: unknown, ownIssuer: string): string {
  if (typeof raw !== 'string' || raw === '') throw invalid`${field('issuer')} is required: the iss of the identity provider's ID-JAGs`;
  const problem = issuerProblem(raw);
  if (problem !== null) throw invalid`${field('issuer')} ${raw.slice(0, 200)}: ${problem}`;
  if (raw.length > MAX_ISSUER_LENGTH) throw invalid`${field('issuer')}: at most ${MAX_ISSUER_LENGTH} characters`;
  if (raw === ownIssuer) throw invalid`${field('issuer')} ${raw}: this server's own issuer; a trusted issuer is another server`;
  return raw;
}

function checkJwksUri(deps: Pick<ManageDeps, 'config' | 'caller'>, raw: unknown): string {
  if (typeof raw !== 'string' || raw === '') throw invalid`${field('jwks_uri')}: an https URL`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid`${field('jwks_uri')} ${raw.slice(0, 200)}: not an absolute URL`;
  }
  if (raw.length > 2048) throw invalid`${field('jwks_uri')}: at most 2048 characters`;
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid`${field('jwks_uri')} ${raw.slice(0, 200)}: an https URL`;
  if (url.username !== '' || url.password !== '' || url.hash !== '')
    throw invalid`${field('jwks_uri')} ${raw.slice(0, 200)}: no user name, password or fragment`;
  const rule = trustedIssuerUrlRule(deps.config, deps.caller.owner === true);
  // http only where the server's owner points it at its own machine or network: a trusted
  // issuer's keys sign people in, and over http on the way there anyone could swap them.
  if (url.protocol === 'http:' && (rule !== null || !(isLoopbackHost(url.hostname) || isPrivateNetworkHost(url.hostname))))
    throw invalid`${field('jwks_uri')} ${raw.slice(0, 200)}: an https URL (http only on the server's own machine or network, named by the tessera command)`;
  const refusal = rule === null ? null : requestRefusal(url.hostname, rule);
  if (refusal !== null) throw invalid`${field('jwks_uri')} ${raw.slice(0, 200)}: the host ${refusal}`;
  return url.href;
}

function checkJwks(raw: unknown): Readonly<Record<string, unknown>> {
  try {
    parseJwks(raw);
  } catch (error) {
    if (error instanceof ClientKeysError) throw invalid`${field('jwks')}: ${error.message}`;
    throw error;
  }
  return raw as Readonly<Record<string, unknown>>;
}

/** Trusts an issuer's ID-JAGs, signed by the keys at its jwks_uri or given as jwks (one of the two). */
export async function addTrustedIssuer(deps: ManageDeps, input: TrustedIssuerInput): Promise<TrustedIssuerRecord> {
  // Its ID-JAGs find people by a verified e-mail address: as a provider that links accounts.
  checkMayTrustProvider(deps.caller, 'issuer');
  const issuer = checkIssuer(input.issuer, deps.config.issuer);
  const hasUri = input.jwks_uri !== undefined && input.jwks_uri !== null;
  const hasJwks = input.jwks !== undefined && input.jwks !== null;
  if (hasUri === hasJwks) throw invalid`give ${field('jwks_uri')} or ${field('jwks')} (one of the two): where the issuer's signing keys are`;
  const record: TrustedIssuerRecord = {
    issuer,
    jwksUri: hasUri ? checkJwksUri(deps, input.jwks_uri) : null,
    jwks: hasJwks ? checkJwks(input.jwks) : null,
    addedByOwner: deps.caller.owner === true,
    createdAt: deps.clock.now(),
  };
  if ((await deps.store.trustedIssuers.list()).length >= MAX_TRUSTED_ISSUERS)
    throw conflict`a server trusts at most ${MAX_TRUSTED_ISSUERS} issuers: remove one first`;
  try {
    await deps.store.trustedIssuers.create(record);
  } catch (error) {
    if (error instanceof DuplicateError) throw conflict`${issuer} is trusted already: remove it first to change its keys`;
    throw error;
  }
  await deps.events.emit({ type: 'trusted_issuer.added', detail: { issuer, jwks_uri: record.jwksUri, by: 'operator' } });
  return record;
}

export async function listTrustedIssuers(deps: Pick<ManageDeps, 'store'>): Promise<TrustedIssuerRecord[]> {
  return deps.store.trustedIssuers.list();
}

export async function getTrustedIssuer(deps: Pick<ManageDeps, 'store'>, issuer: string): Promise<TrustedIssuerRecord> {
  const record = await deps.store.trustedIssuers.get(issuer);
  if (record === null) throw notFound`no trusted issuer ${issuer}`;
  return record;
}

/** Stops trusting an issuer: its ID-JAGs are refused at once, and the tokens issued from them end (flows/lifecycle/access-token.ts). */
export async function removeTrustedIssuer(deps: ManageDeps, issuer: string): Promise<void> {
  if (!(await deps.store.trustedIssuers.remove(issuer))) throw notFound`no trusted issuer ${issuer}`;
  await deps.events.emit({ type: 'trusted_issuer.removed', detail: { issuer, by: 'operator' } });
}

/** A trusted issuer as `trust list --json` and the admin API give it. */
export function trustedIssuerJson(record: TrustedIssuerRecord): Record<string, unknown> {
  return {
    issuer: record.issuer,
    jwks_uri: record.jwksUri,
    ...(record.jwks === null ? {} : { jwks: record.jwks }),
    created_at: isoTime(record.createdAt),
  };
}
