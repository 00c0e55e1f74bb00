/**
 * The audit trail's one seam: a flow reports what happened (`events.emit({ type:
 * 'device.approved', userId, clientId, grantId })`) and the listeners decide what becomes of
 * it: one JSON log line, a row in the `events` table, the metrics. The models are
 * node-oidc-provider's `provider.on('grant.success')` and Keycloak's event listeners.
 *
 * An event names who and what it concerns (user, client, grant, the request's address and
 * user agent) and never a secret: no password, code, token or session id, nor their hashes.
 */

import { randomUUIDv7 } from 'node:crypto';
import type { Clock } from './clock.ts';

/** Every event there is: the list is closed, so `tessera events --type` can refuse a typo. */
export const EVENT_TYPES = [
  'signin.succeeded',
  'signin.failed',
  /** Refused without checking the password: too many failures for the username or address. */
  'signin.locked',
  'logout',
  'password.changed',
  /** A passkey registered at /account (WebAuthn §7.1). */
  'passkey.added',
  /** A passkey removed by its owner at /account. */
  'passkey.removed',
  /**
   * A passkey sign-in refused; `detail.reason` says why. `cloned`: the signature counter did
   * not increase (WebAuthn §6.1.1), the sign of a copied authenticator.
   */
  'passkey.refused',
  /** One-time codes (TOTP) turned on at /account: the app's first code was right. */
  'totp.enabled',
  /** One-time codes turned off at /account; the recovery codes went with them. */
  'totp.disabled',
  /** A code refused after the password or while setting up an app; `detail.reason`: `wrong_code`, `replayed`, `locked`. */
  'second_factor.failed',
  /** A recovery code used in place of a one-time code (each works once). */
  'second_factor.recovery_code_used',
  /**
   * A person's passkeys, one-time codes and recovery codes removed: by an operator (`detail.by`
   * `operator`), or with their upstream identities (`detail.identities_removed`) when a reset link
   * mailed to the account's unverified address proved it (`password_reset`, flows/users.ts).
   */
  'second_factor.reset',
  'consent.given',
  'consent.denied',
  'device.started',
  'device.approved',
  'device.denied',
  /** The device polled after its request expired without a decision. */
  'device.expired',
  /** The device received its tokens (the approval was used up). */
  'device.consumed',
  /** A typed user code refused without looking: too many wrong codes from the browser or address (RFC 8628 §5.1). */
  'device.code_entry_locked',
  'code.issued',
  'code.redeemed',
  /** A used authorization code was presented again (RFC 6749 §4.1.2): its grant is revoked. */
  'code.replayed',
  'refresh.rotated',
  /** A rotated refresh token was presented again (RFC 9700 §4.14.2): its grant is revoked. */
  'refresh.reuse_detected',
  /** An access token revoked through RFC 7009. */
  'token.revoked',
  /** A grant revoked, with `detail.by`: who or what revoked it. */
  'grant.revoked',
  'user.created',
  'user.updated',
  'user.disabled',
  'user.enabled',
  /** A person given an operator role, or none (`detail.role`, null for none). */
  'user.role_changed',
  'user.removed',
  'user.password_set',
  'user.reset_link_created',
  /** An operator invited someone (`detail.role`, `detail.expires_at`); the account is made, with its `user.created` (`detail.by` `invitation`), when the link is used. */
  'user.invited',
  /**
   * "Forgot password?" asked for a link for an e-mail address: `detail.accounts`, how many
   * accounts it reached (0 when none has that address; the page says the same either way).
   */
  'recovery.requested',
  /**
   * Someone asked for an account on the sign-up page (`detail.existing`: the address has one
   * already, which is mailed a notice instead; the page says the same either way).
   */
  'signup.requested',
  /**
   * A person followed the link mailed to their address: the account is made, or its address
   * verified (`detail.by` `sign_up`); or used a reset link mailed to it (`password_reset`).
   */
  'user.email_verified',
  /** A person asked, on their account page, for a new e-mail address: a link is mailed to it. */
  'user.email_change_requested',
  /** A person followed the link mailed to their new address: it is their address now, verified; the old one is told. */
  'user.email_changed',
  /** A message given up after TESSERA_MAIL_RETRY_WINDOW (`detail.mail`, `detail.kind`, `detail.last_error`): a dead letter. */
  'mail.dead_lettered',
  'user.password_reset',
  'client.created',
  'client.updated',
  'client.secret_rotated',
  'client.removed',
  /** An initial access token for dynamic registration made (RFC 7591 §3); never the token. */
  'registration_token.created',
  'registration_token.removed',
  /** A SCIM token made for a provisioning system (`detail.name`), or withdrawn; never the token. */
  'scim_token.created',
  'scim_token.removed',
  /** Refused at `/scim/v2`: a wrong token (`detail.reason` `wrong_token`), or, once a window, an address past the limit (`limit`). */
  'scim.refused',
  /** A group made, changed (its name or members: `detail.fields`) or removed, over SCIM. */
  'group.created',
  'group.updated',
  'group.removed',
  /** A client registered itself (RFC 7591) or was registered with an initial access token; `detail.policy`. */
  'client.registered',
  /**
   * A new self-registered app refused by a registration limit: `detail.kind`
   * `dynamic` (RFC 7591 open registration) or `metadata_document`, `detail.limit` `address`,
   * `network` or `server`. One event per limit and window, as lockouts.
   */
  'client.registration_limited',
  /** An operator ended every token of a client: its own, and (`detail.grants_revoked`) the grants people approved for it. */
  'client.tokens_revoked',
  /** A client's own access token issued (RFC 6749 §4.4, client_credentials); `detail`: its API and scope. */
  'client.token_issued',
  /**
   * A person's token exchanged for one for another API (RFC 8693) by the event's client, acting
   * for them; `detail`: the subject token's client (`subject_client`), the API, the scope and
   * the actors (`act`, the current one first).
   */
  'token.exchanged',
  /** A token exchange refused (`detail.error`, `detail.reason`): nothing issued. */
  'token.exchange_refused',
  /** An identity provider whose ID-JAGs are redeemed here trusted, or no longer (`detail.issuer`). */
  'trusted_issuer.added',
  'trusted_issuer.removed',
  'resource.created',
  'resource.updated',
  'resource.removed',
  /** An upstream identity provider added, changed or removed by an operator (`detail.provider`). */
  'provider.created',
  'provider.updated',
  'provider.removed',
  /** An upstream identity linked to a user: at their first sign-in through it (`detail.how`: `created` or `email`). */
  'identity.linked',
  'keys.rotated',
  /** An operator lifted lockouts (guessing limits' counters); `detail.counters`: how many. */
  'lockout.cleared',
  /** A webhook added by an operator (`detail.url`, `detail.events`); never its signing secret. */
  'webhook.created',
  'webhook.removed',
  /** A webhook's signing secret replaced; `detail.previous_secret_expires_at`: until when the old one still signs too. */
  'webhook.secret_rotated',
  /** Dead letters of a webhook sent again; `detail.deliveries`: how many. */
  'webhook.replayed',
  /** Dead letters of Shared Signals pushes or mail sent again (`detail.kind`: ssf or mail; `detail.deliveries`: how many). */
  'outbox.replayed',
  /** A delivery given up after TESSERA_WEBHOOK_RETRY_WINDOW (`detail.webhook`, `detail.event_id`, `detail.last_error`): a dead letter. */
  'webhook.dead_lettered',
  /** A Shared Signals receiver made a stream (`detail.stream_id`, `detail.delivery`); `clientId` is the receiver. */
  'ssf.stream_created',
  /** A stream's configuration or status changed (`detail.status`). */
  'ssf.stream_updated',
  'ssf.stream_removed',
  /** A receiver asked for a verification event (SSF 1.0 §8.1.4): the trigger queues it for its stream alone (`detail.stream_id`, `detail.state`). */
  'ssf.verification',
  /** A SET given up after TESSERA_WEBHOOK_RETRY_WINDOW, or refused by the receiver (RFC 8935 §2.3): `detail.stream_id`, `detail.event_id`, `detail.last_error`. */
  'ssf.dead_lettered',
  /** A SAML service provider added, changed or removed by an operator (`detail.saml_sp`, `detail.entity_id`). */
  'saml_sp.created',
  'saml_sp.updated',
  'saml_sp.removed',
  /** A SAML assertion issued to a service provider for the event's user (`detail.entity_id`, `detail.acs_url`, `detail.in_response_to`). */
  'saml.assertion_issued',
  /** A SAML request refused (`detail.reason`, `detail.entity_id` when known): nothing issued. */
  'saml.request_refused',
  /** An SP's LogoutRequest answered (`detail.outcome`: `end`, the session ended; `nothing`; `other-person`, refused). */
  'saml.logout',
  /** A LogoutRequest sent to an SP of an ending session (`detail.entity_id`, `detail.binding`), single logout from this IdP. */
  'saml.logout_requested',
  /** An SP's LogoutResponse to it (`detail.entity_id`, `detail.success`: whether it answered Success). */
  'saml.logout_answered',
  /** An organization added, changed or removed by an operator (`detail.organization`, `detail.name`). */
  'organization.created',
  'organization.updated',
  'organization.removed',
  /** A person made a member of an organization, or given another role there (`detail.organization`, `detail.role`), or no longer a member. */
  'organization.member_set',
  'organization.member_removed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(value: string): value is EventType {
  return (EVENT_TYPES as readonly string[]).includes(value);
}

