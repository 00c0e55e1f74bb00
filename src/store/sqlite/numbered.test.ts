import assert from 'node:assert/strict';
import { DatabaseSync } from 'node:sqlite';
import { describe, it } from 'node:test';
import { numbered, valuesOf } from './numbered.ts';

describe('numbered parameters', () => {
  const cases: readonly (readonly [sql: string, text: string, names: readonly string[]])[] = [
    ['SELECT * FROM codes WHERE hash = :hash', 'SELECT * FROM codes WHERE hash = ?1', ['hash']],
    ['UPDATE t SET a = :now WHERE b < :now AND c = :id', 'UPDATE t SET a = ?1 WHERE b < ?1 AND c = ?2', ['now', 'id']],
    ['SELECT :a, @b, $c_1', 'SELECT ?1, ?2, ?3', ['a', 'b', 'c_1']],
    // Literals, quoted identifiers and comments name no parameter.
    [
      "SELECT 'urn:ietf:params', json_extract(d, '$.key'), 'it''s :not' FROM t WHERE x = :x",
      "SELECT 'urn:ietf:params', json_extract(d, '$.key'), 'it''s :not' FROM t WHERE x = ?1",
      ['x'],
    ],
    [
      'SELECT "col:umn", [a:b], `c:d` FROM t -- :comment\nWHERE y = :y /* :block */',
      'SELECT "col:umn", [a:b], `c:d` FROM t -- :comment\nWHERE y = ?1 /* :block */',
      ['y'],
    ],
    // A colon not followed by a name is left alone.
    ['SELECT 1 WHERE a = :', 'SELECT 1 WHERE a = :', []],
  ];
  for (const [sql, text, names] of cases) {
    it(`numbers ${JSON.stringify(sql)}`, () => {
      assert.deepEqual(numbered(sql), { text, names });
    });
  }

  it('binds by number what the named statement bound by name: missing names as NULL, unknown keys left out', () => {
    const db = new DatabaseSync(':memory:');
    const sql = "SELECT :a AS a, :b AS b, :a || ':a' AS again";
    const { text, names } = numbered(sql);
    const row = db.prepare(text).get(...valuesOf(names, { a: 'x', unknown: 1 }));
    assert.deepEqual({ ...row }, { a: 'x', b: null, again: 'x:a' });
    db.close();
  });
});
