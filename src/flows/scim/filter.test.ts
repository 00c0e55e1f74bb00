import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ScimError } from './errors.ts';
import { checkFilter, MAX_FILTER_LENGTH, matches, parseFilter, parsePatchPath, type FilterContext } from './filter.ts';
import { ENTERPRISE_SCHEMA, ruleOf, USER_KIND, USER_SCHEMA } from './schema.ts';

const context: FilterContext = { coreSchema: USER_SCHEMA, rule: (path) => ruleOf(USER_KIND, path) };

const ada = {
  schemas: [USER_SCHEMA, ENTERPRISE_SCHEMA],
  id: '2819c223-7f76-453a-919d-413861904646',
  externalId: 'ABC',
  userName: 'Ada@Example.com',
  name: { formatted: 'Ada Lovelace', familyName: 'Lovelace', givenName: 'Ada' },
  displayName: 'Ada Lovelace',
  title: 'Analyst',
  active: true,
  emails: [
    { value: 'ada@work.example', type: 'work', primary: true },
    { value: 'ada@home.example', type: 'home' },
  ],
  meta: { resourceType: 'User', created: '2026-01-01T00:00:00.000Z', lastModified: '2026-03-01T12:00:00.000Z' },
  [ENTERPRISE_SCHEMA]: { department: 'Engines', manager: { value: 'm-1' } },
};

const refused = (filter: string, scimType = 'invalidFilter') => {
  assert.throws(
    () => {
      const parsed = parseFilter(filter);
      checkFilter(parsed, context);
      matches(ada, parsed, context);
    },
    (error: unknown) => error instanceof ScimError && error.status === 400 && error.scimType === scimType,
    filter,
  );
};
const holds = (filter: string, expected = true) => {
  const parsed = parseFilter(filter);
  checkFilter(parsed, context);
  assert.equal(matches(ada, parsed, context), expected, filter);
};

