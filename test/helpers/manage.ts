import { systemClock, type Clock } from '../../src/core/clock.ts';
import { Events } from '../../src/core/events.ts';
import { OWNER } from '../../src/flows/manage/authority.ts';
import type { ManageDeps } from '../../src/flows/manage/deps.ts';
import { setDisabled } from '../../src/flows/manage/users.ts';
import type { AuditEvent } from '../../src/core/events.ts';
import type { TestServer } from './server.ts';

/**
 * The management operations' dependencies over a test server's store, as the command gives them,
 * on the server's clock: a client made here and a token the server issues for it are dated alike,
 * as they are in one process (a frozen server clock behind the system's made a fresh client's
 * token look older than the client).
 */
export function manageDeps(server: Pick<TestServer, 'store' | 'config'> & { readonly clock?: Clock }): ManageDeps {
  const clock = server.clock ?? systemClock;
  return {
    store: server.store,
    clock,
    config: server.config,
    caller: OWNER,
    events: new Events(clock, server.store.events, []),
    tellApps: async () => 0,
  };
}

/**
 * `user` disabled and enabled again `times` times over, as an operator would: a run of
 * `user.disabled` and `user.enabled` events to deliver. Returns those events, oldest first.
 */
export async function disableAndEnable(
  server: Pick<TestServer, 'store' | 'config'>,
  user: { readonly id: string; readonly username: string },
  times: number,
): Promise<AuditEvent[]> {
  for (let i = 0; i < times; i += 1) {
    await setDisabled(manageDeps(server), user.username, true);
    await setDisabled(manageDeps(server), user.username, false);
  }
  return (await server.store.events.list({ userId: user.id, limit: 2 * times + 10 }))
    .filter((event) => event.type === 'user.disabled' || event.type === 'user.enabled')
    .reverse();
}
