/**
 * Client ID Metadata Documents (draft-ietf-oauth-client-id-metadata-document): a client_id
 * that is an https URL is the address of the app's metadata. Tessera fetches it (within a
 * timeout and a size limit, without following redirects, never from a private or loopback
 * address unless TESSERA_CLIENT_ID_METADATA_DEVELOPMENT is on), checks it, keeps it as long as
 * its caching headers allow (at least a second; a refusal a minute), fetches one URL once at a
 * time, and registers the app as a public client whose id is the URL, through the same
 * createClient / updateClient as every other client.
 */
import type { IncomingMessage } from 'node:http';
import { http, https } from '../../core/node-http.ts';
import { isIP } from 'node:net';
import { OAuthError } from '../../core/errors.ts';
import { countedAddress, isInternalAddress } from '../../core/networks.ts';
import { guardedLookup } from '../../core/outbound.ts';
import { GRANT_AUTHORIZATION_CODE, GRANT_REFRESH_TOKEN } from '../../core/protocol.ts';
import { type ClientRecord, DuplicateError } from '../../store/types.ts';
import { Attempt, isRefusal } from '../attempts.ts';
import { NO_ADMIN } from '../manage/authority.ts';
import { createClient, updateClient, type ClientMetadata } from '../manage/clients.ts';
import { ManageError } from '../manage/errors.ts';
import type { FlowDeps } from '../types.ts';

/** How long a refused document is remembered: it is not fetched again before. */
const REFUSAL_SECONDS = 60;

/**
 * Whether `clientId` is a metadata document's URL (draft §3): https, with a path, without a
 * fragment, credentials or dot segments. With the development setting, http too.
 */
export function isClientIdUrl(clientId: string, development: boolean): boolean {
  if (!clientId.startsWith('https://') && !(development && clientId.startsWith('http://'))) return false;
  let url: URL;
  try {
    url = new URL(clientId);
  } catch {
    return false;
  }
  return (
    url.href === clientId && url.pathname !== '/' && !url.hash && !url.username && !url.password && !/\/\.\.?(\/|$)/.test(clientId.slice(url.origin.length))
  );
}

/** Why a document cannot be used: said to the person's browser as `invalid_request`, and cached. */
class Refusal extends Error {}

/** A DNS lookup that refuses internal addresses (loopback too): checked on the address actually connected to. */
const internalRefused = guardedLookup(isInternalAddress, (hostname) =>
  Object.assign(new Error(`${hostname} resolves to a private or loopback address`), { code: 'EINTERNAL' }),
);

interface Fetched {
  readonly document: Record<string, unknown>;
  /** Seconds it may be kept (Cache-Control max-age), or null when it says nothing. */
  readonly maxAge: number | null;
  readonly noStore: boolean;
}

/** GETs the document: no redirects, bounded in time and size, JSON only. */
function fetchDocument(url: URL, settings: FlowDeps['config']['registration']['metadataDocuments']): Promise<Fetched> {
  if (!settings.development && isIP(url.hostname.replace(/^\[|\]$/g, '')) && isInternalAddress(url.hostname)) {
    return Promise.reject(new Refusal(`${url.host} is a private or loopback address`));
  }
  return new Promise((resolve, reject) => {
    const send = url.protocol === 'https:' ? https.request : http.request;
    const request = send(
      url,
      { method: 'GET', headers: { accept: 'application/json' }, ...(settings.development ? {} : { lookup: internalRefused }), timeout: settings.timeoutMs },
      (response: IncomingMessage) => {
        const status = response.statusCode ?? 0;
        // Draft §4: the document is served at the URL itself; a redirect is refused.
        if (status >= 300 && status < 400) return fail(new Refusal(`the metadata document redirects (HTTP ${status}); it must be served at its client_id URL`));
        if (status !== 200) return fail(new Refusal(`the metadata document answered HTTP ${status}`));
        if (!/^application\/([\w.+-]*\+)?json\b/i.test(response.headers['content-type'] ?? ''))
          return fail(new Refusal('the metadata document is not JSON (Content-Type)'));
        const declared = Number(response.headers['content-length'] ?? NaN);
        if (declared > settings.maxBytes) return fail(new Refusal(`the metadata document is larger than ${settings.maxBytes} bytes`));
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > settings.maxBytes) return fail(new Refusal(`the metadata document is larger than ${settings.maxBytes} bytes`));
          chunks.push(chunk);
        });
        response.on('end', () => {
          let document: unknown;
          try {
            document = JSON.parse(Buffer.concat(chunks).toString('utf8'));
          } catch {
            return fail(new Refusal('the metadata document is not valid JSON'));
          }
          if (document === null || typeof document !== 'object' || Array.isArray(document))
            return fail(new Refusal('the metadata document is not a JSON object'));
          const cacheControl = String(response.headers['cache-control'] ?? '');
          const maxAge = /(?:^|,)\s*max-age=(\d{1,9})/i.exec(cacheControl);
          resolve({
            document: document as Record<string, unknown>,
            maxAge: maxAge ? Number(maxAge[1]) : null,
            noStore: /(?:^|,)\s*(no-store|no-cache)\b/i.test(cacheControl),
          });
        });
        response.on('error', fail);
      },
    );
    // The whole exchange, body included: a server that trickles its answer is cut off.
    const timer = setTimeout(() => fail(new Refusal(`the metadata document did not arrive within ${settings.timeoutMs} ms`)), settings.timeoutMs);
    function fail(error: Error) {
      clearTimeout(timer);
      request.destroy();
      reject(
        error instanceof Refusal
          ? error
          : new Refusal(
              (error as { code?: string }).code === 'EINTERNAL'
                ? `${url.hostname} resolves to a private or loopback address`
                : 'the metadata document could not be fetched',
            ),
      );
    }
    request.on('timeout', () => fail(new Refusal(`the metadata document did not arrive within ${settings.timeoutMs} ms`)));
    request.on('error', fail);
    request.on('close', () => clearTimeout(timer));
    request.end();
  });
}