/** Who or what revoked a grant (`grant.revoked`'s `detail.by`). */
export type RevokedBy = 'user' | 'client' | 'operator' | 'reuse_detection' | 'code_replay';

/** A value in an event's details: never a secret. */
export type DetailValue = string | number | boolean | null;

/** One event as it is logged and stored. */
export interface AuditEvent {
  readonly id: string;
  readonly type: EventType;
  /** Milliseconds since the epoch. */
  readonly at: number;
  /** The user it concerns (the OIDC `sub`), when one is known. */
  readonly userId: string | null;
  /** The user's username, where the flow has it (a failed sign-in names what was typed). */
  readonly username: string | null;
  readonly clientId: string | null;
  readonly grantId: string | null;
  /** The address of the request that caused it; null for the command line. */
  readonly ip: string | null;
  readonly userAgent: string | null;
  /** Facts particular to the type: why a sign-in failed, who revoked a grant, which grant issued tokens. */
  readonly detail: Readonly<Record<string, DetailValue>>;
}

/** What a flow says; the seam adds the id, the time and the request's origin. */
export interface EventInput {
  readonly type: EventType;
  readonly userId?: string | null;
  readonly username?: string | null;
  readonly clientId?: string | null;
  readonly grantId?: string | null;
  /** Given by a flow that knows better than the request (the device's own address). */
  readonly ip?: string | null;
  readonly userAgent?: string | null;
  readonly detail?: Readonly<Record<string, DetailValue>>;
}

