import { randomUUID } from 'node:crypto';
import pg from 'pg';
import type { ClientRecord } from '../types.ts';

/**
 * The channel on which a trigger on `clients` announces every update and delete, with the
 * payload `<schema> <client id>` (migration `client_change_notices`). One channel for every
 * schema: a channel name is an identifier of at most 63 bytes, which a long schema name
 * would overflow, and a notice for another schema only costs a comparison.
 */
export const CLIENT_CHANGES_CHANNEL = 'tessera_clients';

/** Enough for every client of a large deployment; past it the oldest entry makes room. */
const MAX_ENTRIES = 10_000;

/** How often the listener proves that it hears notices, and how long it waits for one. */
const PROBE_INTERVAL_MS = 5_000;
const PROBE_TIMEOUT_MS = 5_000;
/** Marks a probe's payload; a client id is never compared with it. */
const PROBE_PREFIX = 'probe:';

/** How long the listener waits before reconnecting, doubling up to the maximum. */
const RECONNECT_FIRST_MS = 100;
const RECONNECT_MAX_MS = 5_000;

/**
 * Client records kept in this process, so that the hottest requests (a device poll, a
 * device authorization) make one round trip to PostgreSQL instead of two: the client's
 * record comes from here, only the device statement goes to the database.
 *
 * Correct across instances: a record is cached only while this process listens for the
 * change notices PostgreSQL sends when a client row is updated or deleted, which arrive
 * when the change commits. A notice drops the record; losing the listening connection
 * drops every record and stops caching until it is back, since notices sent meanwhile are
 * lost. A load that was in flight when any notice arrived is not cached (its row may be
 * the one just changed). Misses are not cached, so unknown ids cannot fill memory and a new
 * client needs no notice.
 */
export class ClientCache {
  readonly #records = new Map<string, ClientRecord>();
  /** Grows with every notice: a load started before it must not be cached. */
  #generation = 0;
  #listening = false;