/** The document checked (draft §4.1) and read as the registration of a public client. */
function documentMetadata(url: string, document: Readonly<Record<string, unknown>>): ClientMetadata {
  if (document['client_id'] !== url) throw new Refusal("the metadata document's client_id is not its URL");
  const redirectUris = document['redirect_uris'];
  if (!Array.isArray(redirectUris) || redirectUris.length === 0 || !redirectUris.every((uri) => typeof uri === 'string'))
    throw new Refusal('the metadata document has no redirect_uris');
  // Draft §4.1: a document cannot hold a shared secret; Tessera takes public clients only.
  if (document['client_secret'] !== undefined || document['client_secret_expires_at'] !== undefined)
    throw new Refusal('a metadata document must not contain a client_secret');
  const method = document['token_endpoint_auth_method'];
  if (method !== undefined && method !== 'none')
    throw new Refusal(`token_endpoint_auth_method ${String(method)}: only public clients (none) are taken from metadata documents`);
  const grants = document['grant_types'] ?? [GRANT_AUTHORIZATION_CODE];
  if (!Array.isArray(grants) || !grants.every((grant) => grant === GRANT_AUTHORIZATION_CODE || grant === GRANT_REFRESH_TOKEN)) {
    throw new Refusal('grant_types: a metadata document client may use authorization_code and refresh_token only');
  }
  const name = typeof document['client_name'] === 'string' ? document['client_name'] : new URL(url).host;
  const scope =
    typeof document['scope'] === 'string' ? document['scope'] : `openid profile email${grants.includes(GRANT_REFRESH_TOKEN) ? ' offline_access' : ''}`;
  return { client_name: name, redirect_uris: redirectUris as string[], grant_types: grants as string[], token_endpoint_auth_method: 'none', scope };
}

/**
 * The rate-limit keys of new metadata-document apps (one browser brought 40 URLs,
 * and with them 40 clients): per address, and the whole server's count.
 */
export const METADATA_CLIENT_KEYS = {
  address: 'metadata-client:ip:',
  all: 'metadata-client:all',
} as const;

const HOUR_MS = 3_600_000;

/**
 * Counts a new app (a URL with no client yet, whose document is about to be fetched or
 * registered) against the address and the server, or refuses it with 429 by reading alone.
 * It stays counted whether its document is then taken or refused: each one was a fetch, and a
 * row. Apps already registered are never counted, so a flood of new URLs keeps no known app out.
 */
async function admitNewApp(deps: FlowDeps, ip: string, now: number): Promise<void> {
  const settings = deps.config.registration.metadataDocuments;
  const limits = [
    { key: `${METADATA_CLIENT_KEYS.address}${countedAddress(ip)}`, limit: settings.newPerAddressPerHour, scope: 'address' as const },
    { key: METADATA_CLIENT_KEYS.all, limit: settings.newPerHour, scope: 'server' as const },
  ];
  const reserved = await Attempt.reserve(deps.store.rateLimits, limits, HOUR_MS, now);
  if (!isRefusal(reserved)) return;
  const scope = limits.find((limit) => limit.key === reserved.limit.key)!.scope;
  await deps.events.refused(
    { type: 'client.registration_limited', ip, detail: { limit: scope, kind: 'metadata_document' } },
    reserved.limit.key,
    reserved.endsAt,
  );
  const minutes = Math.max(1, Math.ceil(reserved.retryAfterSeconds / 60));
  const which = scope === 'address' ? 'from this address' : 'on this server';
  throw new OAuthError(
    'temporarily_unavailable',
    `too many new apps known by a metadata document URL ${which} this hour; try again in ${minutes} minute${minutes === 1 ? '' : 's'}`,
    { status: 429, retryAfterSeconds: reserved.retryAfterSeconds },
  );
}

/**
 * The client of a metadata document URL, registered or brought up to date from the document,
 * or an `invalid_request` error saying why it cannot be used (`temporarily_unavailable`, 429,
 * when `ip` has brought too many new apps this hour, or the server has). Null: `clientId` is
 * not a metadata document URL, or they are off.
 *
 * One a process (app.ts): a URL is fetched once at a time, and the requests that come while it
 * is fetched take that fetch's answer, so that an app's first requests, made at once, are not
 * each a fetch of the document.
 */
