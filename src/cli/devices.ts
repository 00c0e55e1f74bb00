/** `tessera device …`: arguments in, src/flows/manage/devices.ts, text out. */
import type { Config } from '../config/index.ts';
import { systemClock } from '../core/clock.ts';
import { formatUserCode } from '../flows/device/user-code.ts';
import { MAX_PAGE } from '../flows/manage/deps.ts';
import { denyDevice, listPendingDevices, pendingDeviceJson } from '../flows/manage/devices.ts';
import { operatorDeps, parse, UsageError, when, wholeNumber, withStore, type Io } from './common.ts';

async function deviceList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { limit: { type: 'string' }, json: { type: 'boolean' } });
  const limit = wholeNumber(values.limit, 3) ?? MAX_PAGE;
  if (!(limit >= 1 && limit <= MAX_PAGE)) throw new UsageError(`--limit ${values.limit}: a whole number from 1 to ${MAX_PAGE}`);
  const pending = await withStore(config, (store) => listPendingDevices({ store, clock: systemClock }, limit));
  if (values.json) {
    io.stdout(`${JSON.stringify(pending.map(pendingDeviceJson))}\n`);
    return;
  }
  if (pending.length === 0) io.stdout('No device requests are waiting for approval.\n');
  for (const { record, clientName } of pending) {
    io.stdout(
      `${formatUserCode(record.userCode)}  ${clientName} (${record.clientId})\n  scope: ${record.scope.join(' ')}\n  from: ${record.requestIp}${record.requestUserAgent ? ` (${record.requestUserAgent})` : ''}\n  started: ${when(record.createdAt)}, expires ${when(record.expiresAt)}\n`,
    );
  }
}

async function deviceDeny(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { reason: { type: 'string' } }, 1);
  const denied = await withStore(config, (store) => denyDevice(operatorDeps(config, store, io), positionals[0]!, values.reason ?? null));
  io.stdout(`Denied device request ${formatUserCode(denied.userCode)}: nobody can approve it, and the device is told access_denied.\n`);
}

export const DEVICE_COMMANDS = {
  'device list': deviceList,
  'device deny': deviceDeny,
};
