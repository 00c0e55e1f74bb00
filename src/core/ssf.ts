/**
 * The Shared Signals Framework (OpenID SSF 1.0) as Tessera speaks it: the event types it
 * transmits, CAEP 1.0 and RISC 1.0 ones, each the public face of some of the audit trail's own
 * types (core/events.ts), as the webhook types are (core/webhook-events.ts).
 *
 * The outbox trigger (store/migrations.ts, versions 40 and 45) matches the same map in SQL, so
 * that what an event owes the streams is written in its transaction; the store contract suite
 * checks that the two agree type by type.
 */
import type { AuditEvent, EventType } from './events.ts';

const CAEP = 'https://schemas.openid.net/secevent/caep/event-type';
const RISC = 'https://schemas.openid.net/secevent/risc/event-type';
const SSF = 'https://schemas.openid.net/secevent/ssf/event-type';

export const SSF_EVENTS = {
  SESSION_REVOKED: `${CAEP}/session-revoked`,
  CREDENTIAL_CHANGE: `${CAEP}/credential-change`,
  TOKEN_CLAIMS_CHANGE: `${CAEP}/token-claims-change`,
  ACCOUNT_DISABLED: `${RISC}/account-disabled`,
  ACCOUNT_ENABLED: `${RISC}/account-enabled`,
  ACCOUNT_PURGED: `${RISC}/account-purged`,
  CREDENTIAL_COMPROMISE: `${RISC}/credential-compromise`,
  /** SSF 1.0 §8.1.4: the answer to a receiver's verification request. */
  VERIFICATION: `${SSF}/verification`,
  /** SSF 1.0 §8.1.5: a stream's status changed. */
  STREAM_UPDATED: `${SSF}/stream-updated`,
} as const;

/** The event types a receiver may ask for (`events_supported`): every one but the framework's own, which a stream always gets. */
export const SSF_EVENTS_SUPPORTED: readonly string[] = [
  SSF_EVENTS.SESSION_REVOKED,
  SSF_EVENTS.CREDENTIAL_CHANGE,
  SSF_EVENTS.TOKEN_CLAIMS_CHANGE,
  SSF_EVENTS.ACCOUNT_DISABLED,
  SSF_EVENTS.ACCOUNT_ENABLED,
  SSF_EVENTS.ACCOUNT_PURGED,
  SSF_EVENTS.CREDENTIAL_COMPROMISE,
];

/**
 * The audit trail's types each SSF event announces. A credential change is any change of what
 * a person signs in with: a password changed, set or reset, a passkey or one-time codes added
 * or removed, the second factors reset by an operator. A credential compromise is a passkey
 * refused as a copy (its signature counter went back: WebAuthn §6.1.1), which the trigger
 * tells apart by `detail.reason`.
 */
export const SSF_SOURCES: Readonly<Record<string, readonly EventType[]>> = {
  [SSF_EVENTS.SESSION_REVOKED]: ['logout'],
  [SSF_EVENTS.CREDENTIAL_CHANGE]: [
    'password.changed',
    'user.password_set',
    'user.password_reset',
    'second_factor.reset',
    'passkey.added',
    'passkey.removed',
    'totp.enabled',
    'totp.disabled',
  ],
  [SSF_EVENTS.TOKEN_CLAIMS_CHANGE]: ['user.updated'],
  [SSF_EVENTS.ACCOUNT_DISABLED]: ['user.disabled'],
  [SSF_EVENTS.ACCOUNT_ENABLED]: ['user.enabled'],
  [SSF_EVENTS.ACCOUNT_PURGED]: ['user.removed'],
  [SSF_EVENTS.CREDENTIAL_COMPROMISE]: ['passkey.refused'],
  [SSF_EVENTS.VERIFICATION]: ['ssf.verification'],
};

/** The SSF event each source type is sent as, the first that names it (asked of every event a request publishes). */
const SSF_TYPE_OF = new Map<EventType, string>(
  Object.entries(SSF_SOURCES)
    .flatMap(([uri, types]) => types.map((type) => [type, uri] as const))
    .reverse(),
);

/** The SSF event an audit event is sent as, or null when no stream hears of it. */
export function ssfTypeOf(event: Pick<AuditEvent, 'type' | 'detail'>): string | null {
  if (event.type === 'passkey.refused') return event.detail['reason'] === 'cloned' ? SSF_EVENTS.CREDENTIAL_COMPROMISE : null;
  return SSF_TYPE_OF.get(event.type) ?? null;
}

/** Every audit type some SSF event is made of: what wakes the dispatcher, and the trigger's WHEN. */
export const SSF_SOURCE_TYPES: readonly EventType[] = [...new Set(Object.values(SSF_SOURCES).flat())];

/** RFC 8935 (push) and RFC 8936 (poll), by the URNs SSF 1.0 §7.1 names them with. */
export const DELIVERY_PUSH = 'urn:ietf:rfc:8935';
export const DELIVERY_POLL = 'urn:ietf:rfc:8936';
export const SSF_DELIVERY_METHODS = [DELIVERY_PUSH, DELIVERY_POLL] as const;
export type SsfDeliveryMethod = (typeof SSF_DELIVERY_METHODS)[number];

/** SSF 1.0 §8.1.2: what a stream does with events. */
export const STREAM_STATUSES = ['enabled', 'paused', 'disabled'] as const;
export type StreamStatus = (typeof STREAM_STATUSES)[number];

/**
 * The subject formats a receiver may ask a stream's SETs to name people in (RFC 9493 §3):
 * `iss_sub` (this server and the OIDC `sub`), `email` (when the person has one; else
 * `iss_sub`), or `complex` (SSF 1.0 §3.3: `{format: complex, user: {iss_sub}}`).
 */
export const SUBJECT_FORMATS = ['iss_sub', 'email', 'complex'] as const;
export type SubjectFormat = (typeof SUBJECT_FORMATS)[number];

/**
 * SSF 1.0 §7.1 `default_subjects`: a stream hears of every person (`ALL`, but those its
 * receiver removed) or only of those its receiver added (`NONE`), §8.1.3.
 */
export const DEFAULT_SUBJECTS = ['ALL', 'NONE'] as const;
export type DefaultSubjects = (typeof DEFAULT_SUBJECTS)[number];
