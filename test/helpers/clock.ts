import { before } from 'node:test';
import { ManualClock } from '../../src/core/clock.ts';

/**
 * A manual clock at the real time when the tests of the describe it is made in start (a
 * `before` hook of that describe), not when the file is loaded: `npm test` loads every file of
 * a shard before the first test runs (test/run.ts), and proofs, tokens and commands made with
 * the real time must not look minutes ahead of the server.
 */
export function clockAtStart(): ManualClock {
  const clock = new ManualClock(Date.now());
  before(() => clock.set(Date.now()));
  return clock;
}
