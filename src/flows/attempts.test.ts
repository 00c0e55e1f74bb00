import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openStore } from '../store/open.ts';
import type { Store } from '../store/types.ts';
import { Attempt } from './attempts.ts';

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
    assert.equal(attempts.filter((attempt) => attempt !== null).length, 5);
    assert.equal(await store.rateLimits.count('ip:203.0.113.9', WINDOW, T0), 5, 'refused guesses leave no count behind');
  });

  it('counts only what fails: a right guess gives its place back', async () => {
    const limits = [{ key: 'browser:abc', limit: 2 }, { key: 'ip:198.51.100.1', limit: 10 }];
    for (let i = 0; i < 5; i++) await (await Attempt.reserve(store.rateLimits, limits, WINDOW, T0))!.succeeded();
    assert.equal(await store.rateLimits.count('browser:abc', WINDOW, T0), 0);
    await Attempt.reserve(store.rateLimits, limits, WINDOW, T0);
    await Attempt.reserve(store.rateLimits, limits, WINDOW, T0);
    assert.equal(await Attempt.reserve(store.rateLimits, limits, WINDOW, T0), null, 'the browser is locked after two failures');
    assert.equal(await store.rateLimits.count('ip:198.51.100.1', WINDOW, T0), 2, 'and the refused try is not held against the address');
    assert.notEqual(await Attempt.reserve(store.rateLimits, limits, WINDOW, T0 + WINDOW), null, 'until the window ends');
  });
});
