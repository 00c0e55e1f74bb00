/**
 * Device requests waiting for a person (RFC 8628 §3.3): the one implementation `tessera
 * device` and the admin API call. An operator who hears of a user code passed around in a
 * phishing message ("enter WDJB-MJHT to claim your prize", RFC 8628 §5.4) finds the request
 * by its code, sees where it came from, and denies it before anyone approves it.
 */
import type { DeviceAuthorizationRecord } from '../../store/types.ts';
import { formatUserCode, normalizeUserCode } from '../device/user-code.ts';
import type { ManageDeps } from './deps.ts';
import { conflict, field, invalid, notFound } from './errors.ts';

/** An operator's note on why a request was denied, kept in its event. */
export const MAX_REASON = 200;

export interface PendingDevice {
  readonly record: DeviceAuthorizationRecord;
  readonly clientName: string;
}

/** The requests waiting for a decision now, oldest first, with their clients' names. */
export async function listPendingDevices(deps: Pick<ManageDeps, 'store' | 'clock'>, limit: number): Promise<PendingDevice[]> {
  const records = await deps.store.devices.listPending(deps.clock.now(), limit);
  const names = new Map(
    await Promise.all([...new Set(records.map((record) => record.clientId))].map(async (id) => [id, (await deps.store.clients.get(id))?.name ?? id] as const)),
  );
  return records.map((record) => ({ record, clientName: names.get(record.clientId) ?? record.clientId }));
}

/** A pending request as `device list --json` and the admin API give it; never its device code. */
export function pendingDeviceJson({ record, clientName }: PendingDevice): Record<string, unknown> {
  return {
    user_code: formatUserCode(record.userCode),
    client_id: record.clientId,
    client_name: clientName,
    scope: record.scope.join(' '),
    ip: record.requestIp,
    user_agent: record.requestUserAgent,
    created_at: new Date(record.createdAt).toISOString(),
    expires_at: new Date(record.expiresAt).toISOString(),
  };
}

/** A user code as typed (any case, with or without its dash), or a usage error. */
export function parseUserCode(input: string): string {
  const code = normalizeUserCode(input);
  if (code === null) throw invalid`${field('user_code')} ${input.slice(0, 64)}: not a user code (8 letters, such as WDJB-MJHT)`;
  return code;
}

/**
 * Denies a pending request: its device's next poll gets `access_denied` (RFC 8628 §3.5) and
 * nobody can approve it any more. A request decided already is a conflict, an unknown or
 * expired one not found.
 */
export async function denyDevice(deps: ManageDeps, userCode: string, reason: string | null = null): Promise<DeviceAuthorizationRecord> {
  const code = parseUserCode(userCode);
  if (reason !== null && (reason.length > MAX_REASON || /[\p{Cc}]/u.test(reason)))
    throw invalid`${field('reason')}: at most ${MAX_REASON} characters, on one line`;
  const now = deps.clock.now();
  const found = await deps.store.devices.findByUserCode(code, now);
  const denied = found === null ? null : await deps.store.devices.decide(found, { approve: false }, now);
  if (denied === null) {
    // Decided before, or since it was read; or gone (expired, or never there).
    const settled = found === null ? null : await deps.store.devices.find(found.deviceCodeHash);
    if (settled === null || settled.status === 'pending' || settled.expiresAt <= now)
      throw notFound`no device request with user code ${formatUserCode(code)} is waiting (unknown or expired)`;
    throw conflict`the device request ${formatUserCode(code)} was already ${settled.status === 'denied' ? 'denied' : 'approved'}${settled.status === 'denied' ? '' : ': revoke its grant instead'}`;
  }
  await deps.events.emit({
    type: 'device.denied',
    clientId: denied.clientId,
    detail: {
      device_ip: denied.requestIp,
      device_user_agent: denied.requestUserAgent,
      scope: denied.scope.join(' '),
      by: 'operator',
      ...(reason === null ? {} : { reason }),
    },
  });
  return denied;
}
