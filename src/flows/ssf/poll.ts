/**
 * RFC 8936 (Poll-Based SET Delivery): a receiver whose stream asked for `urn:ietf:rfc:8936`
 * POSTs to its stream's poll endpoint, acknowledging what it has handled (`ack`), naming what it
 * could not (`setErrs`), and is answered the SETs still unacknowledged, oldest first. A SET not
 * acknowledged is returned again at the next poll, with the same `jti` (§2.4: "the SET
 * Transmitter ... MAY re-issue"), so nothing is lost to a receiver that fell over mid-batch.
 */
import { DELIVERY_POLL } from '../../core/ssf.ts';
import type { SsfStreamRecord } from '../../store/types.ts';
import { setClaims } from './set.ts';
import { SsfError, type StreamDeps } from './streams.ts';

/** The most SETs one answer holds, whatever `maxEvents` asks. */
export const MAX_POLL_EVENTS = 100;
/** How long a poll without `returnImmediately` waits for a SET before answering none. */
export const LONG_POLL_MS = 15_000;
/** How often a waiting poll looks again (another instance may store the event). */
const LOOK_MS = 200;

/** RFC 8936 §2.6: an error answer is RFC 8935 §2.3's `{err, description}`, with 400. */
export class PollError extends SsfError {
  constructor(description: string) {
    super(400, 'invalid_request', description);
  }
}

interface PollRequest {
  readonly maxEvents: number;
  readonly returnImmediately: boolean;
  readonly ack: readonly string[];
  readonly setErrs: ReadonlyMap<string, string>;
}

/** §2.4 the poll request's members; anything malformed is `invalid_request`. */
function pollRequest(raw: unknown): PollRequest {
  const body = (raw ?? {}) as Record<string, unknown>;
  if (typeof body !== 'object' || Array.isArray(body)) throw new PollError('the body must be a JSON object');
  const max = body['maxEvents'];
  if (max !== undefined && (typeof max !== 'number' || !Number.isInteger(max) || max < 0)) throw new PollError('maxEvents must be a non-negative integer');
  const immediately = body['returnImmediately'];
  if (immediately !== undefined && typeof immediately !== 'boolean') throw new PollError('returnImmediately must be true or false');
  const ack = body['ack'] ?? [];
  if (!Array.isArray(ack) || !ack.every((jti) => typeof jti === 'string') || ack.length > 1000) throw new PollError('ack must be an array of jti values');
  const errs = body['setErrs'] ?? {};
  if (typeof errs !== 'object' || errs === null || Array.isArray(errs)) throw new PollError('setErrs must be an object of jti: {err, description}');
  const setErrs = new Map<string, string>();
  for (const [jti, value] of Object.entries(errs as Record<string, unknown>)) {
    const err = (value as { err?: unknown } | null)?.err;
    const description = (value as { description?: unknown } | null)?.description;
    if (typeof err !== 'string') throw new PollError(`setErrs.${jti.slice(0, 100)} must have err`);
    setErrs.set(jti, `refused: ${err}${typeof description === 'string' ? `: ${description}` : ''}`);
  }
  if (setErrs.size > 1000) throw new PollError('setErrs names too many SETs');
  return { maxEvents: Math.min(max ?? MAX_POLL_EVENTS, MAX_POLL_EVENTS), returnImmediately: immediately ?? false, ack: ack as string[], setErrs };
}

/** The stream's SETs not yet acknowledged, at most `max`, signed now; and whether more wait. */
async function pendingSets(deps: StreamDeps, stream: SsfStreamRecord, max: number): Promise<{ sets: Record<string, string>; moreAvailable: boolean }> {
  const pending = await deps.store.ssf.pending(stream.id, max + 1);
  const sets: Record<string, string> = {};
  for (const delivery of pending.slice(0, max)) {
    const event = await deps.store.ssf.event(delivery.eventId);
    const user = event?.userId ? await deps.store.users.get(event.userId) : null;
    const claims = event === null ? null : setClaims(deps.config.issuer, stream, event, user, deps.clock.now());
    if (claims === null) {
      // Nothing to say (the event was purged, or names nobody): not held against the receiver.
      await deps.store.ssf.refuse(stream.id, delivery.eventId, 'nothing to send: the event is gone or names no subject', deps.clock.now());
      continue;
    }
    sets[delivery.eventId] = await deps.tokens.securityEventToken(claims);
  }
  return { sets, moreAvailable: pending.length > max };
}

/**
 * One poll (§2.4): acknowledgements and errors first, then the SETs that wait, at once or
 * (without `returnImmediately`) once one comes, up to LONG_POLL_MS. `signal` ends a wait early
 * (the receiver went away, the server stops).
 */
export async function poll(
  deps: StreamDeps,
  stream: SsfStreamRecord,
  raw: unknown,
  signal?: AbortSignal,
): Promise<{ sets: Record<string, string>; moreAvailable?: boolean }> {
  if (stream.deliveryMethod !== DELIVERY_POLL) throw new PollError('this stream is delivered by push (urn:ietf:rfc:8935): it has no poll endpoint');
  const request = pollRequest(raw);
  const now = deps.clock.now();
  // §2.4: "ack ... the SET Transmitter ... MAY delete the acknowledged SETs": delivered, never sent again.
  if (request.ack.length > 0) await deps.store.ssf.acknowledge(stream.id, request.ack, now);
  // §2.4 setErrs: SETs the receiver could not take; kept as dead letters with its reason.
  for (const [jti, error] of request.setErrs) await deps.store.ssf.refuse(stream.id, jti, error, now);
  // Paused or disabled: nothing is sent (§8.1.2); a paused stream's SETs wait.
  if (request.maxEvents === 0 || stream.status !== 'enabled') return { sets: {} };
  const deadline = deps.clock.now() + LONG_POLL_MS;
  for (;;) {
    const answer = await pendingSets(deps, stream, request.maxEvents);
    if (Object.keys(answer.sets).length > 0 || request.returnImmediately || signal?.aborted || deps.clock.now() >= deadline) {
      return answer.moreAvailable ? answer : { sets: answer.sets };
    }
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, LOOK_MS);
      signal?.addEventListener('abort', done);
    });
    // Ended while waiting (the receiver went away, the server stops): none, without asking the store again.
    if (signal?.aborted) return { sets: {} };
  }
}
