/**
 * The writer's ceiling: how much of the one writer thread a code redemption takes when
 * several worker threads send theirs (`TESSERA_WORKERS` on SQLite, src/store/sqlite/store.ts).
 * From 4 workers on every write of every thread runs on that thread, so its time per
 * redemption bounds what the workers answer together however many cores they have: at 43 µs a
 * redemption, about 23,000 a second. This measures that bound on any machine, the 2-core one
 * too, without a 16-core machine to load it: `--threads` threads send redemptions as fast as
 * the writer answers them, `--in-flight` each, and the writer thread's own CPU
 * (`process.threadCpuUsage`) over the redemptions is printed.
 *
 *   node bench/writer-ceiling.ts [--threads 4] [--in-flight 50] [--codes 60000] [--runs 3]
 *     [--keys random|sequential] [--mint-batch 0 --mint-every 500]
 *
 * `--mint-batch N` has another thread write N more codes on a connection of its own every
 * `--mint-every` ms, as `npm run bench` mints its batches: SQLite drops a connection's page
 * cache when another has committed, so the writer then reads pages back.
 *
 * Each redemption is what the token endpoint sends for a code of a sign-in session: the code's
 * consumption, the grant's use, the session's client and the audit event, in one savepoint of
 * the writer's group commit. Codes, each with its own grant, are written straight into a fresh
 * file first, as bench/targets.ts mints them.
 */
import { createHash, randomUUIDv7 } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from 'node:util';
import { isMainThread, MessageChannel, type MessagePort, parentPort, Worker, workerData } from 'node:worker_threads';
import type { RedemptionWrites } from '../src/store/codes.ts';
import { openSqliteWriter } from '../src/store/sqlite/store.ts';
import { WriterLink } from '../src/store/sqlite/link.ts';

const REDIRECT_URI = 'https://app.example/callback';
const CHALLENGE = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';

/**
 * The keys of code `index` and its grant. Random, by default, as a server's are (a code is
 * stored under the SHA-256 of a random token, a grant under a random UUID), so that each
 * redemption finds its rows on pages of the b-trees as scattered as a server's; with
 * `--keys sequential` (`code-1`, `code-2`, …), as this tool first wrote them, a run's rows sit
 * side by side and stay in the page cache.
 */
function keysOf(index: number, sequential: boolean): { code: string; grant: string } {
  if (sequential) return { code: `code-${index}`, grant: `grant-${index}` };
  const digest = createHash('sha256').update(`${index}`).digest();
  const hex = digest.toString('hex');
  return {
    code: digest.toString('base64url'),
    grant: `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20, 32)}`,
  };
}

interface Task {
  readonly port: MessagePort;
  readonly from: number;
  readonly to: number;
  readonly inFlight: number;
  readonly sequential: boolean;
}

/** A thread writing `batch` more codes on a connection of its own every `everyMs`, as bench/run.ts mints its batches, until told to stop. */
interface Minting {
  readonly mint: { readonly path: string; readonly from: number; readonly batch: number; readonly everyMs: number; readonly sequential: boolean };
}

if (isMainThread) await main();
else if ('mint' in (workerData as object)) await mintWhileRunning((workerData as Minting).mint);
else await sendRedemptions(workerData as Task);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      threads: { type: 'string', default: '4' },
      'in-flight': { type: 'string', default: '50' },
      codes: { type: 'string', default: '60000' },
      runs: { type: 'string', default: '3' },
      keys: { type: 'string', default: 'random' },
      'mint-batch': { type: 'string', default: '0' },
      'mint-every': { type: 'string', default: '500' },
    },
  });
  const threads = Number(values.threads);
  if (values.keys !== 'random' && values.keys !== 'sequential') throw new Error('--keys is random or sequential');
  const sequential = values.keys === 'sequential';
  const codes = Number(values.codes);
  const perThread = Math.floor(codes / threads);
  const results: number[] = [];
  for (let run = 1; run <= Number(values.runs); run += 1) {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-writer-ceiling-'));
    try {
      const path = join(dir, 'tessera.db');
      const writer = openSqliteWriter(path);
      seed(path, perThread * threads, sequential);
      const mintBatch = Number(values['mint-batch']);
      const minter =
        mintBatch > 0
          ? new Worker(new URL(import.meta.url), {
              workerData: { mint: { path, from: perThread * threads, batch: mintBatch, everyMs: Number(values['mint-every']), sequential } } satisfies Minting,
            })
          : null;
      let minted = 0;
      minter?.on('message', (count: number) => (minted = count));
      // A minting thread that failed fails the run: its codes' absence would go unseen.
      const minterFailed = new Promise<never>((_, reject) => minter?.once('error', reject));
      const started = performance.now();
      const cpu = process.threadCpuUsage();
      const sent = Promise.all(
        Array.from({ length: threads }, (_, index) => {
          const { port1, port2 } = new MessageChannel();
          writer.accept(port1);
          const task: Task = { port: port2, from: index * perThread, to: (index + 1) * perThread, inFlight: Number(values['in-flight']), sequential };
          const worker = new Worker(new URL(import.meta.url), { workerData: task, transferList: [port2] });
          return new Promise<void>((resolve, reject) => {
            worker.once('error', reject);
            worker.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`a sending thread exited with ${code}`))));
          });
        }),
      );
      await Promise.race([sent, minterFailed]);
      const used = process.threadCpuUsage(cpu);
      const seconds = (performance.now() - started) / 1000;
      await minter?.terminate();
      const redemptions = perThread * threads;
      const perRedemption = (used.user + used.system) / redemptions;
      results.push(perRedemption);
      console.log(
        `run ${run}: ${redemptions} redemptions from ${threads} threads in ${seconds.toFixed(2)} s (${Math.round(redemptions / seconds)}/s); ` +
          `writer thread ${perRedemption.toFixed(1)} µs of CPU a redemption` +
          (minter === null ? '' : `; another connection minted ${minted} codes meanwhile`),
      );
      await writer.store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const median = [...results].sort((a, b) => a - b)[Math.floor(results.length / 2)]!;
  console.log(`median: ${median.toFixed(1)} µs a redemption on the writer thread, a ceiling of ${Math.round(1_000_000 / median)} redemptions a second`);
}

