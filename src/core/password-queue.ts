/**
 * Password checks on their own threads, behind a bounded, fair queue.
 *
 * argon2id is made to be expensive. Run on libuv's thread pool (`crypto.argon2`), a few
 * sign-in attempts in flight held every thread that signs tokens, and every token response
 * waited behind them: four wrong-password posts from one address took the code exchange
 * from milliseconds to a second. Here each check runs on a worker thread of this queue
 * (`argon2Sync` there), so signing keeps libuv's threads, and on Linux the threads run at a
 * lower priority (`nice`), so that when the cores are busy the scheduler gives the event loop
 * and the signing threads the larger share instead of an equal one; at most `threads` checks run at
 * once, at most `maxWaiting` wait, and one address may hold at most `perAddress` of those
 * places. Waiting attempts are served address by address in turn, so one address cannot
 * push another's attempt back by sending many. An address is what the per-address limits
 * count (`countedAddress`: an IPv6 address by its /64): else one host holding a /64 could fill
 * the queue alone, each of its addresses within its share. Beyond any bound the answer is
 * immediate: `busy`, with how long to wait, and nothing is hashed.
 *
 * A full queue still lets people in: a newcomer takes the place of the
 * latest waiting attempt of the address holding the most places, when that address holds at
 * least two more than the newcomer's; and a `trusted` attempt (a browser or address with a
 * good record for the username: flows/sign-in.ts) takes the place of any untrusted waiting
 * one, and is served before them. The sign-in flow reads the good record whenever the queue is
 * full (`placeFor` is not `free`), also where a stranger's attempt would displace a flood's.
 * What a full queue of trusted attempts, or a flood from
 * more addresses than the queue has places, still refuses is said in docs/security.md.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import type { PasswordHashCost } from '../config/index.ts';
import { countedAddress } from './networks.ts';
import { parsePasswordHash } from './password.ts';

export interface PasswordQueueSettings {
  /** Worker threads computing argon2id: at most this many checks at once. */
  readonly threads: number;
  /** Attempts allowed to wait for a thread, over all addresses. */
  readonly maxWaiting: number;
  /** Places (running or waiting) one client address (an IPv6 address's /64) may hold. */
  readonly perAddress: number;
  /**
   * The threads' nice value above the process's (`TESSERA_PASSWORD_HASH_NICE`; default 0, an
   * equal share): on busy cores the scheduler gives them that much less of a core than the
   * event loop and libuv's pool, which sign tokens. Linux only.
   */
  readonly nice?: number;
}

/** How an attempt asks for a place. */
export interface QueueOptions {
  /** A browser or address with a good record for the username: served first, may displace others. */
  readonly trusted?: boolean;
}

/** What the queue has done since it started: for tests and metrics, never for decisions. */
export interface PasswordQueueCounts {
  /** Hashes computed (checks and new hashes). */
  readonly hashed: number;
  /** Attempts refused at once, with no place. */
  readonly refused: number;
  /** Waiting attempts that gave their place to a newcomer (answered busy). */
  readonly displaced: number;
}

export type PasswordCheck =
  | { readonly kind: 'checked'; readonly matches: boolean }
  /** Refused without hashing: the queue, or this address's share of it, is full. */
  | { readonly kind: 'busy'; readonly retryAfterSeconds: number };

interface Job {
  /** The address's share: its `countedAddress`. */
  readonly share: string;
  readonly trusted: boolean;
  readonly password: string;
  readonly nonce: Buffer;
  readonly cost: PasswordHashCost;
  readonly tagLength: number;
  /** The tag, or null when the job gave its place to another. */
  resolve(tag: Buffer | null): void;
  reject(error: Error): void;
}

