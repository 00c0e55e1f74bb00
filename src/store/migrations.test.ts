/**
 * The migrations' numbers: rising, each once (2 and 16 were given up long ago). Two branches that each take the next
 * number merge into two migrations of one version, and a database that applied the first would
 * skip the second for good (a version is applied once): this fails at the merge instead, so the
 * later branch takes the next number (migration numbers that cannot collide).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { migrations } from './migrations.ts';

describe('the migrations', () => {
  it('are numbered in rising order, each number and each name once', () => {
    const versions = migrations.map((migration) => migration.version);
    assert.deepEqual(
      versions,
      [...new Set(versions)].sort((a, b) => a - b),
      'each version once, in rising order',
    );
    const names = migrations.map((migration) => migration.name);
    assert.equal(new Set(names).size, names.length, `a name twice: ${names.filter((name, index) => names.indexOf(name) !== index).join(', ')}`);
  });
});
