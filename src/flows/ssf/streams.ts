/**
 * Shared Signals stream management (OpenID SSF 1.0 §8.1): a receiver, a client of the
 * client_credentials grant holding the scope `ssf:manage` with a token for `<issuer>/ssf`,
 * creates, reads, updates, replaces and deletes its event streams, reads and sets their
 * status, and asks for a verification event. A receiver sees its own streams only: another's
 * stream id is answered as one that does not exist (§8.1.1.2 404).
 */
import { randomUUID } from 'node:crypto';
import { SSF_POLL_PATH } from '../../core/endpoints.ts';
import { OAuthError } from '../../core/errors.ts';
import { requestRefusal } from '../../core/outbound.ts';
import { ssfAudience, SSF_SCOPE } from '../../core/scopes.ts';
import {
  DELIVERY_POLL,
  DELIVERY_PUSH,
  SSF_DELIVERY_METHODS,
  SSF_EVENTS_SUPPORTED,
  STREAM_STATUSES,
  SUBJECT_FORMATS,
  type SsfDeliveryMethod,
  type StreamStatus,
  type SubjectFormat,
} from '../../core/ssf.ts';
import type { SsfStreamRecord } from '../../store/types.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';
import { checkSenderConstraint, liveClientToken, looksLikeJwt, type Presentation } from '../lifecycle/access-token.ts';
import type { FlowDeps } from '../types.ts';

/** A receiver has at most this many streams: each is drained by a loop of its own in every instance. */
export const MAX_STREAMS_PER_RECEIVER = 10;
/** SSF 1.0 §8.1.1 `min_verification_interval`: a stream's verification events are at most one in this many seconds. */
export const MIN_VERIFICATION_INTERVAL = 5;
/** The longest `description` and `authorization_header` kept. */
const MAX_TEXT = 1000;

/** What a stream operation is given. */
export interface StreamDeps extends Pick<FlowDeps, 'store' | 'clock' | 'config' | 'tokens' | 'events'> {
  readonly secrets: SecretBox;
}

/** The SSF API's errors: an HTTP status and a code the answer's `error` carries. */
export class SsfError extends Error {
  readonly status: number;
  readonly code: string;
  constructor(status: number, code: string, description: string) {
    super(description);
    this.status = status;
    this.code = code;
  }
}

const badRequest = (description: string) => new SsfError(400, 'invalid_request', description);
const notFound = () => new SsfError(404, 'not_found', 'no such stream');

/** The owner a stream's push Authorization header is sealed for (tokens/secret-box.ts). */
export const streamSecretOwner = (streamId: string): string => `ssf stream ${streamId}`;

/** SSF 1.0 §8.1.1: who calls, by the access token presented. */
export async function ssfReceiver(deps: Pick<FlowDeps, 'store' | 'config' | 'tokens'>, presented: Presentation): Promise<string> {
  const claims = looksLikeJwt(presented.token) ? await deps.tokens.readAccessToken(presented.token) : null;
  // RFC 6750 §3.1 invalid_token; a token for another API is invalid here (RFC 8707 §2).
  const client = claims !== null && claims.aud === ssfAudience(deps.config.issuer) ? await liveClientToken(deps, claims) : null;
  if (claims === null || client === null)
    throw new OAuthError('invalid_token', 'a Shared Signals access token is required: a client_credentials token for the resource <issuer>/ssf');
  checkSenderConstraint(claims, presented);
  // A scope the client has since lost is not honoured, though its token still names it.
  if (!claims.scope.includes(SSF_SCOPE) || !client.scopes.includes(SSF_SCOPE)) throw new OAuthError('insufficient_scope', `this needs the scope ${SSF_SCOPE}`);
  return client.id;
}

