/**
 * Sends the outbox (store/outbox.ts), whatever the kind of delivery: a webhook's message, a
 * Security Event Token pushed to a stream, a mail. Every instance runs one worker per kind;
 * what differs between kinds is how one delivery is tried (`DeliveryKind.open`) and what a dead
 * letter records. The rest is here, once:
 *
 * - A queue (a webhook, a stream, a message) is drained by one loop at a time per instance, and
 *   its deliveries are claimed by one conditional UPDATE, up to `batch` at once, so that of
 *   several instances one holds them: each delivery is sent by one instance at a time, again
 *   only after a failure or after its lease ran out (an instance killed mid-try): at least
 *   once, with the same id.
 * - A batch is tried in order; the first try that fails is settled and the rest of the batch
 *   is given back uncounted, so that later deliveries wait behind it (in order). No try begins
 *   that its lease would not outlast: the rest is given back and claimed again.
 * - A failed try is tried again after `retryDelayMs`, doubled each time (at most an hour),
 *   until `retryWindowMs` has passed since the delivery was queued (or replayed); then it is a
 *   dead letter, which no longer holds the later ones back, and which an operator can replay.
 * - The worker looks for due queues every POLL_MS (what another instance, or the `tessera`
 *   command, stored), and at once when told (`wake`) of an event this process stored.
 * - Every worker of the process begins at most `triesPerTurn` tries in one turn of the event
 *   loop (`TurnBudget`), then waits for the next: a flood of deliveries takes its share of each
 *   turn, and requests (token responses) the rest. And deliveries are background work: while
 *   the loop is busy (most of a tenth of a second spent running), they begin fewer a second,
 *   down to a floor that keeps them going, so that a flood of events does not slow the answers
 *   to a flood of requests; with room, they speed up again to what the turns allow.
 */
import type { Clock } from '../../core/clock.ts';
import type { EventInput, Events } from '../../core/events.ts';
import type { OutboxKind, OutboxRecords, OutboxStore, Stores } from '../../store/types.ts';
import { transactionWithEvents } from '../events.ts';

/** How often each instance looks for due deliveries it was not told of. */
export const POLL_MS = 500;
/** The longest wait between two tries of a delivery. */
export const MAX_RETRY_DELAY_MS = 60 * 60_000;
/** A lease outlasts the try's timeout by this much, so that only a dead instance's lease runs out. */
export const LEASE_MARGIN_MS = 30_000;
/** Queues looked at per round. */
const DUE_BATCH = 100;

/** The wait after failed try number `attempts` (1 for the first). */
export function retryDelay(attempts: number, firstMs: number): number {
  return Math.min(firstMs * 2 ** Math.min(attempts - 1, 30), MAX_RETRY_DELAY_MS);
}

/** What the metrics count (http/metrics.ts), per kind. */
export interface DeliveryObserver {
  /** Delivered, `latencySeconds` after its event. */
  delivered(latencySeconds: number): void;
  /** A try that failed and will be retried. */
  failed(): void;
  /** Given up: a dead letter. */
  dead(): void;
}

/** How one try went. */
export type TryResult =
  /** Delivered; `eventAt` is when its event happened (the latency measured). */
  | { readonly kind: 'delivered'; readonly status: number | null; readonly eventAt: number }
  /** Failed: tried again later, unless `final` (refused for good, or nothing to send): a dead letter now. */
  | { readonly kind: 'failed'; readonly status: number | null; readonly error: string; readonly final?: boolean };

/** One try of a delivery of a batch; the signal ends it when the worker stops. */
export type Attempt<R> = (delivery: R, signal: AbortSignal) => Promise<TryResult>;

/** One kind of delivery. */
export interface DeliveryKind<K extends OutboxKind> {
  readonly kind: K;
  /** The queue a delivery goes out in and its id there (store/outbox.ts). */
  key(delivery: OutboxRecords[K]): { readonly queue: string; readonly item: string };
  /**
   * What a claimed batch's tries share, read once (the webhook or stream, the events): how to
   * try each, or null when the queue is to wait (removed, paused), and the batch is given back.
   */
  open(queue: string, batch: readonly OutboxRecords[K][]): Promise<Attempt<OutboxRecords[K]> | null>;
  /**
   * A dead letter's event for the audit trail and its log line. `tx` is the transaction that
   * settles the delivery as dead, where the event is recorded: a dead letter is never left
   * without its event (a crash between two writes would have lost it), nor an event without it.
   */
  deadLetter(delivery: OutboxRecords[K], error: string, tx: Stores): Promise<DeadLetter>;
}