describe('RFC 7644 §3.4.2.2 filters', () => {
  it('compares with each operator, attribute names and operators without regard to case', () => {
    holds('userName eq "ada@example.com"');
    holds('USERNAME EQ "ADA@EXAMPLE.COM"');
    holds('userName ne "grace@example.com"');
    holds('name.familyName co "love"');
    holds('userName sw "ada"');
    holds('userName ew ".com"');
    holds('title gt "A"');
    holds('title lt "B"');
    holds('title ge "Analyst"');
    holds('title le "Analyst"');
    holds('title gt "Z"', false);
    holds('meta.lastModified gt "2026-02-01T00:00:00Z"');
    holds('meta.lastModified lt "2026-02-01T00:00:00Z"', false);
    holds('active eq true');
    holds('active eq false', false);
    holds('title pr');
    holds('nickName pr', false);
  });

  it('keeps case where the schema says case matters (caseExact)', () => {
    holds('externalId eq "ABC"');
    holds('externalId eq "abc"', false);
  });

  it('gives not, and, or their precedence, with parentheses grouping', () => {
    holds('title eq "x" or title eq "Analyst" and active eq true');
    holds('(title eq "x" or title eq "Analyst") and active eq false', false);
    holds('not (active eq false)');
    holds('not(title eq "Analyst") or userName sw "ada"');
    holds('title eq "x" or not (title eq "y") and active eq true');
  });

  it('compares a multi-valued attribute by any value, and a complex one by its value', () => {
    holds('emails co "home.example"');
    holds('emails.value eq "ada@work.example"');
    holds('emails.type eq "home"');
    holds('emails[type eq "work" and value co "@work"]');
    holds('emails[type eq "home" and primary eq true]', false);
    holds('emails[not (type eq "work")]');
  });

  it('reads an extension attribute by its schema URI', () => {
    holds(`${ENTERPRISE_SCHEMA}:department eq "engines"`);
    holds(`${ENTERPRISE_SCHEMA}:manager.value eq "m-1"`);
    holds(`${USER_SCHEMA}:userName sw "ADA"`);
  });

  it('reads strings as JSON strings, escapes and all', () => {
    holds('name.formatted eq "Ada\\u0020Lovelace"');
    holds('title eq "An\\"alyst"', false);
  });

  it('refuses what the grammar does not allow with invalidFilter', () => {
    for (const filter of [
      '',
      'userName',
      'userName eq',
      'userName eq ada',
      'userName eq "ada',
      'userName xx "a"',
      '(userName eq "a"',
      'userName eq "a")',
      'userName eq "a" and',
      'emails[type eq "work"',
      'emails[]',
      'not userName eq "a"',
      'a.b.c eq "x"',
      'userName eq "a" "b"',
      'userName @ "a"',
      '1abc eq "a"',
      'emails[type eq "work"].value eq "x"',
      'emails[type[value eq "x"] eq "y"]',
    ])
      refused(filter);
  });

  it('refuses attributes there are not, and comparisons that do not apply, before reading any resource', () => {
    for (const filter of [
      'shoeSize eq "9"',
      'name.nothing eq "x"',
      'urn:example:nothing:attr eq "x"',
      'active gt true',
      'active eq "yes"',
      'title gt 3',
      'meta.created gt "not a time"',
      'title co null',
    ])
      refused(filter);
  });

  it('refuses a filter nested past its bound, or longer than its bound', () => {
    refused(`${'('.repeat(60)}title pr${')'.repeat(60)}`);
    refused(`title eq "${'x'.repeat(5000)}"`);
  });

  it('takes a filter of exactly 4096 characters and refuses one of 4097 (invalidFilter)', () => {
    const longest = `title eq "${'x'.repeat(MAX_FILTER_LENGTH - 'title eq ""'.length)}"`;
    assert.equal(longest.length, MAX_FILTER_LENGTH);
    checkFilter(parseFilter(longest), context);
    refused(`title eq "${'x'.repeat(MAX_FILTER_LENGTH + 1 - 'title eq ""'.length)}"`);
  });

  it('finds no exception but invalidFilter over random filters (a fuzzer)', () => {
    const pieces = [
      'userName',
      'emails',
      'emails.value',
      'title',
      'active',
      'meta.created',
      `${ENTERPRISE_SCHEMA}:department`,
      'eq',
      'ne',
      'co',
      'sw',
      'ew',
      'gt',
      'ge',
      'lt',
      'le',
      'pr',
      'and',
      'or',
      'not',
      '(',
      ')',
      '[',
      ']',
      '"x"',
      '"',
      '\\',
      '1',
      '-2.5e3',
      'true',
      'false',
      'null',
      ' ',
      '.',
      ':',
      'urn:',
      '\u0000',
      '"\\u12"',
      '%',
      'type',
      'emails[type',
      '"a\\"b"',
    ];
    let seed = 47;
    const random = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    for (let run = 0; run < 5000; run += 1) {
      const length = 1 + Math.floor(random() * 12);
      const filter = Array.from({ length }, () => pieces[Math.floor(random() * pieces.length)]!).join(random() < 0.7 ? ' ' : '');
      try {
        const parsed = parseFilter(filter);
        checkFilter(parsed, context);
        matches(ada, parsed, context);
      } catch (error) {
        assert.ok(error instanceof ScimError && error.status === 400 && error.scimType === 'invalidFilter', `${JSON.stringify(filter)}: ${String(error)}`);
      }
    }
  });
});

describe('RFC 7644 §3.5.2 PATCH paths', () => {
  it('reads an attribute, a sub-attribute, and a value filter with a sub-attribute after it', () => {
    assert.deepEqual(parsePatchPath('active'), { path: { uri: null, name: 'active', sub: null }, filter: null, subAfter: null });
    assert.deepEqual(parsePatchPath('name.givenName'), { path: { uri: null, name: 'name', sub: 'givenName' }, filter: null, subAfter: null });
    const work = parsePatchPath('emails[type eq "work"].value');
    assert.equal(work.subAfter, 'value');
    assert.deepEqual(work.filter, { kind: 'compare', op: 'eq', path: { uri: null, name: 'type', sub: null }, value: 'work' });
    assert.deepEqual(parsePatchPath(`${ENTERPRISE_SCHEMA}:manager`).path, { uri: ENTERPRISE_SCHEMA, name: 'manager', sub: null });
    assert.deepEqual(parsePatchPath('members[value eq "2819c223"]').subAfter, null);
  });

  it('refuses what is not a path with invalidPath', () => {
    for (const path of ['', '[', 'emails[', 'emails[type eq "work"]value', 'emails[type eq "work"].value.x', 'emails.value[type eq "work"]', 'a b', '"x"']) {
      assert.throws(
        () => parsePatchPath(path),
        (error: unknown) => error instanceof ScimError && error.scimType === 'invalidPath',
        path,
      );
    }
  });
});