/** Where events are stored: the store's events table, or a transaction's view of it. */
export interface EventWriter {
  add(event: AuditEvent): Promise<void>;
}

/** Told of every event once it is stored (and committed): the log line, the metrics. */
export type EventListener = (event: AuditEvent) => void;

/** The request an event came from. */
export interface RequestOrigin {
  readonly ip: string | null;
  readonly userAgent: string | null;
}

/** User agents are kept to this length: they are the client's to make long. */
const MAX_USER_AGENT_LENGTH = 512;

const NO_ORIGIN: RequestOrigin = { ip: null, userAgent: null };

/** One key's refusals in one window, counted in memory. */
interface RefusalWindow {
  readonly input: EventInput;
  readonly firstAt: number;
  readonly endsAt: number;
  count: number;
}

/**
 * Refused attempts (a locked sign-in, a user-code guess over a limit), counted per key and
 * window in this process's memory, so that a refusal writes nothing: a
 * flood from a locked address used to write an event row and a log line per request. The
 * first refusal of a key in its window is told to the listeners (one log line, the metric);
 * when the window has ended, one row is stored for it with the count. The map forgets
 * nothing but what it has stored, and holds at most `maxKeys` windows: past that, it stores
 * what it has early rather than grow.
 */
export class RefusalTally {
  readonly #windows = new Map<string, RefusalWindow>();
  readonly #maxKeys: number;
  /** No window ends before this: a refusal need not look for ended ones until then. */
  #nextEnd = Infinity;

