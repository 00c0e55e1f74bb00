/**
 * SCIM PATCH (RFC 7644 §3.5.2) as a pure function: each operation applied to a User or Group
 * resource as SCIM renders it, with the forms Entra ID and Okta send beside the RFC's own, and
 * each malformed operation or read-only target refused with its scimType. test/scim.test.ts
 * sends the same through the API, with the clients' own requests.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ScimError } from './errors.ts';
import { applyPatch, MAX_PATCH_OPERATIONS, readOperations } from './patch.ts';
import { ENTERPRISE_SCHEMA, GROUP_KIND, PATCH_SCHEMA, USER_KIND } from './schema.ts';

type Json = Record<string, unknown>;

const ADA: Json = {
  schemas: ['urn:ietf:params:scim:schemas:core:2.0:User'],
  id: 'user-1',
  userName: 'ada',
  name: { givenName: 'Ada', familyName: 'Byron' },
  active: true,
  emails: [{ value: 'ada@home.example', type: 'home', primary: true }],
  groups: [{ value: 'group-1', display: 'Engines' }],
};

const patch = (resource: Json, ...operations: Json[]) => applyPatch(resource, USER_KIND, readOperations({ schemas: [PATCH_SCHEMA], Operations: operations }));

/** The scimType `run` fails with (400 each). */
function refusal(run: () => unknown): string | null {
  try {
    run();
  } catch (error) {
    if (error instanceof ScimError) {
      assert.equal(error.status, 400);
      return error.scimType;
    }
    throw error;
  }
  return 'applied';
}

