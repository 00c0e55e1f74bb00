import { isIPv4, isIPv6 } from 'node:net';

/** Whether `address`, as node:net hands it to the handle, is this machine's loopback. */
export function isLoopback(address: string): boolean {
  if (isIPv4(address)) return address.startsWith('127.');
  if (!isIPv6(address)) return false;
  const lower = address.toLowerCase();
  return lower === '::1' || /^(0{0,4}:){5}ffff:127\./.test(lower.replace(/^::/, '0:0:0:0:0:'));
}
