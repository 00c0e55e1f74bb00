/**
 * The channel between the worker threads of one process and its one writer (store.ts,
 * `openSqliteWriter` and `openSqliteThreadStore`): a thread reads on a connection of its own
 * and sends each write over a MessagePort, as a named statement and its parameters (a
 * structured clone: no pipe, no JSON), answered once the writer's group commit holds it.
 */
import type { MessagePort } from 'node:worker_threads';
import { StoreUnavailableError } from '../errors.ts';
import type { Params } from '../sql/dialect.ts';
import type { StatementName } from '../sql/statements.ts';
import { DuplicateError, MissingReferenceError } from '../types.ts';
import { RolledBackError } from './group-commit.ts';

/** One of a runner's methods (sql/dialect.ts `Runner`). */
export type RunnerMethod = 'select' | 'one' | 'all' | 'changed';

/** What a thread asks of the writer. */
export type WriteRequest =
  /** A write outside any transaction: committed with the writer's next group commit. */
  | { readonly op: 'one' | 'all' | 'changed'; readonly name: StatementName; readonly params: Params }
  /** A code's redemption and the writes that follow it, as the store's `codes.redeem` takes them. */
  | { readonly op: 'redeem'; readonly args: readonly unknown[] }
  /** A refresh token's rotation and the writes that follow it, as the store's `refreshTokens.rotateWith` takes them. */
  | { readonly op: 'rotateWith'; readonly args: readonly unknown[] }
  /** Opens a transaction for this thread: answered with its number once the writer holds it open. */
  | { readonly op: 'begin' }
  /** A statement of the open transaction `tx` (a read too: it must see the transaction's writes). */
  | { readonly op: 'tx'; readonly tx: number; readonly method: RunnerMethod; readonly name: string; readonly params: Params }
  /** Ends transaction `tx`: committed when `ok`, rolled back otherwise; answered once it has. */
  | { readonly op: 'end'; readonly tx: number; readonly ok: boolean };

interface Message {
  readonly id: number;
  readonly request: WriteRequest;
}

type Answer = { readonly id: number; readonly ok: true; readonly value: unknown } | { readonly id: number; readonly ok: false; readonly error: SentError };

/** An error as it crosses the port: the store's own kinds keep their class on the other side. */
interface SentError {
  readonly name: string;
  readonly message: string;
  readonly errcode?: unknown;
  readonly code?: unknown;
  readonly field?: string | null;
  readonly cause?: SentError;
}

function send(error: unknown, depth = 0): SentError {
  if (!(error instanceof Error)) return { name: 'Error', message: String(error) };
  const { errcode, code, field } = error as Error & { errcode?: unknown; code?: unknown; field?: string | null };
  return {
    name: error.name,
    message: error.message,
    ...(errcode === undefined ? {} : { errcode }),
    ...(code === undefined ? {} : { code }),
    ...(field === undefined ? {} : { field }),
    ...(error.cause !== undefined && depth < 3 ? { cause: send(error.cause, depth + 1) } : {}),
  };
}

function receive(sent: SentError): Error {
  const cause = sent.cause === undefined ? undefined : receive(sent.cause);
  let error: Error;
  if (sent.name === 'DuplicateError') error = new DuplicateError('', { cause, field: sent.field ?? undefined });
  else if (sent.name === 'MissingReferenceError') error = new MissingReferenceError({ cause });
  else if (sent.name === 'StoreUnavailableError') error = new StoreUnavailableError(cause);
  else if (sent.name === 'RolledBackError') error = new RolledBackError(cause);
  else {
    error = new Error(sent.message, cause === undefined ? {} : { cause });
    error.name = sent.name;
    if (sent.errcode !== undefined) Object.assign(error, { errcode: sent.errcode });
    if (sent.code !== undefined) Object.assign(error, { code: sent.code });
  }
  error.message = sent.message;
  return error;
}

/** Queues what it is given and hands `post` everything queued in one round of the event loop, together, at the round's end. */
function perRound<T>(post: (batch: T[]) => void): (item: T) => void {
  let queued: T[] = [];
  const flush = () => {
    const batch = queued;
    queued = [];
    post(batch);
  };
  return (item) => {
    queued.push(item);
    if (queued.length === 1) setImmediate(flush);
  };
}

/** A thread's end of the channel: each call answered by the writer, or failed as unavailable once the writer is gone. */
export class WriterLink {
  readonly #port: MessagePort;
  readonly #waiting = new Map<number, { resolve: (value: unknown) => void; reject: (error: unknown) => void }>();
  #next = 0;
  #closed = false;
  /**
   * The requests of one round of the event loop go in one message: each message wakes the
   * writer's thread and is copied on its own, and a round's requests meet the writer's
   * group commit together anyway.
   */
  readonly #send = perRound<Message>((batch) => {
    if (!this.#closed) this.#port.postMessage(batch);
  });

  constructor(port: MessagePort) {
    this.#port = port;
    port.on('message', (answers: readonly Answer[]) => {
      for (const answer of answers) {
        const waiting = this.#waiting.get(answer.id);
        if (waiting === undefined) continue;
        this.#waiting.delete(answer.id);
        if (answer.ok) waiting.resolve(answer.value);
        else waiting.reject(receive(answer.error));
      }
    });
    port.on('close', () => this.#gone());
  }

  call<T>(request: WriteRequest): Promise<T> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError(new Error('the writer thread is gone')));
    return new Promise<T>((resolve, reject) => {
      const id = (this.#next += 1);
      this.#waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.#send({ id, request });
    });
  }

  close(): void {
    this.#port.close();
    this.#gone();
  }

  #gone(): void {
    this.#closed = true;
    const error = new StoreUnavailableError(new Error('the writer thread is gone'));
    for (const waiting of this.#waiting.values()) waiting.reject(error);
    this.#waiting.clear();
  }
}

/** The writer's end: answers each request with what `handle` resolves to, or its failure. */
export function answerRequests(port: MessagePort, handle: (request: WriteRequest) => Promise<unknown>): void {
  // The answers of one round go back in one message, as the requests came.
  const answer = perRound<Answer>((batch) => port.postMessage(batch));
  port.on('message', (messages: readonly Message[]) => {
    for (const { id, request } of messages) {
      let answered: Promise<unknown>;
      try {
        answered = handle(request);
      } catch (error) {
        answered = Promise.reject(error);
      }
      answered.then(
        (value) => answer({ id, ok: true, value }),
        (error: unknown) => answer({ id, ok: false, error: send(error) }),
      );
    }
  });
}
