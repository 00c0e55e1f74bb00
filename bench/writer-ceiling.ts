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
 *
 * Each redemption is what the token endpoint sends for a code of a sign-in session: the code's
 * consumption, the grant's use, the session's client and the audit event, in one savepoint of
 * the writer's group commit. Codes, each with its own grant, are written straight into a fresh
 * file first, as bench/targets.ts mints them.
 */
import { randomUUIDv7 } from 'node:crypto';
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

interface Task {
  readonly port: MessagePort;
  readonly from: number;
  readonly to: number;
  readonly inFlight: number;
}

if (isMainThread) await main();
else await sendRedemptions(workerData as Task);

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      threads: { type: 'string', default: '4' },
      'in-flight': { type: 'string', default: '50' },
      codes: { type: 'string', default: '60000' },
      runs: { type: 'string', default: '3' },
    },
  });
  const threads = Number(values.threads);
  const codes = Number(values.codes);
  const perThread = Math.floor(codes / threads);
  const results: number[] = [];
  for (let run = 1; run <= Number(values.runs); run += 1) {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-writer-ceiling-'));
    try {
      const path = join(dir, 'tessera.db');
      const writer = openSqliteWriter(path);
      seed(path, perThread * threads);
      const started = performance.now();
      const cpu = process.threadCpuUsage();
      await Promise.all(
        Array.from({ length: threads }, (_, index) => {
          const { port1, port2 } = new MessageChannel();
          writer.accept(port1);
          const task: Task = { port: port2, from: index * perThread, to: (index + 1) * perThread, inFlight: Number(values['in-flight']) };
          const worker = new Worker(new URL(import.meta.url), { workerData: task, transferList: [port2] });
          return new Promise<void>((resolve, reject) => {
            worker.once('error', reject);
            worker.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`a sending thread exited with ${code}`))));
          });
        }),
      );
      const used = process.threadCpuUsage(cpu);
      const seconds = (performance.now() - started) / 1000;
      const redemptions = perThread * threads;
      const perRedemption = (used.user + used.system) / redemptions;
      results.push(perRedemption);
      console.log(
        `run ${run}: ${redemptions} redemptions from ${threads} threads in ${seconds.toFixed(2)} s (${Math.round(redemptions / seconds)}/s); ` +
          `writer thread ${perRedemption.toFixed(1)} µs of CPU a redemption`,
      );
      await writer.store.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  const median = [...results].sort((a, b) => a - b)[Math.floor(results.length / 2)]!;
  console.log(`median: ${median.toFixed(1)} µs a redemption on the writer thread, a ceiling of ${Math.round(1_000_000 / median)} redemptions a second`);
}

/** A client, a person, a live sign-in session, and `count` codes of that session, each with its own grant. */
function seed(path: string, count: number): void {
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
    const grant = db.prepare(`INSERT INTO grants (id, user_id, client_id, scope, kind, auth_time, created_at)
      VALUES (?, 'user', 'app', '["openid","profile"]', 'authorization_code', ?, ?)`);
    const code =
      db.prepare(`INSERT INTO authorization_codes (hash, client_id, user_id, grant_id, redirect_uri, scope, code_challenge, auth_time, sid, created_at, expires_at, id_token_claims)
      VALUES (?, 'app', 'user', ?, ?, '["openid","profile"]', ?, ?, 'sid', ?, ?, '[]')`);
    for (let i = 0; i < count; i += 1) {
      grant.run(`grant-${i}`, now, now);
      code.run(`code-${i}`, `grant-${i}`, REDIRECT_URI, CHALLENGE, now, now, now + 3_600_000);
    }
    db.exec('COMMIT');
  } finally {
    db.close();
  }
}

/** Redeems codes `from` to `to` through the writer, `inFlight` at a time, as a worker thread's store does. */
async function sendRedemptions({ port, from, to, inFlight }: Task): Promise<void> {
  const link = new WriterLink(port);
  let next = from;
  const one = async (): Promise<void> => {
    while (next < to) {
      const index = next++;
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
          grantId: `grant-${index}`,
          ip: '127.0.0.1',
          userAgent: 'tessera-bench',
          detail: {},
        },
      };
      const redeemed = await link.call<boolean>({
        op: 'redeem',
        args: [`code-${index}`, { clientId: 'app', redirectUri: REDIRECT_URI, codeChallenge: CHALLENGE, dpopJkt: null }, now, writes],
      });
      if (!redeemed) throw new Error(`code-${index} was not redeemed`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, one));
  link.close();
  parentPort?.close();
}