/** What a dead letter records: its event, and the line logged at warn once it is stored. */
export interface DeadLetter {
  readonly event: EventInput;
  readonly log: readonly [details: Record<string, unknown>, message: string];
}

export interface WorkerSettings {
  /** The longest a try may take, milliseconds: a lease is this and LEASE_MARGIN_MS. */
  readonly timeoutMs: number;
  readonly retryDelayMs: number;
  /** How long after it was queued a delivery is tried, milliseconds; then it is a dead letter. */
  readonly retryWindowMs: number;
  /** Deliveries claimed per statement. */
  readonly batch: number;
  /** Queues drained at once. */
  readonly concurrency: number;
  /** How long `stop` waits for tries under way; null: until they end (a kind whose tries honour the signal). */
  readonly stopWaitMs: number | null;
}

export interface WorkerDeps {
  readonly store: { readonly outbox: OutboxStore; transaction<T>(work: (tx: Stores) => Promise<T>): Promise<T> };
  readonly events: Pick<Events, 'record' | 'publish'>;
  readonly clock: Clock;
  readonly log: { warn(details: Record<string, unknown>, message: string): void };
  readonly observer?: DeliveryObserver;
  readonly budget: TurnBudget;
}

/**
 * The event loop's load as the budget reads it: a clock in milliseconds, and the share of the
 * time since the last reading that the loop spent running callbacks rather than waiting, 0 to 1.
 */
export interface LoopGauge {
  now(): number;
  utilization(): number;
}

/** The process's own event loop (`performance.eventLoopUtilization`). */
export function eventLoopGauge(): LoopGauge {
  let last = performance.eventLoopUtilization();
  return {
    now: () => performance.now(),
    utilization() {
      const next = performance.eventLoopUtilization();
      const { utilization } = performance.eventLoopUtilization(next, last);
      last = next;
      return utilization;
    },
  };
}

/** How often the pace is set again from the loop's load, milliseconds. */
export const PACE_WINDOW_MS = 100;
/** At or above this utilization the loop is busy: the pace halves, down to the floor. */
export const BUSY_UTILIZATION = 0.9;
/** Below this the loop has room: the pace doubles. */
export const IDLE_UTILIZATION = 0.75;
/** Tries a second past which the pace is no limit at all (the per-turn budget alone). */
const FULL_PACE = 10_000;

/**
 * The pace (tries begun a second) for the next window, from the last one's: halved from what
 * was begun when the loop was busy, never below `floor`; doubled when it had room, until
 * unlimited; else kept. A loop kept busy by requests thus brings deliveries down to the floor
 * within a few windows whatever they cost, and a loop busy with deliveries alone lets them
 * take it to about BUSY_UTILIZATION, leaving the rest to requests.
 */
export function nextPace(pace: number, utilization: number, begunPerSecond: number, floor: number): number {
  if (utilization >= BUSY_UTILIZATION) return Math.max(floor, Math.min(pace, begunPerSecond) / 2);
  if (utilization < IDLE_UTILIZATION) return pace * 2 >= FULL_PACE ? Number.POSITIVE_INFINITY : pace * 2;
  return pace;
}

/** What the budget is given beside its tries per turn. */
export interface BudgetOptions {
  /** The pace while the loop is busy: tries begun a second, at least (TESSERA_OUTBOX_BUSY_TRIES_PER_SECOND). */
  readonly busyTriesPerSecond?: number;
  readonly gauge?: LoopGauge;
}

/**
 * The tries every worker of the process may begin: at most `perTurn` in one turn of the event
 * loop, the next waiting for the next turn (setImmediate: after the turn's I/O, so requests come
 * first); and, while the loop is busy, at a pace that gives way to requests (`nextPace`, set
 * again every PACE_WINDOW_MS from the loop's utilization), never below `busyTriesPerSecond`,
 * the next waiting on a timer (so that the loop, between, can rest or answer requests).
 */
