import { systemClock } from '../../src/core/clock.ts';
import { Events } from '../../src/core/events.ts';
import { OWNER } from '../../src/flows/manage/authority.ts';
import type { ManageDeps } from '../../src/flows/manage/deps.ts';
import type { TestServer } from './server.ts';

/** The management operations' dependencies over a test server's store, as the command gives them. */
export function manageDeps(server: Pick<TestServer, 'store' | 'config'>): ManageDeps {
  return {
    store: server.store,
    clock: systemClock,
    config: server.config,
    caller: OWNER,
    events: new Events(systemClock, server.store.events, []),
    tellApps: async () => 0,
  };
}