/** SSF 1.0 §8.1.1 Stream Configuration, as a receiver is shown it. */
export function streamConfiguration(issuer: string, stream: SsfStreamRecord): Record<string, unknown> {
  return {
    stream_id: stream.id,
    iss: issuer,
    aud: stream.audience.length === 1 ? stream.audience[0] : stream.audience,
    events_supported: SSF_EVENTS_SUPPORTED,
    events_requested: stream.eventsRequested,
    events_delivered: stream.eventsDelivered,
    delivery: {
      method: stream.deliveryMethod,
      endpoint_url: stream.deliveryMethod === DELIVERY_POLL ? pollEndpoint(issuer, stream.id) : stream.endpointUrl,
    },
    min_verification_interval: MIN_VERIFICATION_INTERVAL,
    // Tessera's extension (Okta's and authentik's too): the subject format of its SETs (RFC 9493).
    format: stream.format,
    ...(stream.description === null ? {} : { description: stream.description }),
  };
}

/** RFC 8936: where a polling receiver asks for its stream's SETs. */
export function pollEndpoint(issuer: string, streamId: string): string {
  return `${issuer}${SSF_POLL_PATH}/${encodeURIComponent(streamId)}`;
}

/** What a receiver may set (§8.1.1: the receiver-supplied properties); the transmitter's own are ignored if sent back. */
interface Settable {
  readonly eventsRequested: readonly string[];
  readonly deliveryMethod: SsfDeliveryMethod;
  readonly endpointUrl: string | null;
  readonly authorizationHeader: string | null;
  readonly format: SubjectFormat;
  readonly description: string | null;
}

type Body = Readonly<Record<string, unknown>>;

function object(raw: unknown, name: string): Body {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw badRequest(`${name} must be a JSON object`);
  return raw as Body;
}

function eventsRequested(raw: unknown): string[] {
  if (!Array.isArray(raw) || !raw.every((value) => typeof value === 'string' && value.length <= 500) || raw.length > 50)
    throw badRequest('events_requested must be an array of event type URIs');
  return [...new Set(raw as string[])];
}