  /** The record of `id`, from memory or from `load`. */
  async get(id: string, load: () => Promise<ClientRecord | null>): Promise<ClientRecord | null> {
    const cached = this.#records.get(id);
    if (cached !== undefined) return cached;
    const generation = this.#generation;
    const record = await load();
    if (record !== null && this.#listening && generation === this.#generation) {
      if (this.#records.size >= MAX_ENTRIES) this.#records.delete(this.#records.keys().next().value!);
      this.#records.set(id, record);
    }
    return record;
  }

  /** The client `id` changed or went away. */
  invalidate(id: string): void {
    this.#generation++;
    this.#records.delete(id);
  }

  /** Notices can be trusted (true) or may have been missed (false: nothing is cached). */
  setListening(listening: boolean): void {
    this.#generation++;
    this.#records.clear();
    this.#listening = listening;
  }

  get size(): number {
    return this.#records.size;
  }
}

export interface ClientChangeListener {
  /** Resolves once the first LISTEN is in place (or failed: caching then waits for a reconnect). */
  readonly ready: Promise<void>;
  close(): Promise<void>;
}

/**
 * Listens for client change notices on a connection of its own (a pooled one cannot hold a
 * LISTEN) and applies them to `cache`. The cache is trusted only while the listener is
 * shown to hear: every `PROBE_INTERVAL_MS` a notice sent through `probe` (another
 * connection, as a change would be) must come back within `PROBE_TIMEOUT_MS`. That also
 * catches what no error reports, such as a pooler in transaction mode that accepts the
 * LISTEN on a server connection it then hands to others. Deaf or disconnected, the cache
 * is emptied and off, and the listener reconnects.
 */
export function listenForClientChanges(
  config: pg.ClientConfig,
  schema: string | null,
  cache: ClientCache,
  probe: (payload: string) => Promise<unknown>,
  warn: (message: string) => void,
  // How often it proves it hears, and how long a notice may take (tests shorten them).
  timing: { readonly probeIntervalMs: number; readonly probeTimeoutMs: number } = { probeIntervalMs: PROBE_INTERVAL_MS, probeTimeoutMs: PROBE_TIMEOUT_MS },
): ClientChangeListener {
  let connection: pg.Client | null = null;
  let closed = false;
  let retryIn = RECONNECT_FIRST_MS;
  let timer: NodeJS.Timeout | null = null;
  let awaited: string | null = null;
  let heard = false;
  let warnedDeaf = false;

  const schedule = (work: () => void, ms: number): void => {
    if (timer !== null) clearTimeout(timer);
    timer = setTimeout(work, ms);
    timer.unref();
  };

  const lost = (client: pg.Client, why: string): void => {
    if (connection !== client) return;
    connection = null;
    awaited = null;
    cache.setListening(false);
    client.removeAllListeners('notification');
    // Ending a broken client reports its own errors here; they are already handled.
    client.on('error', () => {});
    client.end().catch(() => {});
    if (closed) return;
    // Once when it stops hearing, and once if it never does (a pooler in transaction mode).
    if (heard || !warnedDeaf)
      warn(`the PostgreSQL connection that listens for client changes ${why}; client records are read from the database until it hears again`);
    warnedDeaf ||= !heard;
    heard = false;
    schedule(connect, retryIn);
    retryIn = Math.min(retryIn * 2, RECONNECT_MAX_MS);
  };

  const sendProbe = (client: pg.Client, own: string): void => {
    if (connection !== client) return;
    const token = randomUUID();
    const payload = `${own} ${PROBE_PREFIX}${token}`;
    awaited = payload;
    let sent = false;
    let failed = false;
    probe(payload).then(
      () => {
        sent = true;
      },
      () => {
        failed = true;
      },
    );
    const check = (): void => {
      if (connection !== client) return;
      // Sent and not heard: this connection is deaf, and another takes its place.
      if (sent) {
        lost(client, `heard no notice for ${timing.probeTimeoutMs} ms`);
        return;
      }
      // Not even sent (every pooled connection busy, or the pool cannot reach the database):
      // nothing says the listener is deaf, and nothing proves it hears. Records are read from
      // the database until this probe is sent and heard; the listening connection stays,
      // rather than a new one joining a busy pool's connections on a database at its limit.
      cache.setListening(false);
      heard = false;
      // A probe the pool gave up on is sent again; one still waiting for a connection is waited for.
      if (failed) sendProbe(client, own);
      else schedule(check, timing.probeTimeoutMs);
    };
    schedule(check, timing.probeTimeoutMs);
  };

  const connect = async (): Promise<void> => {
    timer = null;
    const client = new pg.Client(config);
    connection = client;
    client.on('error', (error) => lost(client, `failed: ${error.message}`));
    client.on('end', () => lost(client, 'was closed'));
    try {
      await client.connect();
      // The schema the tables live in, as the trigger names it.
      const found = await client.query<{ schema: string }>('SELECT current_schema() AS schema');
      const own = schema ?? found.rows[0]?.schema ?? 'public';
      client.on('notification', (notice) => {
        if (notice.channel !== CLIENT_CHANGES_CHANNEL || notice.payload === undefined) return;
        if (notice.payload === awaited) {
          awaited = null;
          if (!heard) cache.setListening(true);
          heard = true;
          retryIn = RECONNECT_FIRST_MS;
          schedule(() => sendProbe(client, own), timing.probeIntervalMs);
          return;
        }
        const space = notice.payload.indexOf(' ');
        if (notice.payload.slice(0, space) === own) cache.invalidate(notice.payload.slice(space + 1));
      });
      await client.query(`LISTEN ${client.escapeIdentifier(CLIENT_CHANGES_CHANNEL)}`);
      sendProbe(client, own);
    } catch (error) {
      lost(client, `could not listen: ${(error as Error).message}`);
    }
  };

  const ready = connect();
  return {
    ready,
    async close() {
      closed = true;
      if (timer !== null) clearTimeout(timer);
      const client = connection;
      connection = null;
      cache.setListening(false);
      if (client !== null) await client.end().catch(() => {});
    },
  };
}
