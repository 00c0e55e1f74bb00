import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openStore } from '../store/open.ts';
import type { Store } from '../store/types.ts';
import { Attempt, isRefusal, OncePerWindow } from './attempts.ts';
import type { RateLimitStore } from '../store/types.ts';

describe('Attempt', () => {
  let dir: string;
  let store: Store;
  const T0 = Date.UTC(2026, 0, 1);
  const WINDOW = 10 * 60_000;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-attempts-'));
    store = await openStore(join(dir, 'tessera.db'));
  });
  after(async () => {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lets no more than the limit of 20 concurrent guesses through', async () => {
    const limits = [{ key: 'ip:203.0.113.9', limit: 5 }];
    const attempts = await Promise.all(Array.from({ length: 20 }, () => Attempt.reserve(store.rateLimits, limits, WINDOW, T0)));
    assert.equal(attempts.filter((attempt) => !isRefusal(attempt)).length, 5);
    assert.equal(await store.rateLimits.count('ip:203.0.113.9', WINDOW, T0), 5, 'refused guesses leave no count behind');
  });

  it('counts only what fails: a right guess gives its place back', async () => {
    const limits = [
      { key: 'browser:abc', limit: 2 },
      { key: 'ip:198.51.100.1', limit: 10 },
    ];
    for (let i = 0; i < 5; i++) await ((await Attempt.reserve(store.rateLimits, limits, WINDOW, T0)) as Attempt).succeeded();
    assert.equal(await store.rateLimits.count('browser:abc', WINDOW, T0), 0);
    await Attempt.reserve(store.rateLimits, limits, WINDOW, T0);
    await Attempt.reserve(store.rateLimits, limits, WINDOW, T0);
    const refused = await Attempt.reserve(store.rateLimits, limits, WINDOW, T0 + 1000);
    assert.ok(isRefusal(refused), 'the browser is locked after two failures');
    assert.equal(refused.limit.key, 'browser:abc');
    assert.equal(refused.retryAfterSeconds, WINDOW / 1000 - 1, 'and told when its window ends');
    assert.equal(await store.rateLimits.count('ip:198.51.100.1', WINDOW, T0), 2, 'and the refused try is not held against the address');
    assert.ok(!isRefusal(await Attempt.reserve(store.rateLimits, limits, WINDOW, T0 + WINDOW)), 'until the window ends');
  });

  it('gives an attempt back to the window it was counted in, not to the next one', async () => {
    const limits = [{ key: 'ip:192.0.2.71', limit: 3 }];
    await Attempt.reserve(store.rateLimits, limits, WINDOW, T0);
    // Reserved just before the window ends, and right only after the next has opened.
    const late = await Attempt.reserve(store.rateLimits, limits, WINDOW, T0 + WINDOW - 5);
    assert.ok(!isRefusal(late));
    const failure = await Attempt.reserve(store.rateLimits, limits, WINDOW, T0 + WINDOW + 1);
    assert.ok(!isRefusal(failure));
    assert.deepEqual(failure.counts, [1], 'the next window opened');
    await late.succeeded();
    assert.equal(await store.rateLimits.count('ip:192.0.2.71', WINDOW, T0 + WINDOW + 2), 1, "the next window's failure stays counted");
  });

  it('refuses an attempt over a used-up limit without writing anything', async () => {
    const limits = [{ key: 'ip:192.0.2.44', limit: 1 }];
    await Attempt.reserve(store.rateLimits, limits, WINDOW, T0);
    let writes = 0;
    const counting: RateLimitStore = {
      hit: (...args) => {
        writes += 1;
        return store.rateLimits.hit(...args);
      },
      release: (...args) => {
        writes += 1;
        return store.rateLimits.release(...args);
      },
      count: (...args) => store.rateLimits.count(...args),
      window: (...args) => store.rateLimits.window(...args),
      listOpen: (...args) => store.rateLimits.listOpen(...args),
      remove: (...args) => {
        writes += 1;
        return store.rateLimits.remove(...args);
      },
    };
    for (let i = 0; i < 10; i++) assert.ok(isRefusal(await Attempt.reserve(counting, limits, WINDOW, T0 + i)));
    assert.equal(writes, 0);
  });

  it('only counts against a limit of Infinity, and reports the counts', async () => {
    const limits = [{ key: 'user:zoe', limit: Infinity }];
    for (let i = 1; i <= 3; i++) {
      const attempt = await Attempt.reserve(store.rateLimits, limits, WINDOW, T0);
      assert.ok(!isRefusal(attempt));
      assert.deepEqual(attempt.counts, [i]);
    }
  });
});

describe('OncePerWindow', () => {
  it('says yes once per key and window', () => {
    const once = new OncePerWindow(60_000);
    assert.equal(once.first('a', 0), true);
    assert.equal(once.first('a', 59_999), false);
    assert.equal(once.first('b', 1), true);
    assert.equal(once.first('a', 60_000), true);
  });
});