  constructor(maxKeys = 10_000) {
    this.#maxKeys = maxKeys;
  }

  /** Counts a refusal; true when it is the first of `key` in its window. */
  note(key: string, input: EventInput, now: number, endsAt: number): boolean {
    const open = this.#windows.get(key);
    if (open && open.endsAt > now) {
      open.count += 1;
      return false;
    }
    this.#windows.set(key, { input, firstAt: now, endsAt, count: 1 });
    this.#nextEnd = Math.min(this.#nextEnd, endsAt);
    return true;
  }

  /** The windows to store now: those that have ended (all of them when `everything`, or when the map is full). */
  take(now: number, everything = false): RefusalWindow[] {
    const all = everything || this.#windows.size >= this.#maxKeys;
    if (!all && now < this.#nextEnd) return [];
    const taken: RefusalWindow[] = [];
    this.#nextEnd = Infinity;
    for (const [key, window] of this.#windows) {
      if (all || window.endsAt <= now) {
        taken.push(window);
        this.#windows.delete(key);
      } else this.#nextEnd = Math.min(this.#nextEnd, window.endsAt);
    }
    return taken;
  }
}

/**
 * The seam the flows are given. `emit` stores an event and tells the listeners; a change
 * made in a transaction `record`s its event through the transaction's writer, so that the
 * two commit or roll back together, and `publish`es it once the transaction has committed.
 */
export class Events {
  readonly #clock: Clock;
  readonly #writer: EventWriter;
  readonly #listeners: readonly EventListener[];
  readonly #origin: RequestOrigin;
  readonly #detail: Readonly<Record<string, DetailValue>>;
  readonly #refusals: RefusalTally;

  constructor(
    clock: Clock,
    writer: EventWriter,
    listeners: readonly EventListener[],
    origin: RequestOrigin = NO_ORIGIN,
    detail: Readonly<Record<string, DetailValue>> = {},
    refusals = new RefusalTally(),
  ) {
    this.#clock = clock;
    this.#writer = writer;
    this.#listeners = listeners;
    this.#origin = origin;
    this.#detail = detail;
    this.#refusals = refusals;
  }

