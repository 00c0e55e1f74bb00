/**
 * A SCIM list's query (RFC 7644 §3.4.2) and the attributes an answer holds (§3.9), as pure
 * functions over resources as SCIM renders them: the query read and refused before anything
 * is read (parseQuery), the page filtered, sorted and cut in memory (listResponse), and each
 * resource projected to the attributes asked for (project). Filters themselves are
 * filter.test.ts's; which of them the database answers is search.test.ts's; test/scim.test.ts
 * sends the same through the API, by GET and by POST .search.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ScimError } from './errors.ts';
import { DEFAULT_COUNT, listResponse, MAX_RESULTS, type ListQuery, pageResponse, parseQuery, project } from './query.ts';
import { ENTERPRISE_SCHEMA, GROUP_KIND, GROUP_SCHEMA, LIST_SCHEMA, USER_KIND, USER_SCHEMA } from './schema.ts';

type Json = Record<string, unknown>;

const user = (id: string, fields: Json): Json => ({
  schemas: [USER_SCHEMA],
  id,
  ...fields,
  meta: { resourceType: 'User', location: `https://auth.example.com/scim/v2/Users/${id}`, version: 'W/"1"' },
});

const ADA = user('u-ada', {
  userName: 'ada',
  title: 'Countess',
  name: { givenName: 'Ada', familyName: 'Lovelace' },
  emails: [
    { value: 'ada@home.example', type: 'home' },
    { value: 'ada@work.example', type: 'work', primary: true },
  ],
  [ENTERPRISE_SCHEMA]: { department: 'Engines', employeeNumber: '1815' },
});
const USERS: Json[] = [
  ADA,
  user('u-alan', { userName: 'Alan', title: 'codebreaker', emails: [{ value: 'zed@example.com' }, { value: 'alan@example.com' }] }),
  user('u-grace', {
    userName: 'grace',
    title: 'Admiral',
    emails: [{ value: 'zz@example.com' }, { value: 'grace@example.com', primary: true }],
  }),
  user('u-linus', { userName: 'linus' }),
];

/** The status and scimType parsing `query` fails with, or 'ok'. */
function refusal(query: ListQuery, kind = USER_KIND): [number, string | null] | 'ok' {
  try {
    parseQuery(kind, query);
    return 'ok';
  } catch (error) {
    if (error instanceof ScimError) return [error.status, error.scimType];
    throw error;
  }
}

const list = (query: ListQuery, resources = USERS) => listResponse(USER_KIND, resources, parseQuery(USER_KIND, query));
const ids = (answer: Json) => (answer['Resources'] as Json[]).map((resource) => resource['id']);

