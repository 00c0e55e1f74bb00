/**
 * Loaded into every test process `npm test` starts (test/run.ts, `--import`): no test reaches
 * beyond this machine's loopback, even when the rule it checks is broken. A test of the
 * outbound address guard, a webhook's or an upstream provider's, names addresses a broken
 * rule would connect to (a private network's, api.github.com); here every TCP connection is
 * checked at the last step, with the address the name was resolved to, whoever opens it (node:net,
 * Node's fetch, undici, pg), and one to anything but loopback fails at once with EACCES, saying so on
 * standard error, rather than go out. PostgreSQL, slapd, the mail server and the servers under
 * test all listen on loopback.
 *
 * `process.binding('tcp_wrap')` is the handle node:net connects with (its `connect` and
 * `connect6` take the resolved address): the one place every connection passes.
 */
import { constants } from 'node:os';
import { isLoopback } from './loopback.ts';

interface TcpHandle {
  connect(request: unknown, address: string, port: number, ...rest: unknown[]): number;
  connect6(request: unknown, address: string, port: number, ...rest: unknown[]): number;
}

const { TCP } = (process as unknown as { binding(name: 'tcp_wrap'): { TCP: { prototype: TcpHandle } } }).binding('tcp_wrap');
const EACCES = -constants.errno.EACCES;

for (const method of ['connect', 'connect6'] as const) {
  const connect = TCP.prototype[method];
  TCP.prototype[method] = function (this: TcpHandle, request, address, port, ...rest) {
    if (!isLoopback(address)) {
      process.stderr.write(`test/helpers/loopback-only.ts: refused a connection to ${address} port ${port}: a test reaches loopback only\n`);
      return EACCES;
    }
    return connect.call(this, request, address, port, ...rest);
  };
}