// The worker's whole program: argon2id, synchronously, on its own thread. Kept as source
// text so that it needs no file of its own to be found at run time (src/ and dist/ alike).
// getBuiltinModule, not require: a worker inherits its process's flags, and under
// --input-type=module (a server started from `node --input-type=module --eval`) its source
// is read as a module, where require is not defined.
//
// Linux keeps a nice value per thread, and setpriority(2) given a thread's ID sets that
// thread's alone; os.setPriority passes the ID through. So the thread lowers its own priority,
// found by its ID in /proc, and the process's other threads keep theirs. Where that fails (no
// /proc, another system) it hashes at the process's priority, as it did before.
const WORKER_SOURCE = `
const { parentPort, workerData } = process.getBuiltinModule('node:worker_threads');
const { argon2Sync } = process.getBuiltinModule('node:crypto');
if (workerData.nice > 0 && process.platform === 'linux') {
  try {
    const { getPriority, setPriority } = process.getBuiltinModule('node:os');
    const tid = Number(process.getBuiltinModule('node:fs').readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(tid, Math.min(19, getPriority(tid) + workerData.nice));
  } catch {}
}
parentPort.on('message', ({ password, nonce, memory, passes, parallelism, tagLength }) => {
  try {
    const tag = argon2Sync('argon2id', { message: password, nonce: Buffer.from(nonce), memory, passes, parallelism, tagLength });
    parentPort.postMessage({ tag });
  } catch (error) {
    parentPort.postMessage({ error: String(error && error.message || error) });
  }
});
`;

class HashThread {
  readonly #worker: Worker;
  #job: Job | null = null;
  #dead = false;

  constructor(nice: number, onIdle: (thread: HashThread) => void) {
    this.#worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { nice } });
    // An idle pool never keeps the process alive; the server's sockets do while it serves.
    this.#worker.unref();
    this.#worker.on('message', (message: { tag?: Uint8Array; error?: string }) => {
      const job = this.#job;
      this.#job = null;
      if (job) {
        if (message.tag) job.resolve(Buffer.from(message.tag));
        else job.reject(new Error(`argon2id failed: ${message.error ?? 'unknown error'}`));
      }
      onIdle(this);
    });
    const fail = (error: Error) => {
      this.#dead = true;
      this.#job?.reject(error);
      this.#job = null;
      onIdle(this);
    };
    this.#worker.on('error', fail);
    this.#worker.on('exit', (code) => fail(new Error(`the password hashing thread exited (code ${code})`)));
  }

  get busy(): boolean {
    return this.#job !== null;
  }

  get dead(): boolean {
    return this.#dead;
  }

  run(job: Job): void {
    this.#job = job;
    const { memory, passes, parallelism } = job.cost;
    this.#worker.postMessage({ password: job.password, nonce: job.nonce, memory, passes, parallelism, tagLength: job.tagLength });
  }

  terminate(): Promise<number> {
    this.#dead = true;
    return this.#worker.terminate();
  }
}

/** The key of the places an address's share holds (`share`: its `countedAddress`); trusted attempts hold theirs apart. */
const holdKey = (share: string, trusted: boolean) => (trusted ? `trusted ${share}` : share);

/** How long a check took, as a moving average: what Retry-After is estimated from. */
const INITIAL_ESTIMATE_MS = 500;

export class PasswordQueue {
  readonly #settings: PasswordQueueSettings;
  readonly #threads: HashThread[] = [];
  /** Waiting jobs by address (its share), in the order addresses first arrived: served in turn. */
  readonly #waiting = new Map<string, Job[]>();
  /** Waiting trusted jobs, first come first served, before any other. */
  readonly #trusted: Job[] = [];
  /** Places each address (its share) holds, running and waiting (trusted ones under their own key). */
  readonly #held = new Map<string, number>();
  #waitingCount = 0;
  #counts = { hashed: 0, refused: 0, displaced: 0 };
  #averageMs = INITIAL_ESTIMATE_MS;
  #closed = false;

  constructor(settings: PasswordQueueSettings) {
    this.#settings = settings;
  }