  /** The same seam, filling in the address and user agent of the request being served. */
  forRequest(origin: RequestOrigin): Events {
    return new Events(this.#clock, this.#writer, this.#listeners, origin, this.#detail, this.#refusals);
  }

  /** The same seam, adding `detail` to every event: who acted (the admin API's `admin_client`). */
  withDetail(detail: Readonly<Record<string, DetailValue>>): Events {
    return new Events(this.#clock, this.#writer, this.#listeners, this.#origin, { ...this.#detail, ...detail }, this.#refusals);
  }

  /**
   * A request refused by a guessing limit `key` until `endsAt`: stores nothing now. The
   * first refusal of the key in its window is told to the listeners (with `detail.until`);
   * the window's one row, with `detail.refused` (how many) and `detail.first` (when the
   * first came), is stored once the window has ended (`flushRefusals`).
   */
  async refused(input: EventInput, key: string, endsAt: number): Promise<void> {
    const now = this.#clock.now();
    const origin = {
      ip: input.ip !== undefined ? input.ip : this.#origin.ip,
      userAgent: input.userAgent !== undefined ? input.userAgent : this.#origin.userAgent,
    };
    const withOrigin = { ...input, ...origin, detail: { ...input.detail, until: new Date(endsAt).toISOString() } };
    if (this.#refusals.note(key, withOrigin, now, endsAt)) this.publish(this.make(withOrigin));
    await this.flushRefusals();
  }

  /**
   * Stores one row for each refusal window that has ended (every window, when `everything`:
   * at shutdown). Already told to the listeners at its first refusal, it is not told again.
   */
  async flushRefusals(everything = false): Promise<void> {
    for (const window of this.#refusals.take(this.#clock.now(), everything)) {
      await this.#writer.add(
        this.make({ ...window.input, detail: { ...window.input.detail, refused: window.count, first: new Date(window.firstAt).toISOString() } }),
      );
    }
  }

  /** The event as it will be stored. */
  make(input: EventInput): AuditEvent {
    const userAgent = input.userAgent !== undefined ? input.userAgent : this.#origin.userAgent;
    return {
      // Time-ordered (RFC 9562 §5.7): each row lands at the end of the id's index, where a
      // random UUID would dirty a random page of it at every event.
      id: randomUUIDv7(),
      type: input.type,
      at: this.#clock.now(),
      userId: input.userId ?? null,
      username: input.username ?? null,
      clientId: input.clientId ?? null,
      grantId: input.grantId ?? null,
      ip: input.ip !== undefined ? input.ip : this.#origin.ip,
      userAgent: userAgent === null ? null : userAgent.slice(0, MAX_USER_AGENT_LENGTH) || null,
      detail: { ...input.detail, ...this.#detail },
    };
  }

  /** Stores an event that stands alone (its change is one statement, already made) and tells the listeners. */
  async emit(input: EventInput): Promise<void> {
    const event = this.make(input);
    await this.#writer.add(event);
    this.publish(event);
  }

  /** Stores an event through `writer`, a transaction's: call `publish` with it once that has committed. */
  async record(writer: EventWriter, input: EventInput): Promise<AuditEvent> {
    const event = this.make(input);
    await writer.add(event);
    return event;
  }

  /** Tells the listeners; a listener that throws is not allowed to fail the request. */
  publish(...events: readonly AuditEvent[]): void {
    for (const event of events) {
      for (const listener of this.#listeners) {
        try {
          listener(event);
        } catch {
          // A broken log or metric must not undo what the user did; the row is stored.
        }
      }
    }
  }
}

/** A request refused by a guessing limit (logged at warn, once per limit and window). */
export function isLockout(event: AuditEvent): boolean {
  return (
    event.type === 'signin.locked' ||
    event.type === 'device.code_entry_locked' ||
    event.type === 'client.registration_limited' ||
    (event.type === 'second_factor.failed' && event.detail['reason'] === 'locked')
  );
}

/** The event as one JSON object for the log: snake_case, null fields left out. */
export function eventLogFields(event: AuditEvent): Record<string, unknown> {
  const fields: Record<string, unknown> = { event: event.type, event_id: event.id, at: new Date(event.at).toISOString() };
  if (event.userId !== null) fields['user_id'] = event.userId;
  if (event.username !== null) fields['username'] = event.username;
  if (event.clientId !== null) fields['client_id'] = event.clientId;
  if (event.grantId !== null) fields['grant_id'] = event.grantId;
  if (event.ip !== null) fields['ip'] = event.ip;
  if (event.userAgent !== null) fields['user_agent'] = event.userAgent;
  if (Object.keys(event.detail).length > 0) fields['detail'] = event.detail;
  return fields;
}
