import { isIP } from 'node:net';
import { isLoopbackHost } from '../../src/core/networks.ts';

/**
 * Whether `address`, as node:net hands it to the handle, is this machine's loopback: the
 * server's own reading of loopback (src/core/networks.ts), less the unspecified addresses
 * (0.0.0.0, ::) and names, which never reach the handle from a test that means loopback.
 */
export function isLoopback(address: string): boolean {
  return isIP(address) !== 0 && address !== '0.0.0.0' && address !== '::' && isLoopbackHost(address);
}