  /**
   * Checks `password` against a PHC-format argon2id hash from `address`'s share of the
   * queue. A malformed hash matches nothing (and costs nothing).
   */
  async verify(password: string, encoded: string, address: string, options: QueueOptions = {}): Promise<PasswordCheck> {
    const parsed = parsePasswordHash(encoded);
    if (!parsed) return { kind: 'checked', matches: false };
    const tag = await this.#hash(address, options.trusted === true, password, parsed.nonce, parsed.cost, parsed.tag.length);
    if (tag === null) return { kind: 'busy', retryAfterSeconds: this.retryAfterSeconds() };
    return { kind: 'checked', matches: timingSafeEqual(tag, parsed.tag) };
  }

  /** A fresh hash, through the queue like any check; null when there is no room. */
  async hash(password: string, cost: PasswordHashCost, address: string, options: QueueOptions = {}): Promise<string | null> {
    const nonce = randomBytes(16);
    const tag = await this.#hash(address, options.trusted === true, password, nonce, cost, 32);
    if (tag === null) return null;
    const { memory, passes, parallelism } = cost;
    return `$argon2id$v=19$m=${memory},t=${passes},p=${parallelism}$${nonce.toString('base64url')}$${tag.toString('base64url')}`;
  }

  /**
   * A password checked elsewhere (a directory's bind) under `address`'s share of
   * the queue: it holds one of the address's places while `work` runs, so one address cannot
   * have more checks in flight there than here; it takes no hashing thread, since the work
   * is waiting on the network. Null, and `work` not run, when the address has no place.
   */
  async elsewhere<T>(address: string, work: () => Promise<T>, options: QueueOptions = {}): Promise<T | null> {
    if (this.#closed) throw new Error('the server is stopping');
    const key = holdKey(countedAddress(address), options.trusted === true);
    const held = this.#held.get(key) ?? 0;
    if (held >= this.#settings.perAddress) return this.#refuse();
    this.#held.set(key, held + 1);
    try {
      return await work();
    } finally {
      const left = (this.#held.get(key) ?? 1) - 1;
      if (left === 0) this.#held.delete(key);
      else this.#held.set(key, left);
    }
  }

  /**
   * How `address` would get a place now: `free` (a thread or a waiting place is free),
   * `displacing` (the queue is full, and the attempt would take the place of another's), or
   * null (none: refused). Read before anything else is done for an attempt, so that one with
   * no place costs nothing (no count written, no hash); and whether the place is free or
   * taken from another is what tells the sign-in flow that the good record decides something.
   */
  placeFor(address: string, options: QueueOptions = {}): 'free' | 'displacing' | null {
    const trusted = options.trusted === true;
    const held = this.#held.get(holdKey(countedAddress(address), trusted)) ?? 0;
    if (held >= this.#settings.perAddress) return null;
    const running = this.#threads.filter((thread) => thread.busy && !thread.dead).length;
    if (running < this.#settings.threads || this.#waitingCount < this.#settings.maxWaiting) return 'free';
    return this.#displaceable(held, trusted) === null ? null : 'displacing';
  }

  /** Whether `address` would get a place now, free or taken from another. */
  hasRoom(address: string, options: QueueOptions = {}): boolean {
    return this.placeFor(address, options) !== null;
  }

  /** Counters since start (tests read them to see that a check went through the queue). */
  counts(): PasswordQueueCounts {
    return { ...this.#counts };
  }

  /** Seconds until everything now queued has been checked: what a refused attempt is told to wait. */
  retryAfterSeconds(): number {
    const ahead = this.#waitingCount + this.#threads.filter((thread) => thread.busy).length;
    return Math.max(1, Math.ceil((ahead * this.#averageMs) / this.#settings.threads / 1000));
  }

  /** Ends the threads; attempts still waiting are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const jobs of [...this.#waiting.values(), this.#trusted]) for (const job of jobs) job.reject(new Error('the server is stopping'));
    this.#waiting.clear();
    this.#trusted.length = 0;
    this.#waitingCount = 0;
    await Promise.all(this.#threads.splice(0).map((thread) => thread.terminate()));
  }

  #hash(address: string, trusted: boolean, password: string, nonce: Buffer, cost: PasswordHashCost, tagLength: number): Promise<Buffer | null> {
    if (this.#closed) return Promise.reject(new Error('the server is stopping'));
    const share = countedAddress(address);
    const key = holdKey(share, trusted);
    const held = this.#held.get(key) ?? 0;
    if (held >= this.#settings.perAddress) return this.#refuse();
    if (this.#idleThread() === null && this.#waitingCount >= this.#settings.maxWaiting) {
      const displaced = this.#displaceable(held, trusted);
      if (displaced === null) return this.#refuse();
      this.#displace(displaced);
    }
    this.#held.set(key, held + 1);
    return new Promise<Buffer | null>((resolve, reject) => {
      const job: Job = { share, trusted, password, nonce, cost, tagLength, resolve, reject };
      if (trusted) this.#trusted.push(job);
      else {
        const queue = this.#waiting.get(share);
        if (queue) queue.push(job);
        else this.#waiting.set(share, [job]);
      }
      this.#waitingCount += 1;
      this.#dispatch();
    }).finally(() => {
      const left = (this.#held.get(key) ?? 1) - 1;
      if (left === 0) this.#held.delete(key);
      else this.#held.set(key, left);
    });
  }

  #refuse(): Promise<null> {
    this.#counts.refused += 1;
    return Promise.resolve(null);
  }

  /**
   * The address whose latest waiting attempt a newcomer holding `held` places may take the
   * place of: the untrusted address holding the most, if it holds at least two more (or any,
   * for a trusted newcomer). Null when the newcomer must be refused.
   */
  #displaceable(held: number, trusted: boolean): string | null {
    let most: string | null = null;
    let mostHeld = 0;
    for (const address of this.#waiting.keys()) {
      const count = this.#held.get(address) ?? 0;
      // Of equals, the one that came last: it has waited least.
      if (count >= mostHeld) [most, mostHeld] = [address, count];
    }
    if (most === null) return null;
    return trusted || mostHeld >= held + 2 ? most : null;
  }

  #displace(address: string): void {
    const jobs = this.#waiting.get(address)!;
    const job = jobs.pop()!;
    if (jobs.length === 0) this.#waiting.delete(address);
    this.#waitingCount -= 1;
    this.#counts.displaced += 1;
    job.resolve(null);
  }

  #idleThread(): HashThread | null {
    for (let i = this.#threads.length - 1; i >= 0; i -= 1) if (this.#threads[i]!.dead) this.#threads.splice(i, 1);
    const idle = this.#threads.find((thread) => !thread.busy);
    if (idle) return idle;
    if (this.#threads.length < this.#settings.threads) {
      const thread = new HashThread(this.#settings.nice ?? 0, () => this.#dispatch());
      this.#threads.push(thread);
      return thread;
    }
    return null;
  }

  /** Gives each idle thread the next job, taking addresses in turn. */
  #dispatch(): void {
    while (this.#waitingCount > 0 && !this.#closed) {
      const thread = this.#idleThread();
      if (!thread) return;
      const job = this.#trusted.shift() ?? this.#nextInTurn();
      this.#waitingCount -= 1;
      this.#counts.hashed += 1;
      const began = performance.now();
      thread.run({
        ...job,
        resolve: (tag) => {
          this.#averageMs = this.#averageMs * 0.8 + (performance.now() - began) * 0.2;
          job.resolve(tag);
        },
      });
    }
  }

  /** The next untrusted job, taking addresses in turn. */
  #nextInTurn(): Job {
    const [address, jobs] = this.#waiting.entries().next().value as [string, Job[]];
    const job = jobs.shift()!;
    this.#waiting.delete(address);
    // The address goes to the back of the line, with what it has left.
    if (jobs.length > 0) this.#waiting.set(address, jobs);
    return job;
  }
}
