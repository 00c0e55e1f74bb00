/**
 * Pushes Security Event Tokens to the streams that asked for push delivery (RFC 8935), from
 * the outbox (each stream's deliveries, owed from each event's transaction: store/migrations.ts,
 * version 45, and store/sql/outbox.ts), through the
 * outbox's worker (flows/outbox/worker.ts), which claims, leases, retries and gives up as for
 * webhooks. What is a stream's own is here: a stream is a queue (its SETs go out in event
 * order; a receiver that is slow, down or failing holds back only its own), a paused or
 * disabled stream waits, and a receiver that lost `ssf:manage` hears nothing more. Tries are
 * timed, retried and given up by the webhooks' settings (TESSERA_WEBHOOK_TIMEOUT,
 * _RETRY_DELAY_MS, _RETRY_WINDOW).
 *
 * RFC 8935 §2.2: a receiver that accepts a SET answers 202. §2.3: one that refuses it answers
 * 400 with `{"err": …, "description": …}`; that SET is not sent again (it would be refused
 * again): it is a dead letter at once, with the receiver's reason. Any other answer, or none,
 * is tried again.
 *
 * A claimed batch reads its stream, its receiver, its events and their people once. A SET is
 * signed once for every stream that is sent the same claims within SIGNED_SET_REUSE_MS (the
 * streams of one receiver, in one subject format, share them: `aud` is the receiver), and keeps
 * the `iat` of that signing: RS256 signatures are the costliest part of a push. A SET is posted
 * through core/outbound.ts's guarded POST (undici's request, connections kept alive per
 * receiver), not fetch, whose own work cost more than the rest of a push (docs/benchmarks.md).
 */
import type { WebhookSettings } from '../../config/index.ts';
import type { Clock } from '../../core/clock.ts';
import type { AuditEvent, Events } from '../../core/events.ts';
import { fetchFailure } from '../../core/fetch-failure.ts';
import { clientUrlPost, type OutboundAnswer, type Poster, type UrlRule } from '../../core/outbound.ts';
import { SSF_SCOPE } from '../../core/scopes.ts';
import type { SsfDeliveryRecord, Store, UserRecord } from '../../store/types.ts';
import type { TokenIssuer } from '../../tokens/issue.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';
import { type DeliveryKind, type DeliveryObserver, httpWorkerSettings, OutboxWorker, type TurnBudget, workerDeps } from '../outbox/worker.ts';
import { setClaims } from './set.ts';
import { streamSecretOwner } from './streams.ts';

/** The most of a refusal's answer read for its `err` and `description` (RFC 8935 §2.3). */
const ERROR_ANSWER_LIMIT = 4096;
/** SETs kept signed for other streams sent the same claims. */
const SIGNED_SETS_KEPT = 256;
/** How long a signed SET is sent as it is to other streams sent the same claims (its `iat` then that of its first signing). */
export const SIGNED_SET_REUSE_MS = 60_000;

export interface SsfDispatcherDeps {
  readonly store: Pick<Store, 'ssf' | 'users' | 'clients' | 'outbox' | 'transaction'>;
  readonly clock: Clock;
  readonly secrets: SecretBox;
  readonly tokens: Pick<TokenIssuer, 'securityEventToken'>;
  readonly issuer: string;
  readonly settings: WebhookSettings;
  readonly events: Pick<Events, 'record' | 'publish'>;
  readonly log: { warn(details: Record<string, unknown>, message: string): void };
  /** TESSERA_ALLOW_PRIVATE_NETWORK_URLS: whether a receiver's push endpoint may be on a private network or loopback. */
  readonly allowPrivateNetworkUrls: boolean;
  /** What the metrics count (http/metrics.ts), as for webhooks. */
  readonly observer?: DeliveryObserver;
  /** How a SET is sent under the receivers' URL rule; core/outbound.ts's guarded POST by default. */
  readonly post?: (rule: UrlRule) => Poster;
  /** SETs claimed at once (TESSERA_OUTBOX_BATCH). */
  readonly batch?: number;
  readonly budget?: TurnBudget;
}

/** The answer's RFC 8935 §2.3 error, if it is one. */
function refusal(answer: OutboundAnswer): string | null {
  if (answer.status !== 400) return null;
  try {
    const body = JSON.parse(answer.body) as { err?: unknown; description?: unknown };
    if (typeof body.err !== 'string') return null;
    return `refused: ${body.err}${typeof body.description === 'string' ? `: ${body.description}` : ''}`.slice(0, 500);
  } catch {
    return null;
  }
}

/** Whether a SET about `event` on a stream in `format` says anything of the person's record (an address, changed claims). */
const needsPerson = (format: string, event: AuditEvent) => format === 'email' || event.type === 'user.updated';

