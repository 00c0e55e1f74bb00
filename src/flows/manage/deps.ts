import type { SessionRecord } from '../../store/types.ts';
import type { AccountDeps } from '../users.ts';
import type { Caller } from './authority.ts';

/**
 * What a management operation is given. `events` names the actor: the command line's, or
 * the admin API's carrying the admin client in every event it records
 * (`Events.withDetail`). Operations read the time from `clock`, never from `Date`.
 */
export interface ManageDeps extends AccountDeps {
  /** Who asks, and so what they may do (flows/manage/authority.ts): every door says. */
  readonly caller: Caller;
  /**
   * Tells the apps signed in to sessions an operation ended (Back-Channel Logout 1.0); returns
   * how many apps were sent a logout token. The command waits for delivery; the server does not.
   */
  readonly tellApps: (sessions: readonly SessionRecord[]) => Promise<number>;
  /**
   * Hashes a password an operation sets. The server hashes on its password queue, as every
   * hash it computes (so that an admin API client cannot starve token signing of libuv's
   * pool); absent, as for the command, on libuv's pool (core/password.ts).
   */
  readonly hashPassword?: (password: string) => Promise<string>;
}

/** An ISO 8601 time, or null. */
export const isoTime = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** A page of a list, in the admin API and the commands that page: at most this many items. */
export const MAX_PAGE = 200;
