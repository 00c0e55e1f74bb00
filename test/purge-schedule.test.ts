import assert from 'node:assert/strict';
import { describe, it, mock } from 'node:test';
import { schedulePurge } from '../src/main.ts';
import type { PurgeCutoffs, Store } from '../src/store/types.ts';

/** A store whose purges finish only when the test says so. */
function slowStore() {
  const started: number[] = [];
  const cutoffs: (PurgeCutoffs | undefined)[] = [];
  const finishers: (() => void)[] = [];
  const store = {
    purgeExpired(before: number, given?: PurgeCutoffs) {
      started.push(before);
      cutoffs.push(given);
      return new Promise<number>((resolve) => finishers.push(() => resolve(0)));
    },
  } as unknown as Store;
  return { store, started, cutoffs, finish: () => finishers.shift()?.() };
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('the background purge', () => {
  it('runs after a jittered delay, never twice at once, and stops after the purge under way', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const { store, started, finish } = slowStore();
      const stop = schedulePurge(
        store,
        (error) => assert.fail(String(error)),
        () => 0.25,
      );
      mock.timers.tick(44_999);
      assert.equal(started.length, 0, 'not before 75% of a minute (random 0.25)');
      mock.timers.tick(1);
      assert.equal(started.length, 1);

      mock.timers.tick(10 * 60_000);
      assert.equal(started.length, 1, 'no second purge while the first is running');
      finish();
      await flush();
      mock.timers.tick(45_000);
      assert.equal(started.length, 2, 'the next one a jittered delay after the first finished');

      let stopped = false;
      const stopping = stop().then(() => (stopped = true));
      await flush();
      assert.equal(stopped, false, 'stopping waits for the purge under way');
      finish();
      await stopping;
      mock.timers.tick(10 * 60_000);
      assert.equal(started.length, 2, 'nothing after stop');
    } finally {
      mock.timers.reset();
    }
  });

  it('gives each retention its cutoff: grants, events and self-registered clients never used', async () => {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const { store, started, cutoffs, finish } = slowStore();
      const stop = schedulePurge(
        store,
        (error) => assert.fail(String(error)),
        () => 0.5,
        { grantsMs: 7_000_000, eventsMs: 9_000_000, unusedClientsMs: 604_800_000 },
      );
      mock.timers.tick(60_000);
      assert.equal(started.length, 1);
      // Each cutoff is its retention before the same now; `before` is an hour before it.
      const now = started[0]! + 3_600_000;
      assert.deepEqual(cutoffs[0], { grantsBefore: now - 7_000_000, eventsBefore: now - 9_000_000, unusedClientsBefore: now - 604_800_000 });
      finish();
      await stop();
    } finally {
      mock.timers.reset();
    }
  });
});