describe('SCIM PATCH (RFC 7644 §3.5.2)', () => {
  it('applies add, replace and remove by path, the RFC way and the ways Entra ID and Okta send them', () => {
    const cases: [string, Json[], (result: Json) => unknown, unknown][] = [
      ['replace a simple attribute', [{ op: 'replace', path: 'displayName', value: 'Countess' }], (r) => r['displayName'], 'Countess'],
      ['"Replace" in any case (Entra ID)', [{ op: 'Replace', path: 'displayName', value: 'Countess' }], (r) => r['displayName'], 'Countess'],
      [
        'a sub-attribute, the rest kept',
        [{ op: 'replace', path: 'name.familyName', value: 'Lovelace' }],
        (r) => r['name'],
        { givenName: 'Ada', familyName: 'Lovelace' },
      ],
      [
        'a complex value: its sub-attributes given, the others kept',
        [{ op: 'replace', path: 'name', value: { familyName: 'King' } }],
        (r) => r['name'],
        { givenName: 'Ada', familyName: 'King' },
      ],
      ['"False" for a boolean (Entra ID)', [{ op: 'replace', path: 'active', value: 'False' }], (r) => r['active'], false],
      [
        'add to a multi-valued attribute, a value already there not twice',
        [
          {
            op: 'add',
            path: 'emails',
            value: [
              { value: 'ada@work.example', type: 'work' },
              { value: 'ada@home.example', type: 'home', primary: true },
            ],
          },
        ],
        (r) => (r['emails'] as Json[]).map((email) => email['value']),
        ['ada@home.example', 'ada@work.example'],
      ],
      [
        'replace a selected value’s sub-attribute',
        [{ op: 'replace', path: 'emails[type eq "home"].value', value: 'ada@new.example' }],
        (r) => (r['emails'] as Json[])[0]!['value'],
        'ada@new.example',
      ],
      [
        'replace emails[type eq "work"].value with no work address yet: one is made (Entra ID)',
        [{ op: 'replace', path: 'emails[type eq "work"].value', value: 'ada@work.example' }],
        (r) => (r['emails'] as Json[]).find((email) => email['type'] === 'work'),
        { type: 'work', value: 'ada@work.example' },
      ],
      ['remove the values a filter selects', [{ op: 'remove', path: 'emails[type eq "home"]' }], (r) => r['emails'], []],
      [
        'replace a selected value whole: sub-attributes not given are gone',
        [{ op: 'replace', path: 'emails[type eq "home"]', value: { value: 'ada@new.example', type: 'home' } }],
        (r) => r['emails'],
        [{ value: 'ada@new.example', type: 'home' }],
      ],
      [
        'remove a sub-attribute of the selected values, the values kept',
        [{ op: 'remove', path: 'emails[type eq "home"].primary' }],
        (r) => r['emails'],
        [{ value: 'ada@home.example', type: 'home' }],
      ],
      [
        'remove an attribute',
        [
          { op: 'remove', path: 'displayName' },
          { op: 'remove', path: 'name.givenName' },
        ],
        (r) => [r['displayName'], r['name']],
        [undefined, { familyName: 'Byron' }],
      ],
      [
        'replace without a path: attributes by name and by path (Entra ID)',
        [{ op: 'replace', value: { displayName: 'Ada', 'name.givenName': 'Augusta', active: 'True' } }],
        (r) => [r['displayName'], (r['name'] as Json)['givenName'], r['active']],
        ['Ada', 'Augusta', true],
      ],
      [
        'the enterprise extension, by its URI path and without a path',
        [
          { op: 'add', path: `${ENTERPRISE_SCHEMA}:department`, value: 'R&D' },
          { op: 'add', value: { [ENTERPRISE_SCHEMA]: { employeeNumber: '42' } } },
        ],
        (r) => r[ENTERPRISE_SCHEMA],
        { department: 'R&D', employeeNumber: '42' },
      ],
      [
        'a read-only attribute given without a path is ignored (RFC 7643 §7; Okta sends the id)',
        [{ op: 'replace', value: { id: 'other', displayName: 'Ada' } }],
        (r) => [r['id'], r['displayName']],
        ['user-1', 'Ada'],
      ],
      [
        'operations in order, all on one copy',
        [
          { op: 'add', path: 'nickName', value: 'A' },
          { op: 'replace', path: 'nickName', value: 'B' },
        ],
        (r) => r['nickName'],
        'B',
      ],
    ];
    for (const [what, operations, read, expected] of cases) assert.deepEqual(read(patch(ADA, ...operations)), expected, what);
    assert.deepEqual(ADA['name'], { givenName: 'Ada', familyName: 'Byron' }, 'the resource given is left as it was');
  });

  it("removes a group's members by path filter or, as Entra ID and Okta send it, by value", () => {
    const group: Json = { id: 'group-1', displayName: 'Engines', members: [{ value: 'u1' }, { value: 'u2' }, { value: 'u3' }] };
    const members = (operations: Json[]) =>
      (applyPatch(group, GROUP_KIND, readOperations({ Operations: operations }))['members'] as Json[]).map((member) => member['value']);
    assert.deepEqual(members([{ op: 'remove', path: 'members[value eq "u2"]' }]), ['u1', 'u3']);
    assert.deepEqual(members([{ op: 'remove', path: 'members', value: [{ value: 'u1' }, { value: 'u3' }] }]), ['u2']);
    assert.deepEqual(members([{ op: 'add', path: 'members', value: [{ value: 'u4' }] }]), ['u1', 'u2', 'u3', 'u4']);
  });

  it('refuses each malformed operation and read-only target with the scimType RFC 7644 §3.12 names', () => {
    const read = (body: unknown) => () => readOperations(body);
    const apply =
      (...operations: Json[]) =>
      () =>
        patch(ADA, ...operations);
    const cases: [string, () => unknown, string][] = [
      ['no Operations', read({ schemas: [PATCH_SCHEMA] }), 'invalidSyntax'],
      ['an empty list', read({ Operations: [] }), 'invalidSyntax'],
      [
        `more than ${MAX_PATCH_OPERATIONS}`,
        read({ Operations: Array.from({ length: MAX_PATCH_OPERATIONS + 1 }, () => ({ op: 'remove', path: 'nickName' })) }),
        'tooMany',
      ],
      ['an operation that is not an object', read({ Operations: ['remove'] }), 'invalidSyntax'],
      ['an unknown op', read({ Operations: [{ op: 'move', path: 'nickName' }] }), 'invalidSyntax'],
      ['a path that is not text', read({ Operations: [{ op: 'remove', path: 7 }] }), 'invalidPath'],
      ['remove without a path (§3.5.2.3)', read({ Operations: [{ op: 'remove' }] }), 'noTarget'],
      ['add without a value', read({ Operations: [{ op: 'add', path: 'nickName' }] }), 'invalidValue'],
      ['an attribute of no schema', apply({ op: 'replace', path: 'shoeSize', value: 42 }), 'invalidPath'],
      ['a read-only attribute', apply({ op: 'replace', path: 'groups', value: [] }), 'mutability'],
      ['a read-only sub-attribute of a writable attribute', apply({ op: 'replace', path: 'emails.display', value: 'Home' }), 'mutability'],
      ['the same sub-attribute of the values a filter selects', apply({ op: 'replace', path: 'emails[type eq "home"].display', value: 'Home' }), 'mutability'],
      ['a filter on a simple attribute', apply({ op: 'replace', path: 'displayName[value eq "x"]', value: 'y' }), 'invalidPath'],
      ['a filter no value matches, not an equality to make one of', apply({ op: 'replace', path: 'emails[value sw "x"].value', value: 'y' }), 'noTarget'],
      ['a selected value replaced by a string', apply({ op: 'replace', path: 'emails[type eq "home"]', value: 'ada@x.example' }), 'invalidValue'],
      ['replace without a path, the value not an object', apply({ op: 'replace', value: 'Ada' }), 'invalidValue'],
    ];
    for (const [what, run, scimType] of cases) assert.equal(refusal(run), scimType, what);
  });
});