describe('SCIM list queries (RFC 7644 §3.4.2, §3.9)', () => {
  it('reads startIndex and count within their bounds, with the defaults when not given (§3.4.2.4)', () => {
    // §3.4.2.4: startIndex "A value less than 1 SHALL be interpreted as 1"; count "A negative value SHALL be interpreted as "0"".
    const cases: [ListQuery, number, number][] = [
      [{}, 1, DEFAULT_COUNT],
      [{ startIndex: '', count: '' }, 1, DEFAULT_COUNT],
      [{ startIndex: '3', count: '10' }, 3, 10],
      [{ startIndex: '0', count: '0' }, 1, 0],
      [{ startIndex: '-5', count: '-1' }, 1, 0],
      [{ count: String(MAX_RESULTS) }, 1, MAX_RESULTS],
      [{ count: String(MAX_RESULTS + 1) }, 1, MAX_RESULTS],
      [{ count: '999999999999999' }, 1, MAX_RESULTS],
    ];
    for (const [query, start, count] of cases) {
      const parsed = parseQuery(USER_KIND, query);
      assert.deepEqual([parsed.start, parsed.count], [start, count], JSON.stringify(query));
    }
    assert.deepEqual(parseQuery(USER_KIND, {}), { filter: null, sort: null, start: 1, count: DEFAULT_COUNT, attributes: [], excluded: [] });
  });

  it('reads sortBy as an attribute path of the resource kind, and sortOrder ascending unless descending is asked for, in any case', () => {
    const sort = (query: ListQuery, kind = USER_KIND) => parseQuery(kind, query).sort;
    // §3.4.2.3: "If a value for "sortBy" is provided and no "sortOrder" is specified, "sortOrder" SHALL default to ascending".
    assert.deepEqual(sort({ sortBy: 'userName' }), { path: { uri: null, name: 'userName', sub: null }, descending: false });
    assert.deepEqual(sort({ sortBy: 'name.familyName', sortOrder: 'DESCENDING' }), { path: { uri: null, name: 'name', sub: 'familyName' }, descending: true });
    assert.equal(sort({ sortBy: `${USER_SCHEMA}:userName`, sortOrder: 'Ascending' })?.descending, false);
    assert.deepEqual(sort({ sortBy: `${ENTERPRISE_SCHEMA}:department` })?.path, { uri: ENTERPRISE_SCHEMA, name: 'department', sub: null });
    assert.equal(sort({ sortBy: 'displayName' }, GROUP_KIND)?.path.name, 'displayName');
    assert.equal(sort({ sortBy: '', sortOrder: 'sideways' }), null, 'no sortBy: sortOrder unread');
  });

  it('refuses a query it cannot answer with 400 and its scimType, before any resource is read (§3.12)', () => {
    const cases: [string, ListQuery, [number, string | null] | 'ok', typeof USER_KIND?][] = [
      ['a filter that does not parse', { filter: 'userName eq' }, [400, 'invalidFilter']],
      ['a filter on an attribute the kind has not', { filter: 'userName eq "ada"' }, [400, 'invalidFilter'], GROUP_KIND],
      ['attributes naming no attribute', { attributes: 'userName,shoeSize' }, [400, 'invalidValue']],
      ['attributes naming no attribute of a Group', { attributes: 'userName' }, [400, 'invalidValue'], GROUP_KIND],
      ['attributes that are no path', { attributes: 'emails[type eq "work"]' }, [400, 'invalidValue']],
      ['more than 100 attributes', { attributes: Array.from({ length: 101 }, () => 'userName').join(',') }, [400, 'invalidValue']],
      ['100 attributes', { attributes: Array.from({ length: 100 }, () => 'userName').join(',') }, 'ok'],
      ['excludedAttributes naming no attribute', { excludedAttributes: 'shoeSize' }, [400, 'invalidValue']],
      ['an extension schema of another kind', { attributes: ENTERPRISE_SCHEMA }, [400, 'invalidValue'], GROUP_KIND],
      ['the enterprise extension of a User', { attributes: ENTERPRISE_SCHEMA, excludedAttributes: ` ${ENTERPRISE_SCHEMA} ` }, 'ok'],
      ['sortBy naming no attribute', { sortBy: 'shoeSize' }, [400, 'invalidValue']],
      ['sortBy that is no path', { sortBy: 'name..givenName' }, [400, 'invalidValue']],
      ['sortBy naming a User attribute on Groups', { sortBy: 'userName' }, [400, 'invalidValue'], GROUP_KIND],
      ['sortOrder neither ascending nor descending', { sortBy: 'userName', sortOrder: 'up' }, [400, 'invalidValue']],
      ['startIndex that is no number', { startIndex: 'one' }, [400, 'invalidValue']],
      ['startIndex with a fraction', { startIndex: '1.5' }, [400, 'invalidValue']],
      ['startIndex in exponent form', { startIndex: '1e3' }, [400, 'invalidValue']],
      ['count with spaces', { count: ' 5' }, [400, 'invalidValue']],
      ['count of 16 digits', { count: '1000000000000000' }, [400, 'invalidValue']],
    ];
    for (const [what, query, expected, kind] of cases) assert.deepEqual(refusal(query, kind ?? USER_KIND), expected, what);
  });

  it('answers a ListResponse of the page asked for, totalResults counting every resource the filter finds (§3.4.2)', () => {
    const page = list({ filter: 'emails pr', sortBy: 'userName', startIndex: '2', count: '1' });
    assert.deepEqual(page, {
      schemas: [LIST_SCHEMA],
      totalResults: 3,
      startIndex: 2,
      itemsPerPage: 1,
      Resources: [USERS[1]],
    });
    assert.deepEqual(ids(list({ filter: 'title pr' })), ['u-ada', 'u-alan', 'u-grace'], 'no sortBy: the order given');
    // §3.4.2.4: "A value of "0" indicates that no resource results are to be returned except for "totalResults"".
    assert.deepEqual(list({ count: '0' }), { schemas: [LIST_SCHEMA], totalResults: 4, startIndex: 1, itemsPerPage: 0, Resources: [] });
    assert.deepEqual(list({ startIndex: '9' }), { schemas: [LIST_SCHEMA], totalResults: 4, startIndex: 9, itemsPerPage: 0, Resources: [] }, 'past the end');
    assert.deepEqual(list({ filter: 'userName eq "nobody"' })['totalResults'], 0);
    const many = Array.from({ length: MAX_RESULTS + 5 }, (_, i) => user(`u${String(i).padStart(3, '0')}`, { userName: `user${i}` }));
    const bounded = list({ count: '1000' }, many);
    assert.deepEqual([bounded['totalResults'], bounded['itemsPerPage']], [MAX_RESULTS + 5, MAX_RESULTS], 'a page holds at most MAX_RESULTS');
    assert.deepEqual(list({}, USERS)['Resources'], USERS, 'the resources as given, nothing projected away');
  });

  it('sorts without regard to case but where case matters (caseExact), a multi-valued attribute by its primary value or else its first, those without a value last if ascending and first if descending (§3.4.2.3)', () => {
    assert.deepEqual(ids(list({ sortBy: 'userName' })), ['u-ada', 'u-alan', 'u-grace', 'u-linus'], '"Alan" between "ada" and "grace"');
    assert.deepEqual(ids(list({ sortBy: 'userName', sortOrder: 'descending' })), ['u-linus', 'u-grace', 'u-alan', 'u-ada']);
    // §3.4.2.3: "String type attributes are case insensitive by default, unless the attribute type is defined as a caseExact string":
    // externalId is (RFC 7643 §3.1), so it sorts by code point, upper case first.
    const external = ['b', 'B', 'a', 'A'].map((externalId, i) => user(`u${i}`, { userName: `x${i}`, externalId }));
    assert.deepEqual(ids(list({ sortBy: 'externalId' }, external)), ['u3', 'u1', 'u2', 'u0'], 'A, B, a, b');
    assert.deepEqual(ids(list({ sortBy: 'title' })), ['u-grace', 'u-alan', 'u-ada', 'u-linus'], 'Admiral, codebreaker, Countess, then none');
    // §3.4.2.3: "If the attribute is multi-valued, resources MUST be sorted by the value of the primary attribute ..., if any, or else
    // the first value in the list, if any": ada by ada@work (primary), grace by grace@ (primary), alan by zed@ (first).
    assert.deepEqual(ids(list({ sortBy: 'emails' })), ['u-ada', 'u-grace', 'u-alan', 'u-linus']);
    assert.deepEqual(ids(list({ sortBy: 'emails.value' })), ['u-ada', 'u-grace', 'u-alan', 'u-linus']);
    assert.deepEqual(ids(list({ sortBy: 'emails.type' })), ['u-ada', 'u-alan', 'u-grace', 'u-linus'], 'work; then none, in the order given');
    assert.deepEqual(ids(list({ sortBy: 'name.familyName' })), ['u-ada', 'u-alan', 'u-grace', 'u-linus'], 'one with a value, then the rest as given');
    assert.deepEqual(ids(list({ sortBy: `${ENTERPRISE_SCHEMA}:department` })).at(0), 'u-ada');
    // §3.4.2.3: those without a value "are ordered last if ascending and first if descending".
    assert.deepEqual(
      ids(list({ sortBy: 'title', sortOrder: 'descending' })),
      ['u-linus', 'u-ada', 'u-alan', 'u-grace'],
      'none, then Countess, codebreaker, Admiral',
    );
  });

  it('gives only the attributes asked for, with schemas, id and meta always, and sub-attributes of those named by path (§3.9)', () => {
    const only = (...names: string[]) => project(USER_KIND, ADA, names, []);
    const always = { schemas: ADA['schemas'], id: 'u-ada', meta: ADA['meta'] };
    // §3.9: attributes "overriding the set of attributes that would be returned by default".
    assert.deepEqual(only('userName'), { ...always, userName: 'ada' });
    assert.deepEqual(only('USERNAME', `${USER_SCHEMA}:title`), { ...always, userName: 'ada', title: 'Countess' }, 'any case, the core URI or none');
    assert.deepEqual(only('name.givenName'), { ...always, name: { givenName: 'Ada' } });
    assert.deepEqual(only('emails.value'), { ...always, emails: [{ value: 'ada@home.example' }, { value: 'ada@work.example' }] });
    assert.deepEqual(only('name', 'name.givenName'), { ...always, name: ADA['name'] }, 'the whole attribute wins over a part');
    assert.deepEqual(only(`${ENTERPRISE_SCHEMA}:department`), { ...always, [ENTERPRISE_SCHEMA]: { department: 'Engines' } });
    assert.deepEqual(only(ENTERPRISE_SCHEMA), { ...always, [ENTERPRISE_SCHEMA]: ADA[ENTERPRISE_SCHEMA] }, 'the extension by its URI');
    assert.deepEqual(only('nickName'), always, 'an attribute it has not: nothing more');
    assert.deepEqual(project(USER_KIND, ADA, [], []), ADA, 'none asked: the resource as it is');
  });

  it('leaves out the attributes excluded, never schemas, id or meta (§3.9)', () => {
    const without = (...names: string[]) => project(USER_KIND, ADA, [], names);
    const { emails: _emails, title: _title, ...rest } = ADA;
    assert.deepEqual(without('emails', 'TITLE'), rest);
    // §3.9: excludedAttributes "SHALL have no effect on attributes whose schema "returned" setting is "always"".
    assert.deepEqual(without('id', 'schemas', 'meta'), ADA);
    assert.deepEqual(without(`${ENTERPRISE_SCHEMA}:department`)[ENTERPRISE_SCHEMA], { employeeNumber: '1815' });
    const { [ENTERPRISE_SCHEMA]: _extension, ...core } = ADA;
    assert.deepEqual(without(`${ENTERPRISE_SCHEMA}:department`, `${ENTERPRISE_SCHEMA}:employeeNumber`), core, 'an extension left empty: left out');
    // Named as attributes names them (§3.9, §3.10): with the core schema's URI, an extension by its URI, a sub-attribute by its path.
    assert.deepEqual(without(`${USER_SCHEMA}:title`, `${USER_SCHEMA}:emails`), rest, 'the core URI or none');
    assert.deepEqual(without(ENTERPRISE_SCHEMA), core, 'the extension by its URI: all of it');
    assert.deepEqual(without('name.givenName')['name'], { familyName: 'Lovelace' });
    assert.deepEqual(
      without('emails.type', 'EMAILS.PRIMARY')['emails'],
      [{ value: 'ada@home.example' }, { value: 'ada@work.example' }],
      'a sub-attribute of each value of a multi-valued one',
    );
    const { name: _name, ...unnamed } = ADA;
    assert.deepEqual(without(`${USER_SCHEMA}:name.familyName`, 'name.givenName'), unnamed, 'every sub-attribute it has excluded: left out');
    assert.deepEqual(
      project(USER_KIND, ADA, ['userName'], ['userName']),
      { schemas: ADA['schemas'], id: 'u-ada', meta: ADA['meta'], userName: 'ada' },
      'attributes, when given, decide',
    );
    const group: Json = { schemas: [GROUP_SCHEMA], id: 'g1', displayName: 'Engines', members: [{ value: 'u-ada' }], meta: {} };
    // Entra ID and Okta list groups with excludedAttributes=members.
    assert.deepEqual(project(GROUP_KIND, group, [], ['members']), { schemas: [GROUP_SCHEMA], id: 'g1', displayName: 'Engines', meta: {} });
  });

  it("answers a page the database found as a ListResponse, each resource projected, totalResults the database's", () => {
    const parsed = parseQuery(USER_KIND, { startIndex: '5', count: '2', attributes: 'userName' });
    assert.deepEqual(pageResponse(USER_KIND, [ADA], 7, parsed), {
      schemas: [LIST_SCHEMA],
      totalResults: 7,
      startIndex: 5,
      itemsPerPage: 1,
      Resources: [{ schemas: ADA['schemas'], id: 'u-ada', userName: 'ada', meta: ADA['meta'] }],
    });
  });
});
