/**
 * The Security Event Token (RFC 8417) a stream is sent for one of the audit trail's events, as
 * SSF 1.0 §4 profiles it: `iss` this server, `jti` the event's id (the same on every try, so
 * that a receiver drops one it has handled: RFC 8417 §2.2), `iat` when it was signed, `aud` the
 * stream's audience, `txn` the audit trail's event, the subject at the top level as `sub_id`
 * (RFC 9493, in the format the stream asked for), and one event in `events`, with the fields
 * CAEP 1.0 §3 or RISC 1.0 §2 give it.
 */
import type { AuditEvent } from '../../core/events.ts';
import { SSF_EVENTS, ssfTypeOf } from '../../core/ssf.ts';
import type { SsfStreamRecord, UserRecord } from '../../store/types.ts';

/** RFC 9493 subject identifiers, and SSF 1.0 §3.3's complex subject. */
export type SubjectId =
  | { readonly format: 'iss_sub'; readonly iss: string; readonly sub: string }
  | { readonly format: 'email'; readonly email: string }
  | { readonly format: 'opaque'; readonly id: string }
  | { readonly format: 'complex'; readonly user: SubjectId };

/**
 * The person the event is about, as the stream asked (`format`): by email only when they have
 * one (else by `iss_sub`, which always names them); null when the event names nobody.
 */
export function subjectOf(issuer: string, stream: Pick<SsfStreamRecord, 'format'>, event: AuditEvent, user: UserRecord | null): SubjectId | null {
  if (event.userId === null) return null;
  const issSub: SubjectId = { format: 'iss_sub', iss: issuer, sub: event.userId };
  if (stream.format === 'email' && user?.email) return { format: 'email', email: user.email };
  if (stream.format === 'complex') return { format: 'complex', user: issSub };
  return issSub;
}

/** CAEP 1.0 §3 `initiating_entity`: who made it happen. */
function initiatingEntity(event: AuditEvent): 'admin' | 'user' | 'policy' | 'system' {
  const by = event.detail['by'];
  if (by === 'operator') return 'admin';
  if (by === 'user' || by === 'client' || by === undefined) return 'user';
  return 'system';
}

/** CAEP 1.0 §3.3 credential-change: which credential, and how it changed. */
const CREDENTIAL_CHANGES: Readonly<Record<string, { credential_type: string; change_type: 'create' | 'update' | 'delete' | 'revoke' }>> = {
  'password.changed': { credential_type: 'password', change_type: 'update' },
  'user.password_set': { credential_type: 'password', change_type: 'update' },
  'user.password_reset': { credential_type: 'password', change_type: 'update' },
  'passkey.added': { credential_type: 'fido2-platform', change_type: 'create' },
  'passkey.removed': { credential_type: 'fido2-platform', change_type: 'delete' },
  'totp.enabled': { credential_type: 'app', change_type: 'create' },
  'totp.disabled': { credential_type: 'app', change_type: 'delete' },
  // An operator removed every second factor: passkeys and one-time codes alike.
  'second_factor.reset': { credential_type: 'app', change_type: 'revoke' },
};

/** `givenName` -> `given_name`: the OIDC claim a profile field is (OIDC Core §5.1). */
const claimName = (field: string) => field.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);

/** The members of the event in `events`, by its type (null for an event no stream is sent). */
function eventBody(type: string, event: AuditEvent, user: UserRecord | null): Record<string, unknown> {
  const timestamp = Math.floor(event.at / 1000);
  switch (type) {
    case SSF_EVENTS.SESSION_REVOKED:
      // CAEP 1.0 §3.1: every browser session of the person that the logout ended.
      return { event_timestamp: timestamp, initiating_entity: initiatingEntity(event) };
    case SSF_EVENTS.CREDENTIAL_CHANGE:
      return { event_timestamp: timestamp, initiating_entity: initiatingEntity(event), ...CREDENTIAL_CHANGES[event.type] };
    case SSF_EVENTS.TOKEN_CLAIMS_CHANGE: {
      // CAEP 1.0 §3.2: the claims that changed, with their values now.
      const claims: Record<string, unknown> = {};
      const fields = typeof event.detail['fields'] === 'string' ? event.detail['fields'].split(' ').filter(Boolean) : [];
      for (const field of fields) {
        const value = user === null ? undefined : (user as unknown as Record<string, unknown>)[field];
        if (value !== undefined) claims[claimName(field)] = value;
      }
      return { event_timestamp: timestamp, initiating_entity: initiatingEntity(event), claims };
    }
    case SSF_EVENTS.CREDENTIAL_COMPROMISE:
      // RISC 1.0 §2.7: a passkey whose signature counter went back, the sign of a copied authenticator.
      return { credential_type: 'fido2-roaming', reason_admin: { en: 'A passkey was used whose signature counter went back: it may have been copied' } };
    case SSF_EVENTS.VERIFICATION:
      // SSF 1.0 §8.1.4.1: the state the receiver gave, if any.
      return typeof event.detail['state'] === 'string' ? { state: event.detail['state'] } : {};
    default:
      // RISC 1.0 account-disabled, account-enabled, account-purged: the subject says it all.
      return {};
  }
}

/**
 * The SET's claims for `event` on `stream` (signed by tokens/issue.ts securityEventToken), or
 * null when there is nothing to say (an event of no SSF type, or about nobody).
 */
export function setClaims(issuer: string, stream: SsfStreamRecord, event: AuditEvent, user: UserRecord | null, now: number): Record<string, unknown> | null {
  const type = event.type === 'ssf.verification' ? SSF_EVENTS.VERIFICATION : ssfTypeOf(event);
  if (type === null) return null;
  // SSF 1.0 §8.1.4.1: a verification event's subject is the stream.
  const subject = type === SSF_EVENTS.VERIFICATION ? { format: 'opaque', id: stream.id } : subjectOf(issuer, stream, event, user);
  if (subject === null) return null;
  return {
    jti: event.id,
    iat: Math.floor(now / 1000),
    aud: stream.audience.length === 1 ? stream.audience[0] : stream.audience,
    txn: event.id,
    sub_id: subject,
    events: { [type]: eventBody(type, event, user) },
  };
}