async function mintWhileRunning({ path, from, batch, everyMs, sequential }: Minting['mint']): Promise<void> {
  const db = new DatabaseSync(path);
  db.exec('PRAGMA busy_timeout = 5000');
  const insert = codeInserter(db, sequential, Date.now());
  for (let next = from; ; next += batch) {
    await new Promise((resolve) => setTimeout(resolve, everyMs));
    db.exec('BEGIN IMMEDIATE');
    for (let i = next; i < next + batch; i += 1) insert(i);
    db.exec('COMMIT');
    parentPort?.postMessage(next + batch - from);
  }
}

/** Writes code `index` of the session `sid` and its grant, as a server's authorization leaves them. */
function codeInserter(db: DatabaseSync, sequential: boolean, now: number): (index: number) => void {
  const grant = db.prepare(`INSERT INTO grants (id, user_id, client_id, scope, kind, auth_time, created_at)
    VALUES (?, 'user', 'app', '["openid","profile"]', 'authorization_code', ?, ?)`);
  const code =
    db.prepare(`INSERT INTO authorization_codes (hash, client_id, user_id, grant_id, redirect_uri, scope, code_challenge, auth_time, sid, created_at, expires_at, id_token_claims)
    VALUES (?, 'app', 'user', ?, ?, '["openid","profile"]', ?, ?, 'sid', ?, ?, '[]')`);
  return (index) => {
    const keys = keysOf(index, sequential);
    grant.run(keys.grant, now, now);
    code.run(keys.code, keys.grant, REDIRECT_URI, CHALLENGE, now, now, now + 3_600_000);
  };
}

/** A client, a person, a live sign-in session, and `count` codes of that session, each with its own grant. */
function seed(path: string, count: number, sequential: boolean): void {
  const db = new DatabaseSync(path);
  const now = Date.now();
  try {
    db.exec('PRAGMA busy_timeout = 5000');
    db.exec('BEGIN');
    db.prepare(`INSERT INTO users (id, username, password_hash, name, email, email_verified, disabled, created_at, updated_at)
      VALUES ('user', 'ada', 'not-a-hash', 'Ada', 'ada@example.com', 1, 0, ?, ?)`).run(now, now);
    db.prepare(`INSERT INTO clients (id, name, redirect_uris, scopes, grant_types, web_origins, created_at)
      VALUES ('app', 'App', ?, '["openid","profile"]', '["authorization_code"]', '[]', ?)`).run(JSON.stringify([REDIRECT_URI]), now);
    db.prepare(`INSERT INTO sessions (id_hash, sid, user_id, auth_time, created_at, expires_at) VALUES ('session', 'sid', 'user', ?, ?, ?)`).run(
      now,
      now,
      now + 3_600_000,
    );
    const insert = codeInserter(db, sequential, now);
    for (let i = 0; i < count; i += 1) insert(i);
    db.exec('COMMIT');
  } finally {
    db.close();
  }
}

/** Redeems codes `from` to `to` through the writer, `inFlight` at a time, as a worker thread's store does. */
async function sendRedemptions({ port, from, to, inFlight, sequential }: Task): Promise<void> {
  const link = new WriterLink(port);
  let next = from;
  const one = async (): Promise<void> => {
    while (next < to) {
      const index = next++;
      const keys = keysOf(index, sequential);
      const now = Date.now();
      const writes: RedemptionWrites = {
        activeUntil: now + 86_400_000,
        sessionClient: { sid: 'sid', expiresAt: now + 3_600_000 },
        event: {
          id: randomUUIDv7(),
          type: 'code.redeemed',
          at: now,
          userId: 'user',
          username: 'ada',
          clientId: 'app',
          grantId: keys.grant,
          ip: '127.0.0.1',
          userAgent: 'tessera-bench',
          detail: {},
        },
      };
      const redeemed = await link.call<boolean>({
        op: 'redeem',
        args: [keys.code, { clientId: 'app', redirectUri: REDIRECT_URI, codeChallenge: CHALLENGE, dpopJkt: null }, now, writes],
      });
      if (!redeemed) throw new Error(`code ${index} was not redeemed`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, one));
  link.close();
  parentPort?.close();
}