export class TurnBudget {
  readonly #perTurn: number;
  readonly #floor: number;
  readonly #gauge: LoopGauge;
  #used = 0;
  #waiting: (() => void)[] = [];
  #scheduled = false;
  #timer: NodeJS.Timeout | undefined;
  #pace = Number.POSITIVE_INFINITY;
  /** Tries the pace allows now (a bucket filled at the pace, holding one window's worth). */
  #credit = 0;
  #creditAt: number;
  #windowStart: number;
  #begunInWindow = 0;

  constructor(perTurn: number, options: BudgetOptions = {}) {
    this.#perTurn = perTurn;
    this.#floor = options.busyTriesPerSecond ?? DEFAULT_BUSY_TRIES_PER_SECOND;
    this.#gauge = options.gauge ?? eventLoopGauge();
    this.#windowStart = this.#creditAt = this.#gauge.now();
  }

  /** Resolves when a try may begin. */
  take(): Promise<void> | undefined {
    this.#schedule();
    if (this.#waiting.length === 0 && this.#used < this.#perTurn && this.#paced()) {
      this.#used += 1;
      return undefined;
    }
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Whether the pace lets a try begin now; counts it if so. */
  #paced(): boolean {
    this.#setPace();
    if (this.#pace !== Number.POSITIVE_INFINITY) {
      const now = this.#gauge.now();
      this.#credit = Math.min(Math.max(1, (this.#pace * PACE_WINDOW_MS) / 1000), this.#credit + ((now - this.#creditAt) * this.#pace) / 1000);
      this.#creditAt = now;
      if (this.#credit < 1) return false;
      this.#credit -= 1;
    }
    this.#begunInWindow += 1;
    return true;
  }

  /** At the end of a window, the next pace from its load and what it began. */
  #setPace(): void {
    const now = this.#gauge.now();
    const elapsed = now - this.#windowStart;
    if (elapsed < PACE_WINDOW_MS) return;
    const wasUnlimited = this.#pace === Number.POSITIVE_INFINITY;
    this.#pace = nextPace(this.#pace, this.#gauge.utilization(), (this.#begunInWindow * 1000) / elapsed, this.#floor);
    // Paced again after a time unlimited: one try may begin at once (a lone event goes out
    // without waiting), the next at the pace.
    if (wasUnlimited && this.#pace !== Number.POSITIVE_INFINITY) [this.#credit, this.#creditAt] = [1, now];
    this.#windowStart = now;
    this.#begunInWindow = 0;
  }

  #schedule(): void {
    if (this.#scheduled) return;
    this.#scheduled = true;
    setImmediate(() => {
      this.#scheduled = false;
      this.#used = 0;
      this.#release();
    });
  }

  /** Lets waiting tries begin, as many as this turn and the pace allow; then waits for the next turn or the pace. */
  #release(): void {
    let released = 0;
    while (this.#waiting.length > 0 && this.#used < this.#perTurn && this.#paced()) {
      this.#used += 1;
      released += 1;
      this.#waiting.shift()!();
    }
    // A turn that began tries is followed by one that counts afresh.
    if (released > 0 || (this.#waiting.length > 0 && this.#used >= this.#perTurn)) this.#schedule();
    else if (this.#waiting.length > 0 && this.#timer === undefined) {
      const wait = Math.max(1, Math.ceil(((1 - this.#credit) * 1000) / this.#pace));
      this.#timer = setTimeout(
        () => {
          this.#timer = undefined;
          this.#release();
        },
        Math.min(wait, PACE_WINDOW_MS),
      );
    }
  }
}

/** TESSERA_OUTBOX_BUSY_TRIES_PER_SECOND's default. */
export const DEFAULT_BUSY_TRIES_PER_SECOND = 20;
/** TESSERA_OUTBOX_TRIES_PER_TURN's default. */
export const DEFAULT_TRIES_PER_TURN = 4;
/** TESSERA_OUTBOX_BATCH's default. */
export const DEFAULT_BATCH = 32;

/** The budget of workers not given one (app.ts gives its three one of their own, from TESSERA_OUTBOX_TRIES_PER_TURN). */
export const sharedTurnBudget = new TurnBudget(DEFAULT_TRIES_PER_TURN);

/** A dispatcher's dependencies as its worker takes them: the shared turn budget unless it was given one. */
export function workerDeps(deps: Omit<WorkerDeps, 'budget'> & { readonly budget?: TurnBudget | undefined }): WorkerDeps {
  return {
    store: deps.store,
    events: deps.events,
    clock: deps.clock,
    log: deps.log,
    budget: deps.budget ?? sharedTurnBudget,
    ...(deps.observer ? { observer: deps.observer } : {}),
  };
}

/**
 * The worker's settings for posts over HTTP (webhooks, Shared Signals pushes), from their
 * TESSERA_WEBHOOK_* settings: every queue drained at once, and a stop that waits for no try,
 * since their tries honour the stop signal.
 */
export function httpWorkerSettings(
  settings: { readonly timeoutSeconds: number; readonly retryDelayMs: number; readonly retryWindowSeconds: number },
  batch = DEFAULT_BATCH,
): WorkerSettings {
  return {
    timeoutMs: settings.timeoutSeconds * 1000,
    retryDelayMs: settings.retryDelayMs,
    retryWindowMs: settings.retryWindowSeconds * 1000,
    batch,
    concurrency: Number.POSITIVE_INFINITY,
    stopWaitMs: null,
  };
}

export class OutboxWorker<K extends OutboxKind> {
  readonly #kind: DeliveryKind<K>;
  readonly #deps: WorkerDeps;
  readonly #settings: WorkerSettings;
  readonly #stop = new AbortController();
  /** The queues being drained, each by one loop. */
  readonly #draining = new Map<string, Promise<void>>();
  #timer: NodeJS.Timeout | undefined;
  #looking: Promise<void> | null = null;
  #lookAgain = false;
  /** Due queues were left for want of room: a drain that ends looks again. */
  #full = false;

  constructor(kind: DeliveryKind<K>, deps: WorkerDeps, settings: WorkerSettings) {
    this.#kind = kind;
    this.#deps = deps;
    this.#settings = settings;
  }

  start(pollMs = POLL_MS): void {
    this.#timer = setInterval(() => this.wake(), pollMs);
    this.#timer.unref();
    this.wake();
  }

  /** Looks for due deliveries now (once more after the look under way, if one is). */
  wake(): void {
    if (this.#stop.signal.aborted) return;
    if (this.#looking) {
      this.#lookAgain = true;
      return;
    }
    this.#looking = this.#look().finally(() => {
      this.#looking = null;
      if (this.#lookAgain) {
        this.#lookAgain = false;
        this.wake();
      }
    });
  }

  /**
   * Stops looking and ends the tries under way, giving their deliveries back; resolves once
   * they are (or, for a kind whose tries cannot be ended, after `stopWaitMs`: a try still going
   * keeps its lease, which runs out, and another instance sends it).
   */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#stop.abort();
    const ended = (async () => {
      await this.#looking;
      await Promise.all(this.#draining.values());
    })();
    const { stopWaitMs } = this.#settings;
    if (stopWaitMs === null) await ended;
    else await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, stopWaitMs).unref())]);
  }

