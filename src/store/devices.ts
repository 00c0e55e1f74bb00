/**
 * Device authorization requests (RFC 8628): the user's decision and the device's polls.
 */

import type { AuditEvent } from '../core/events.ts';

export type DeviceStatus = 'pending' | 'approved' | 'denied' | 'consumed';

/** A device authorization request (RFC 8628 §3.1-3.2). */
export interface DeviceAuthorizationRecord {
  readonly deviceCodeHash: string;
  /** Normalised: 8 characters, upper case, no separator. */
  readonly userCode: string;
  readonly clientId: string;
  readonly scope: readonly string[];
  readonly status: DeviceStatus;
  /** Seconds between polls; grows by 5 with every `slow_down` (RFC 8628 §3.5). */
  readonly interval: number;
  readonly lastPolledAt: number | null;
  readonly createdAt: number;
  readonly expiresAt: number;
  /** Where the device request came from, shown on the approval page. */
  readonly requestIp: string;
  readonly requestUserAgent: string | null;
  /** Set by the user's decision. */
  readonly userId: string | null;
  readonly authTime: number | null;
  readonly grantId: string | null;
  readonly decidedAt: number | null;
  /** RFC 9449: the key of the DPoP proof sent with the device authorization request; only polls proved by it get tokens. */
  readonly dpopJkt: string | null;
}

/**
 * What one poll found, decided in the same statement that recorded the poll, in this
 * order: `expired` (past `expiresAt`), `consumed` (tokens were already issued),
 * `denied`, `slow_down` (sooner than `interval` after the previous poll; the interval grows
 * by 5 s), `issue` (approved: the record is now consumed and the caller issues the
 * tokens, exactly once), `pending`.
 */
export type DevicePollOutcome = 'expired' | 'consumed' | 'denied' | 'slow_down' | 'issue' | 'pending';

export type DeviceDecision =
  | { readonly approve: true; readonly userId: string; readonly authTime: number; readonly grantId: string }
  | { readonly approve: false };

export interface DeviceAuthorizationStore {
  /**
   * False, and nothing stored, when a live record already has this user code. `event` (the
   * request's `device.started`) is stored with the record, in the same commit and in the
   * same round trip, and only if the record is: an event written after it would cost the
   * request a second commit to wait for.
   */
  create(record: DeviceAuthorizationRecord, event?: AuditEvent): Promise<boolean>;
  /** The record with this user code that has not expired at `now`, whatever its status. */
  findByUserCode(userCode: string, now: number): Promise<DeviceAuthorizationRecord | null>;
  /**
   * Records the user's decision on `record`, the request they were shown: only while it is
   * pending and unexpired; returns the updated record, or null when there was none to decide.
   * Found by its device code hash, the key: another record given the same user code since
   * (the first expired) has another hash, and is not decided.
   */
  decide(record: Pick<DeviceAuthorizationRecord, 'deviceCodeHash'>, decision: DeviceDecision, now: number): Promise<DeviceAuthorizationRecord | null>;
  /**
   * One poll by the device: one indexed lookup and one write. Null when no record has this
   * hash for this client, or it is bound to a DPoP key (`dpopJkt`) other than `dpopJkt`
   * (null: the poll carried no proof); such a poll changes nothing. A poll with a key binds
   * a record not bound yet to that key, in the same write (RFC 9449 defines no proof at the
   * device authorization endpoint, so most clients first prove their key here).
   */
  poll(
    deviceCodeHash: string,
    clientId: string,
    now: number,
    dpopJkt?: string | null,
  ): Promise<{ readonly outcome: DevicePollOutcome; readonly record: DeviceAuthorizationRecord } | null>;
  /** The record whatever its state, to tell why a poll found nothing. */
  find(deviceCodeHash: string): Promise<DeviceAuthorizationRecord | null>;
  /** How many requests wait for a person's decision at `now` (pending and unexpired): a metric. */
  countPending(now: number): Promise<number>;
  /** The requests waiting for a person's decision at `now`, oldest first, at most `limit`. */
  listPending(now: number, limit: number): Promise<DeviceAuthorizationRecord[]>;
  /** Deletes the requests the user decided (a removed user). */
  removeForUser(userId: string): Promise<number>;
}