export function metadataDocumentClients(deps: FlowDeps): (clientId: string, ip: string) => Promise<ClientRecord | null> {
  /** The fetches under way, by URL, each until its answer (the document or the refusal) is kept in the store. */
  const fetching = new Map<string, Promise<Readonly<Record<string, unknown>>>>();
  const fetchOnce = (clientId: string, now: number) => {
    let fetched = fetching.get(clientId);
    if (fetched === undefined) {
      fetched = fetchAndKeep(deps, clientId, now).finally(() => fetching.delete(clientId));
      fetching.set(clientId, fetched);
    }
    return fetched;
  };
  return async (clientId, ip) => {
    const settings = deps.config.registration.metadataDocuments;
    if (!settings.enabled || !isClientIdUrl(clientId, settings.development)) return null;
    const now = deps.clock.now();
    const [existing, cached] = await Promise.all([deps.store.clients.get(clientId), deps.store.metadataDocuments.get(clientId, now)]);
    if (cached !== null && cached.document === null)
      throw new OAuthError('invalid_request', `client_id ${clientId}: ${cached.problem ?? 'the metadata document was refused'}`);
    if (existing === null) await admitNewApp(deps, ip, now);
    const document = cached?.document ?? (await fetchOnce(clientId, now));
    return clientFromDocument(deps, clientId, existing, documentMetadata(clientId, document), now);
  };
}

/** Fetches the document and keeps it as its Cache-Control says; a refusal is kept a minute. */
async function fetchAndKeep(deps: FlowDeps, clientId: string, now: number): Promise<Readonly<Record<string, unknown>>> {
  const settings = deps.config.registration.metadataDocuments;
  try {
    const fetched = await fetchDocument(new URL(clientId), settings);
    documentMetadata(clientId, fetched.document);
    // Kept as its Cache-Control says, at most the setting, and at least a second.
    const seconds = fetched.noStore ? 1 : Math.max(1, Math.min(settings.cacheSeconds, fetched.maxAge ?? settings.cacheSeconds));
    await deps.store.metadataDocuments.put({ url: clientId, document: fetched.document, problem: null, fetchedAt: now, expiresAt: now + seconds * 1000 });
    return fetched.document;
  } catch (error) {
    if (!(error instanceof Refusal)) throw error;
    return refuse(deps, clientId, error.message, now);
  }
}

/** Registers the app, or brings its client up to date with its document. */
async function clientFromDocument(
  deps: FlowDeps,
  clientId: string,
  existing: ClientRecord | null,
  metadata: ClientMetadata,
  now: number,
): Promise<ClientRecord> {
  const manage = { ...deps, caller: NO_ADMIN, tellApps: async () => 0 };
  try {
    if (existing === null) {
      try {
        return (await createClient(manage, metadata, { registeredBy: 'metadata_document', id: clientId })).client;
      } catch (error) {
        // The app's first requests came at once, and each found no client: one of them made it,
        // and the others take that one (a document changed meanwhile is compared at the next).
        const made = error instanceof DuplicateError ? await deps.store.clients.get(clientId) : null;
        if (made === null) throw error;
        return made;
      }
    }
    if (existing.registeredBy !== 'metadata_document' || sameRegistration(existing, metadata)) return existing;
    // The app changed its document: an update by the app itself, which takes away the
    // operator's verified mark when it changes what people see (flows/manage/clients.ts). At
    // the version read, so that an operator's change made meanwhile (verifying the app, or
    // taking the mark back) is not overwritten by this older read: that change wins, and the
    // next request compares the document again.
    try {
      return (await updateClient(manage, clientId, metadata, existing.version ?? 1, 'client')).client;
    } catch (error) {
      if (error instanceof ManageError && error.kind === 'stale') return (await deps.store.clients.get(clientId)) ?? existing;
      throw error;
    }
  } catch (error) {
    // The same checks as client add: a document that breaks one is refused, and remembered.
    if (!(error instanceof ManageError)) throw error;
    return refuse(deps, clientId, error.message, now);
  }
}

/** Remembers why the document cannot be used, for a minute, and says so. */
async function refuse(deps: FlowDeps, clientId: string, problem: string, now: number): Promise<never> {
  await deps.store.metadataDocuments.put({ url: clientId, document: null, problem, fetchedAt: now, expiresAt: now + REFUSAL_SECONDS * 1000 });
  throw new OAuthError('invalid_request', `client_id ${clientId}: ${problem}`);
}

function sameRegistration(client: ClientRecord, metadata: ClientMetadata): boolean {
  const same = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((item, index) => item === b[index]);
  return (
    client.name === metadata.client_name &&
    same(client.redirectUris, metadata.redirect_uris ?? []) &&
    same(client.grantTypes, metadata.grant_types ?? []) &&
    same(client.scopes, (metadata.scope ?? '').split(' ').filter(Boolean))
  );
}