  async #look(): Promise<void> {
    if (this.#draining.size >= this.#settings.concurrency) {
      // At the limit: the next drain to end looks again.
      this.#full = true;
      return;
    }
    let due: string[];
    try {
      due = await this.#deps.store.outbox.due(this.#kind.kind, this.#deps.clock.now(), DUE_BATCH);
    } catch (error) {
      this.#deps.log.warn({ err: error, outbox: this.#kind.kind }, 'looking for due deliveries failed');
      return;
    }
    for (const queue of due) {
      if (this.#draining.has(queue) || this.#stop.signal.aborted) continue;
      if (this.#draining.size >= this.#settings.concurrency) {
        this.#full = true;
        break;
      }
      const drain = this.#drain(queue)
        .catch((error: unknown) => this.#deps.log.warn({ err: error, outbox: this.#kind.kind, queue }, 'delivery failed'))
        .finally(() => {
          this.#draining.delete(queue);
          if (this.#full) {
            this.#full = false;
            this.wake();
          }
        });
      this.#draining.set(queue, drain);
    }
  }

  /** Sends the queue's due deliveries, a batch at a time, until none is due or one fails. */
  async #drain(queue: string): Promise<void> {
    const leaseMs = this.#settings.timeoutMs + LEASE_MARGIN_MS;
    while (!this.#stop.signal.aborted) {
      const now = this.#deps.clock.now();
      const leaseUntil = now + leaseMs;
      const batch = await this.#deps.store.outbox.claim(this.#kind.kind, queue, now, leaseUntil, this.#settings.batch);
      if (batch.length === 0) return;
      if (!(await this.#tryBatch(queue, batch, leaseUntil))) return;
    }
  }

  /** Tries a claimed batch in order; false when the queue is to wait (a failure, a pause, stopping). */
  async #tryBatch(queue: string, batch: readonly OutboxRecords[K][], leaseUntil: number): Promise<boolean> {
    const { store, clock } = this.#deps;
    const attempt = await this.#kind.open(queue, batch);
    const settles: Promise<unknown>[] = [];
    let index = 0;
    let goOn = attempt !== null;
    while (goOn && index < batch.length) {
      const delivery = batch[index]!;
      await this.#deps.budget.take();
      // A try that its lease would not outlast waits for a new claim.
      if (this.#stop.signal.aborted || clock.now() + this.#settings.timeoutMs > leaseUntil) break;
      let result: TryResult;
      try {
        result = await attempt!(delivery, this.#stop.signal);
      } catch (caught) {
        if (this.#stop.signal.aborted) break;
        throw caught;
      }
      // Stopping: the try is not counted, and the next instance (or this one, restarted) sends it.
      if (this.#stop.signal.aborted && result.kind === 'failed') break;
      index += 1;
      const { item } = this.#kind.key(delivery);
      if (result.kind === 'delivered') {
        const done = clock.now();
        // Not awaited one by one: the next try need not wait for this one's commit.
        settles.push(
          store.outbox.settle(this.#kind.kind, queue, item, delivery.attempts, { kind: 'delivered', status: result.status }, done).then((state) => {
            if (state === 'delivered') this.#deps.observer?.delivered(Math.max(0, done - result.eventAt) / 1000);
          }),
        );
      } else {
        await this.#failed(queue, delivery, result);
        goOn = false;
      }
    }
    // The rest of the batch is given back uncounted: behind a failure, or for a new claim.
    const now = clock.now();
    for (const delivery of batch.slice(index))
      settles.push(store.outbox.release(this.#kind.kind, queue, this.#kind.key(delivery).item, delivery.attempts, now));
    await Promise.all(settles);
    return goOn && !this.#stop.signal.aborted;
  }

  async #failed(queue: string, delivery: OutboxRecords[K], result: TryResult & { kind: 'failed' }): Promise<void> {
    const { clock, observer, log } = this.#deps;
    const failedAt = clock.now();
    // One transaction: the settlement and, when it makes a dead letter, the dead letter's event.
    const { state, dead } = await transactionWithEvents(this.#deps, async (tx, record) => {
      const state = await tx.outbox.settle(
        this.#kind.kind,
        queue,
        this.#kind.key(delivery).item,
        delivery.attempts,
        {
          kind: 'failed',
          status: result.status,
          error: result.error,
          nextAttemptAt: failedAt + retryDelay(delivery.attempts, this.#settings.retryDelayMs),
          deadBefore: result.final ? failedAt : failedAt - this.#settings.retryWindowMs,
        },
        failedAt,
      );
      if (state !== 'dead') return { state, dead: null };
      const dead = await this.#kind.deadLetter(delivery, result.error, tx);
      await record(dead.event);
      return { state, dead };
    });
    if (state === 'pending') observer?.failed();
    if (dead === null) return;
    observer?.dead();
    log.warn(...dead.log);
  }
}