/** Shared Signals push streams' SETs. */
export function ssfKind(deps: SsfDispatcherDeps): DeliveryKind<'ssf'> {
  const { store, clock, secrets, settings, tokens, issuer } = deps;
  // A receiver is someone the owner delegated to: public networks only, unless allowed, on every connection.
  const rule: UrlRule = { selfRegistered: false, delegated: true, allowPrivateNetworks: deps.allowPrivateNetworkUrls };
  const send = (deps.post ?? clientUrlPost)(rule);
  /** Signed SETs by their claims but `iat`, oldest first. */
  const signed = new Map<string, { readonly set: Promise<string>; readonly at: number }>();
  const sign = (claims: Record<string, unknown>): Promise<string> => {
    // Streams of one receiver drain at their own pace: a SET signed a few seconds earlier for
    // another of them is the same SET (its jti), and costs no second RS256 signature.
    const { iat: _, ...shared } = claims;
    const key = JSON.stringify(shared);
    const now = clock.now();
    const kept = signed.get(key);
    if (kept !== undefined && now - kept.at < SIGNED_SET_REUSE_MS) return kept.set;
    const set = tokens.securityEventToken(claims);
    const entry = { set, at: now };
    // A failed signature is not kept.
    set.catch(() => signed.get(key) === entry && signed.delete(key));
    signed.delete(key);
    signed.set(key, entry);
    if (signed.size > SIGNED_SETS_KEPT) signed.delete(signed.keys().next().value!);
    return set;
  };
  return {
    kind: 'ssf',
    key: (delivery) => ({ queue: delivery.streamId, item: delivery.eventId }),
    async open(streamId, batch) {
      const [stream, events] = await Promise.all([store.ssf.getStream(streamId), store.outbox.events(batch.map((d) => d.eventId))]);
      // Removed meanwhile: its deliveries went with it. Paused or disabled meanwhile: given back, to wait.
      if (stream === null || stream.status !== 'enabled' || stream.endpointUrl === null) return null;
      const endpointUrl = stream.endpointUrl;
      // A receiver the operator took ssf:manage from hears nothing more, as its token no longer manages the stream.
      const receiver = await store.clients.get(stream.clientId);
      const entitled = receiver?.scopes.includes(SSF_SCOPE) === true;
      const people = new Map<string, Promise<UserRecord | null>>();
      const person = (userId: string) => {
        let found = people.get(userId);
        if (found === undefined) people.set(userId, (found = store.users.get(userId)));
        return found;
      };
      const authorization = stream.authorizationHeader === null ? null : secrets.open(streamSecretOwner(stream.id), stream.authorizationHeader);
      const claimsOf = async (event: AuditEvent) => {
        const user = event.userId !== null && needsPerson(stream.format, event) ? await person(event.userId) : null;
        return setClaims(issuer, stream, event, user, clock.now());
      };
      // The next SET of the batch is signed while this one is posted: the stream's SETs still
      // go out one at a time, but each no longer waits for its signature in turn.
      const position = new Map(batch.map((delivery, index) => [delivery.eventId, index]));
      const signNext = (delivery: SsfDeliveryRecord) => {
        const next = batch[(position.get(delivery.eventId) ?? batch.length) + 1];
        const event = next === undefined || !entitled ? undefined : events.get(next.eventId);
        if (event !== undefined)
          void claimsOf(event)
            .then((claims) => (claims === null ? null : sign(claims)))
            .catch(() => {});
      };
      return async (delivery, signal) => {
        const event = events.get(delivery.eventId);
        if (event === undefined)
          return { kind: 'failed', status: null, error: 'the event is no longer in the audit trail (TESSERA_EVENT_RETENTION)', final: true };
        if (!entitled) return { kind: 'failed', status: null, error: 'the receiver no longer holds the scope ssf:manage', final: true };
        const claims = await claimsOf(event);
        if (claims === null) return { kind: 'failed', status: null, error: 'the event names no subject', final: true };
        let status: number | null = null;
        try {
          const set = await sign(claims);
          signNext(delivery);
          // RFC 8935 §2.1: the SET is the body, as application/secevent+jwt.
          const headers: Record<string, string> = { 'content-type': 'application/secevent+jwt', accept: 'application/json', 'user-agent': 'Tessera-SSF/1' };
          if (authorization !== null) headers['authorization'] = authorization;
          // No redirect is followed (a 3xx is not an acceptance).
          const answer = await send(endpointUrl, {
            headers,
            body: set,
            signal,
            timeoutMs: settings.timeoutSeconds * 1000,
            readAnswer: (answered) => answered === 400,
            answerLimitBytes: ERROR_ANSWER_LIMIT,
          });
          status = answer.status;
          const refused = refusal(answer);
          // §2.2: "the SET Recipient ... MUST respond with an HTTP Response Status Code of 202 (Accepted)"; any 2xx is taken as one.
          if (status >= 200 && status < 300) return { kind: 'delivered', status, eventAt: event.at };
          // Refused by the receiver: given up now.
          return refused === null ? { kind: 'failed', status, error: `answered ${status}` } : { kind: 'failed', status, error: refused, final: true };
        } catch (caught) {
          return { kind: 'failed', status, error: fetchFailure(caught) };
        }
      };
    },
    async deadLetter(delivery, error, tx) {
      const { streamId, eventId, attempts } = delivery;
      const stream = await tx.ssf.getStream(streamId);
      return {
        event: {
          type: 'ssf.dead_lettered',
          clientId: stream?.clientId ?? null,
          detail: { stream_id: streamId, event_id: eventId, attempts, last_error: error },
        },
        log: [{ stream: streamId, event_id: eventId, attempts, last_error: error }, 'SET delivery given up: a dead letter'],
      };
    },
  };
}

/** The outbox's worker over Shared Signals push streams. */
export class SsfDispatcher extends OutboxWorker<'ssf'> {
  constructor(deps: SsfDispatcherDeps) {
    super(ssfKind(deps), workerDeps(deps), httpWorkerSettings(deps.settings, deps.batch));
  }
}