function delivery(deps: Pick<StreamDeps, 'config'>, raw: unknown): Pick<Settable, 'deliveryMethod' | 'endpointUrl' | 'authorizationHeader'> {
  const body = object(raw, 'delivery');
  const method = body['method'];
  if (typeof method !== 'string' || !(SSF_DELIVERY_METHODS as readonly string[]).includes(method)) {
    throw badRequest(`delivery.method must be one of ${SSF_DELIVERY_METHODS.join(', ')}`);
  }
  if (method === DELIVERY_POLL) {
    // RFC 8936: the endpoint is the transmitter's; a receiver's is ignored (§8.1.1: transmitter-supplied for poll).
    return { deliveryMethod: DELIVERY_POLL, endpointUrl: null, authorizationHeader: null };
  }
  const endpoint = body['endpoint_url'];
  if (typeof endpoint !== 'string' || endpoint === '') throw badRequest('delivery.endpoint_url is required for push delivery (urn:ietf:rfc:8935)');
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    throw badRequest('delivery.endpoint_url is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw badRequest('delivery.endpoint_url must be an http or https URL');
  if (url.username !== '' || url.password !== '')
    throw badRequest('delivery.endpoint_url must not hold a user name or password: use delivery.authorization_header');
  if (endpoint.length > 2000) throw badRequest('delivery.endpoint_url is too long');
  // A receiver is someone the owner delegated to: its URL is held to the public network
  // (core/outbound.ts), here as typed and again on each connection after it is resolved.
  const refusal = requestRefusal(url.hostname, { selfRegistered: false, delegated: true, allowPrivateNetworks: deps.config.allowPrivateNetworkUrls });
  if (refusal !== null) throw badRequest(`delivery.endpoint_url: the host ${refusal}`);
  const authorization = body['authorization_header'];
  if (
    authorization !== undefined &&
    authorization !== null &&
    (typeof authorization !== 'string' || authorization.length > MAX_TEXT || /[\r\n]/.test(authorization))
  ) {
    throw badRequest('delivery.authorization_header must be one line of text');
  }
  return {
    deliveryMethod: DELIVERY_PUSH,
    endpointUrl: url.href,
    authorizationHeader: typeof authorization === 'string' && authorization !== '' ? authorization : null,
  };
}

function format(raw: unknown): SubjectFormat {
  if (raw === undefined || raw === null) return 'iss_sub';
  if (typeof raw !== 'string' || !(SUBJECT_FORMATS as readonly string[]).includes(raw)) throw badRequest(`format must be one of ${SUBJECT_FORMATS.join(', ')}`);
  return raw as SubjectFormat;
}

function description(raw: unknown): string | null {
  if (raw === undefined || raw === null || raw === '') return null;
  if (typeof raw !== 'string' || raw.length > MAX_TEXT) throw badRequest(`description must be text of at most ${MAX_TEXT} characters`);
  return raw;
}

/** A whole configuration, as created or replaced (§8.1.1.1, §8.1.1.4). */
function settable(deps: Pick<StreamDeps, 'config'>, body: Body): Settable {
  if (body['delivery'] === undefined) throw badRequest('delivery is required');
  return {
    eventsRequested: body['events_requested'] === undefined ? [] : eventsRequested(body['events_requested']),
    ...delivery(deps, body['delivery']),
    format: format(body['format']),
    description: description(body['description']),
  };
}

function streamId(raw: unknown): string {
  if (typeof raw !== 'string' || raw === '' || raw.length > 100) throw badRequest('stream_id is required');
  return raw;
}

/** The receiver's stream, or 404 (§8.1.1.2): another receiver's is not told apart from none. */
async function ownStream(deps: Pick<StreamDeps, 'store'>, receiver: string, id: unknown): Promise<SsfStreamRecord> {
  const stream = await deps.store.ssf.getStream(streamId(id));
  if (stream === null || stream.clientId !== receiver) throw notFound();
  return stream;
}

/** The stream with `settings` written over it, sealed. `events_delivered`: what was asked for that Tessera sends. */
function withSettings(deps: StreamDeps, stream: Omit<SsfStreamRecord, keyof Settable | 'eventsDelivered'>, settings: Settable, now: number): SsfStreamRecord {
  return {
    ...stream,
    eventsRequested: settings.eventsRequested,
    eventsDelivered: settings.eventsRequested.filter((uri) => SSF_EVENTS_SUPPORTED.includes(uri)),
    deliveryMethod: settings.deliveryMethod,
    endpointUrl: settings.endpointUrl,
    authorizationHeader: settings.authorizationHeader === null ? null : deps.secrets.seal(streamSecretOwner(stream.id), settings.authorizationHeader),
    format: settings.format,
    description: settings.description,
    updatedAt: now,
  };
}

/** §8.1.1.1 Creating a Stream. */
export async function createStream(deps: StreamDeps, receiver: string, raw: unknown): Promise<SsfStreamRecord> {
  const settings = settable(deps, object(raw, 'the body'));
  if ((await deps.store.ssf.countStreams(receiver)) >= MAX_STREAMS_PER_RECEIVER) {
    throw new SsfError(409, 'conflict', `a receiver has at most ${MAX_STREAMS_PER_RECEIVER} streams: delete one first`);
  }
  const now = deps.clock.now();
  const id = randomUUID();
  // §8.1.1: `aud` is the transmitter's to choose: the receiver, by its client id.
  const stream = withSettings(
    deps,
    {
      id,
      clientId: receiver,
      audience: [receiver],
      // §7.1 default_subjects: "the default behavior of newly created streams".
      defaultSubjects: deps.config.ssf.defaultSubjects,
      status: 'enabled',
      reason: null,
      createdAt: now,
      updatedAt: now,
    },
    settings,
    now,
  );
  await deps.store.ssf.createStream(stream);
  await deps.events.emit({
    type: 'ssf.stream_created',
    clientId: receiver,
    detail: { stream_id: id, delivery: stream.deliveryMethod, events: stream.eventsDelivered.length },
  });
  return stream;
}

/** §8.1.1.2 Reading a Stream's configuration: one, or (no `stream_id`) all of the receiver's. */
export async function readStreams(deps: StreamDeps, receiver: string, id: unknown): Promise<SsfStreamRecord | SsfStreamRecord[]> {
  if (id === undefined) return deps.store.ssf.listStreams(receiver);
  return ownStream(deps, receiver, id);
}

async function save(deps: StreamDeps, stream: SsfStreamRecord, detail: Record<string, string>): Promise<SsfStreamRecord> {
  // §8.1.2 disabled: "the Transmitter MUST NOT transmit events over the stream and will not
  // hold any events for later transmission": what waits goes, with the change that disables it.
  const saved = await deps.store.transaction(async (tx) => {
    if (!(await tx.ssf.saveStream(stream))) return false;
    if (stream.status === 'disabled') await tx.ssf.dropPending(stream.id);
    return true;
  });
  if (!saved) throw notFound();
  await deps.events.emit({ type: 'ssf.stream_updated', clientId: stream.clientId, detail: { stream_id: stream.id, status: stream.status, ...detail } });
  return stream;
}

/** §8.1.1.3 Updating (PATCH: the properties given) and §8.1.1.4 Replacing (PUT: the whole configuration). */
export async function changeStream(deps: StreamDeps, receiver: string, raw: unknown, replace: boolean): Promise<SsfStreamRecord> {
  const body = object(raw, 'the body');
  const stream = await ownStream(deps, receiver, body['stream_id']);
  const current: Settable = {
    eventsRequested: stream.eventsRequested,
    deliveryMethod: stream.deliveryMethod,
    endpointUrl: stream.endpointUrl,
    authorizationHeader: stream.authorizationHeader === null ? null : deps.secrets.open(streamSecretOwner(stream.id), stream.authorizationHeader),
    format: stream.format,
    description: stream.description,
  };
  const settings: Settable = replace
    ? settable(deps, body)
    : {
        eventsRequested: body['events_requested'] === undefined ? current.eventsRequested : eventsRequested(body['events_requested']),
        ...(body['delivery'] === undefined
          ? { deliveryMethod: current.deliveryMethod, endpointUrl: current.endpointUrl, authorizationHeader: current.authorizationHeader }
          : delivery(deps, body['delivery'])),
        format: body['format'] === undefined ? current.format : format(body['format']),
        description: body['description'] === undefined ? current.description : description(body['description']),
      };
  return save(deps, withSettings(deps, stream, settings, deps.clock.now()), { change: replace ? 'replaced' : 'updated' });
}

/** §8.1.1.5 Deleting a Stream: its deliveries go with it. */
export async function deleteStream(deps: StreamDeps, receiver: string, id: unknown): Promise<void> {
  const stream = await ownStream(deps, receiver, id);
  if (!(await deps.store.ssf.removeStream(stream.id))) throw notFound();
  await deps.events.emit({ type: 'ssf.stream_removed', clientId: receiver, detail: { stream_id: stream.id } });
}

/** §8.1.2.1 Reading a Stream's Status. */
export async function streamStatus(deps: StreamDeps, receiver: string, id: unknown): Promise<Record<string, unknown>> {
  const stream = await ownStream(deps, receiver, id);
  return { stream_id: stream.id, status: stream.status, ...(stream.reason === null ? {} : { reason: stream.reason }) };
}

/**
 * §8.1.2.2 Updating a Stream's Status: `enabled` sends, `paused` keeps what comes and sends it
 * once enabled again, `disabled` neither sends nor keeps.
 */
export async function setStreamStatus(deps: StreamDeps, receiver: string, raw: unknown): Promise<Record<string, unknown>> {
  const body = object(raw, 'the body');
  const stream = await ownStream(deps, receiver, body['stream_id']);
  const status = body['status'];
  if (typeof status !== 'string' || !(STREAM_STATUSES as readonly string[]).includes(status))
    throw badRequest(`status must be one of ${STREAM_STATUSES.join(', ')}`);
  const reason = body['reason'] === undefined || body['reason'] === null ? null : description(body['reason']);
  await save(deps, { ...stream, status: status as StreamStatus, reason, updatedAt: deps.clock.now() }, { change: 'status' });
  return { stream_id: stream.id, status, ...(reason === null ? {} : { reason }) };
}

/**
 * §8.1.4.2 Triggering a Verification Event: recorded as `ssf.verification`, which the outbox
 * owes this stream alone; it is then sent as any other SET (pushed, or returned
 * to the next poll). `state` is echoed in the event.
 */
export async function verifyStream(deps: StreamDeps, receiver: string, raw: unknown): Promise<void> {
  const body = object(raw, 'the body');
  const stream = await ownStream(deps, receiver, body['stream_id']);
  const state = body['state'];
  if (state !== undefined && (typeof state !== 'string' || state.length > MAX_TEXT)) throw badRequest(`state must be text of at most ${MAX_TEXT} characters`);
  // §8.1.4.2: "the Transmitter MAY respond with a 429" to one sooner than min_verification_interval: each is an event stored.
  if ((await deps.store.rateLimits.hit(`ssf-verify:${stream.id}`, MIN_VERIFICATION_INTERVAL * 1000, deps.clock.now())).hits > 1) {
    throw new SsfError(429, 'too_many_requests', `at most one verification event every ${MIN_VERIFICATION_INTERVAL} seconds`);
  }
  await deps.events.emit({ type: 'ssf.verification', clientId: receiver, detail: { stream_id: stream.id, ...(state === undefined ? {} : { state }) } });
}

/**
 * The accounts a subject names (RFC 9493): `iss_sub` of this issuer (the OIDC `sub`), `email`
 * (every account with the address), or SSF 1.0 §3.3's `complex` with a `user` of either.
 * Another format is refused (400); a subject naming nobody is no accounts, and said no
 * differently from one that names someone (§9.1 Subject Probing).
 */
async function subjectAccounts(deps: Pick<StreamDeps, 'store' | 'config'>, raw: unknown, depth = 0): Promise<string[]> {
  const subject = object(raw, 'subject');
  const text = (name: string) => {
    const value = subject[name];
    if (typeof value !== 'string' || value === '' || value.length > 500) throw badRequest(`subject.${name} is required`);
    return value;
  };
  switch (subject['format']) {
    case 'iss_sub': {
      const [iss, sub] = [text('iss'), text('sub')];
      if (iss !== deps.config.issuer) return [];
      const user = await deps.store.users.get(sub);
      return user === null ? [] : [user.id];
    }
    case 'email':
      return (await deps.store.users.findByEmail(text('email'))).map((user) => user.id);
    case 'complex':
      if (depth === 0 && subject['user'] !== undefined) return subjectAccounts(deps, subject['user'], 1);
      throw badRequest('subject: a complex subject names its person in `user`');
    default:
      throw badRequest('subject.format must be one of iss_sub, email, complex (with a user)');
  }
}

/**
 * §8.1.3.2 Adding a Subject to a Stream, and §8.1.3.3 Removing one: the stream of a receiver
 * in `NONE` mode hears of the people added (and not removed since); one in `ALL` mode of
 * everyone but those removed (and not added since). The last word about a person stands, for
 * the events after it: what was queued before is sent as it was.
 */
export async function changeSubject(deps: StreamDeps, receiver: string, raw: unknown, state: 'added' | 'removed'): Promise<void> {
  const body = object(raw, 'the body');
  const stream = await ownStream(deps, receiver, body['stream_id']);
  if (body['subject'] === undefined) throw badRequest('subject is required');
  const verified = body['verified'];
  if (state === 'added' && verified !== undefined && typeof verified !== 'boolean') throw badRequest('verified must be true or false');
  const accounts = await subjectAccounts(deps, body['subject']);
  const now = deps.clock.now();
  // §8.1.3.2: "If omitted, Event Transmitters SHOULD assume that the subject has been verified."
  for (const userId of accounts) await deps.store.ssf.setSubject({ streamId: stream.id, userId, state, verified: verified !== false, updatedAt: now });
  if (accounts.length > 0)
    await deps.events.emit({
      type: 'ssf.stream_updated',
      clientId: receiver,
      detail: { stream_id: stream.id, status: stream.status, change: state === 'added' ? 'subject_added' : 'subject_removed', subjects: accounts.length },
    });
}
