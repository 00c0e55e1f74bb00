/**
 * RFC 7644 §3.4.2-§3.4.3 lists (search.ts): which filters the database answers, how a
 * SearchRequest body reads, and the bound on what is evaluated in memory. That the database
 * finds what the filter finds is the store contract's (test/store/scim-search-contract.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Store } from '../../store/types.ts';
import { ScimError } from './errors.ts';
import { parseFilter } from './filter.ts';
import { USER_SCHEMA } from './schema.ts';
import { exactCondition, FIELDS, listUsers, MAX_IN_MEMORY, narrowingCondition, searchQuery } from './search.ts';

const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';
const exact = (text: string) => exactCondition(parseFilter(text), FIELDS.users, USER_SCHEMA);

describe('SCIM lists in the database', () => {
  it('maps the filters of the attributes the database holds, and nothing else', () => {
    assert.deepEqual(exact('UserName EQ "ada"'), { kind: 'compare', field: 'userName', op: 'eq', value: 'ada' });
    assert.deepEqual(exact(`${USER_SCHEMA}:emails.value co "x"`), { kind: 'compare', field: 'emails', op: 'co', value: 'x' });
    assert.deepEqual(exact('meta.lastModified gt "2026-01-01T00:00:00Z"'), {
      kind: 'compare',
      field: 'lastModified',
      op: 'gt',
      value: Date.UTC(2026, 0, 1),
    });
    assert.deepEqual(exact('externalId eq null'), { kind: 'not', condition: { kind: 'present', field: 'externalId' } });
    for (const text of [
      'userName eq "a\\u0000"',
      'title eq "x"',
      'emails[type eq "work"]',
      'emails.type eq "work"',
      'meta.created co "2026"',
      'userName eq "a" or title pr',
    ])
      assert.equal(exact(text), null, text);
    // An `and` is narrowed by the parts the database holds; the rest is evaluated in memory.
    assert.deepEqual(narrowingCondition(parseFilter('title eq "x" and userName sw "a"'), FIELDS.users, USER_SCHEMA), {
      kind: 'compare',
      field: 'userName',
      op: 'sw',
      value: 'a',
    });
    assert.equal(narrowingCondition(parseFilter('title eq "x" or userName sw "a"'), FIELDS.users, USER_SCHEMA), null);
  });

  it('refuses to evaluate in memory over more than its bound, with tooMany', async () => {
    const store = { scimUsers: { search: async () => ({ total: MAX_IN_MEMORY + 1, users: [] }) } } as unknown as Store;
    await assert.rejects(
      listUsers({ store, base: 'https://id.example.com/scim/v2' }, { filter: 'title eq "x"' }),
      (error: unknown) => error instanceof ScimError && error.status === 400 && error.scimType === 'tooMany',
    );
  });

  it('reads a SearchRequest body as the query parameters, and refuses what is not one', () => {
    assert.deepEqual(searchQuery({ schemas: [SEARCH], filter: 'userName pr', attributes: ['userName', 'emails'], startIndex: 2, count: 5 }), {
      filter: 'userName pr',
      sortBy: undefined,
      sortOrder: undefined,
      startIndex: '2',
      count: '5',
      attributes: 'userName,emails',
      excludedAttributes: undefined,
    });
    for (const body of [
      null,
      [],
      'x',
      {},
      { schemas: ['other'] },
      { schemas: [SEARCH], count: 1.5 },
      { schemas: [SEARCH], filter: 1 },
      { schemas: [SEARCH], extra: 1 },
    ])
      assert.throws(
        () => searchQuery(body),
        (error: unknown) => error instanceof ScimError && error.status === 400,
        JSON.stringify(body),
      );
  });
});
