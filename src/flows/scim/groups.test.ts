/**
 * SCIM Groups (RFC 7644 §3.3-§3.6 over RFC 7643 §4.2) over the flow world, without HTTP: a
 * Group made, read, replaced, patched (members added and removed as Entra ID and Okta send
 * them) and deleted as a provisioning system does; what it answers (members with value, $ref
 * and display; meta.version), what the store holds afterwards (the memberships the `groups`
 * claim is read from), the event each change records, If-Match (§3.14: 412 when stale), a
 * displayName unique without regard to case (409 uniqueness), and members that are no User
 * refused (400 invalidValue) with nothing written. PATCH itself is patch.test.ts's;
 * test/scim.test.ts and test/scim-providers.test.ts send the same through the API, with
 * Entra ID's and Okta's own requests.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { flowWorld, scimRefusal, scimVersionOf, type FlowWorld } from '../../../test/helpers/flows.ts';
import type { UserRecord } from '../../store/types.ts';
import type { ScimError } from './errors.ts';
import {
  createGroupResource,
  deleteGroupResource,
  getGroupResource,
  groupResourcesOf,
  MAX_GROUP_MEMBERS,
  patchGroupResource,
  replaceGroupResource,
} from './groups.ts';
import { GROUP_SCHEMA, PATCH_SCHEMA } from './schema.ts';
import { READ_EACH_UP_TO, type ScimDeps } from './users.ts';

type Json = Record<string, unknown>;

const BASE = 'https://auth.example.com/scim/v2';

const memberIds = (resource: Json) => ((resource['members'] as Json[] | undefined) ?? []).map((member) => member['value']);
const patchOf = (...operations: Json[]): Json => ({ schemas: [PATCH_SCHEMA], Operations: operations });

describe('SCIM Groups (RFC 7644)', () => {
  let world: FlowWorld;
  let deps: ScimDeps;
  let ada: UserRecord;
  let alan: UserRecord;
  let grace: UserRecord;

  before(async () => {
    world = await flowWorld();
    deps = { ...world.manage, base: BASE };
    ada = await world.addUser({ username: 'ada' });
    alan = await world.addUser({ username: 'alan' });
    grace = await world.addUser({ username: 'grace' });
  });
  after(() => world.close());

  const group = (fields: Json = {}): Json => ({ schemas: [GROUP_SCHEMA], displayName: 'Engineers', ...fields });
  /** The details of the events of `type` about group `id`, oldest first. */
  const events = async (type: string, id: string) =>
    (await world.store.events.list({ type: type as never, limit: 500 }))
      .filter((event) => event.detail['group'] === id)
      .reverse()
      .map((event) => event.detail);
  /** What the store holds of a group: its name, external id, version and members. */
  const held = async (id: string) => {
    const record = await world.store.groups.get(id);
    return record === null
      ? null
      : { name: record.displayName, externalId: record.externalId, at: record.updatedAt, members: await world.store.groups.members(id) };
  };

  it('makes a Group with its members, answering it as RFC 7643 §4.2 renders it and as it reads it back', async () => {
    world.clock.advance(1000);
    const made = await createGroupResource(
      deps,
      // Entra ID sends its own schema beside the core one, and `meta` (read-only: ignored).
      group({
        displayName: '  Analytical Engines  ',
        externalId: 'entra-g1',
        members: [{ value: alan.id }, { value: ada.id, display: 'whatever' }, { value: ada.id }],
        meta: { resourceType: 'Group' },
      }),
    );
    const id = String(made['id']);
    const now = new Date(world.clock.now()).toISOString();
    assert.deepEqual(made, {
      schemas: [GROUP_SCHEMA],
      id,
      externalId: 'entra-g1',
      displayName: 'Analytical Engines',
      // RFC 7643 §4.2: 'The "value" sub-attribute contains the value of an "id" attribute of a SCIM resource, and the "$ref"
      // sub-attribute must be the URI of a SCIM resource such as a "User"'; each member once, its display the User's name.
      members: [
        { value: ada.id, $ref: `${BASE}/Users/${ada.id}`, display: 'ada', type: 'User' },
        { value: alan.id, $ref: `${BASE}/Users/${alan.id}`, display: 'alan', type: 'User' },
      ],
      // RFC 7644 §3.14: ETags "SHOULD be specified within the "version" attribute contained in the resource's "meta" attribute".
      meta: { resourceType: 'Group', created: now, lastModified: now, location: `${BASE}/Groups/${id}`, version: `W/"${world.clock.now()}"` },
    });
    assert.deepEqual(await getGroupResource(deps, id), made, '§3.4.1: the same when read back');
    assert.deepEqual(await held(id), { name: 'Analytical Engines', externalId: 'entra-g1', at: world.clock.now(), members: [ada.id, alan.id] });
    assert.deepEqual(await world.store.groups.namesOf(ada.id), ['Analytical Engines'], 'in their groups claim');
    assert.deepEqual(await events('group.created', id), [{ group: id, name: 'Analytical Engines', members: 2, by: 'scim' }]);

    const empty = await createGroupResource(deps, group({ displayName: 'Nobody Yet', members: [] }));
    // RFC 7643 §2.5: "Unassigned attributes, the null value, or empty array ... SHALL be considered to be equivalent in "state"".
    assert.equal('members' in empty, false, 'no members: no members attribute');
    assert.equal('externalId' in empty, false);
    assert.deepEqual(await events('group.created', String(empty['id'])), [{ group: empty['id'], name: 'Nobody Yet', members: 0, by: 'scim' }]);
  });

  it('refuses a Group that is not one, or whose members are not Users, with 400 and its scimType, keeping nothing', async () => {
    const long = await world.addUser({ id: 'u'.repeat(201), username: 'long.id' });
    const groups = (await world.store.groups.list()).length;
    const made = (await world.store.events.list({ type: 'group.created', limit: 500 })).length;
    const cases: [string, unknown, string][] = [
      ['a list, not an object (§3.12)', [group()], 'invalidSyntax'],
      ['null', null, 'invalidSyntax'],
      ['text', 'Engineers', 'invalidSyntax'],
      ['no displayName (RFC 7643 §4.2: required)', { schemas: [GROUP_SCHEMA] }, 'invalidValue'],
      ['a blank displayName', group({ displayName: '  ' }), 'invalidValue'],
      ['a displayName that is not text', group({ displayName: 7 }), 'invalidValue'],
      ['a displayName past 200 characters', group({ displayName: 'G'.repeat(201) }), 'invalidValue'],
      ['a displayName with a control character', group({ displayName: 'Engi\nneers' }), 'invalidValue'],
      ['a NUL character anywhere', group({ displayName: 'Ghosts', externalId: 'x\u0000' }), 'invalidValue'],
      ['an externalId that is not text', group({ displayName: 'Ghosts', externalId: 7 }), 'invalidValue'],
      ['an externalId past 256 characters', group({ displayName: 'Ghosts', externalId: 'e'.repeat(257) }), 'invalidValue'],
      ['members not a list', group({ displayName: 'Ghosts', members: { value: ada.id } }), 'invalidValue'],
      ['a member that is not an object', group({ displayName: 'Ghosts', members: [ada.id] }), 'invalidValue'],
      ['a member without a value', group({ displayName: 'Ghosts', members: [{ display: 'ada' }] }), 'invalidValue'],
      ['a member whose value is empty', group({ displayName: 'Ghosts', members: [{ value: '' }] }), 'invalidValue'],
      [
        'a member whose value is past 200 characters, though an account has that id',
        group({ displayName: 'Ghosts', members: [{ value: long.id }] }),
        'invalidValue',
      ],
      ['a member that is no User', group({ displayName: 'Ghosts', members: [{ value: ada.id }, { value: 'no-such-user' }] }), 'invalidValue'],
      ['a member by username, not by id', group({ displayName: 'Ghosts', members: [{ value: 'ada' }] }), 'invalidValue'],
      [
        `more than ${MAX_GROUP_MEMBERS} members`,
        group({ displayName: 'Ghosts', members: Array.from({ length: MAX_GROUP_MEMBERS + 1 }, () => ({ value: ada.id })) }),
        'invalidValue',
      ],
    ];
    for (const [what, body, scimType] of cases) assert.deepEqual(await scimRefusal(createGroupResource(deps, body)), [400, scimType], what);
    assert.equal((await world.store.groups.list()).length, groups, 'no group kept');
    assert.equal((await world.store.events.list({ type: 'group.created', limit: 500 })).length, made, 'no event');
    assert.deepEqual(await world.store.groups.namesOf(ada.id), ['Analytical Engines'], 'no membership kept');
    const longest = await createGroupResource(deps, group({ displayName: ` ${'G'.repeat(200)} `, externalId: 'e'.repeat(256) }));
    assert.equal(longest['displayName'], 'G'.repeat(200), 'exactly 200 characters, counted trimmed');
  });

  it('keeps displayName unique without regard to case: 409 uniqueness on create, replace and patch, the other group as it was', async () => {
    const kept = await createGroupResource(deps, group({ displayName: 'Operators', members: [{ value: grace.id }] }));
    const other = await createGroupResource(deps, group({ displayName: 'Readers' }));
    const otherId = String(other['id']);
    // RFC 7644 §3.3: "If the service provider determines that the creation of the requested resource conflicts with existing
    // resources (e.g., a 'User' resource with a duplicate 'userName'), the service provider MUST return HTTP status code 409
    // (Conflict) with a 'scimType' error code of 'uniqueness'".
    assert.deepEqual(await scimRefusal(createGroupResource(deps, group({ displayName: 'OPERATORS' }))), [409, 'uniqueness']);
    assert.deepEqual(await scimRefusal(createGroupResource(deps, group({ displayName: ' operators ' }))), [409, 'uniqueness'], 'trimmed first');
    assert.deepEqual(await scimRefusal(replaceGroupResource(deps, otherId, group({ displayName: 'operators' }), null)), [409, 'uniqueness']);
    assert.deepEqual(
      await scimRefusal(patchGroupResource(deps, otherId, patchOf({ op: 'replace', path: 'displayName', value: 'Operators' }), scimVersionOf(other))),
      [409, 'uniqueness'],
    );
    assert.deepEqual(await getGroupResource(deps, otherId), other, 'the renamed one as it was');
    assert.deepEqual(await getGroupResource(deps, String(kept['id'])), kept, 'the other one as it was');
    assert.deepEqual(await events('group.updated', otherId), [], 'no event');
    world.clock.advance(1000);
    const recased = await replaceGroupResource(deps, String(kept['id']), group({ displayName: 'OPERATORS', members: [{ value: grace.id }] }), null);
    assert.equal(recased['displayName'], 'OPERATORS', 'its own name in another case is no conflict');
  });

  it('replaces a Group (PUT, §3.5.1): its name, externalId and members as given, what is not given cleared, one event saying what changed', async () => {
    const made = await createGroupResource(deps, group({ displayName: 'Replaced', externalId: 'okta-r', members: [{ value: ada.id }, { value: alan.id }] }));
    const id = String(made['id']);
    world.clock.advance(1000);
    const replaced = await replaceGroupResource(
      deps,
      id,
      group({ displayName: 'Replaced Again', members: [{ value: alan.id }, { value: grace.id }] }),
      scimVersionOf(made),
    );
    assert.equal(replaced['displayName'], 'Replaced Again');
    // §3.5.1: "Attributes whose mutability is "readWrite" ... that are omitted from the request body MAY be assumed to be not
    // asserted by the client"; this server clears them (externalId is readWrite).
    assert.equal('externalId' in replaced, false, 'not given: cleared');
    assert.deepEqual(memberIds(replaced), [alan.id, grace.id]);
    assert.deepEqual((replaced['members'] as Json[])[1], { value: grace.id, $ref: `${BASE}/Users/${grace.id}`, display: 'grace', type: 'User' });
    assert.equal(scimVersionOf(replaced), world.clock.now(), 'a new version');
    assert.equal((replaced['meta'] as Json)['created'], (made['meta'] as Json)['created'], 'created kept');
    assert.equal((replaced['meta'] as Json)['lastModified'], new Date(world.clock.now()).toISOString());
    assert.deepEqual(await held(id), { name: 'Replaced Again', externalId: null, at: world.clock.now(), members: [alan.id, grace.id] });
    assert.deepEqual(await events('group.updated', id), [
      { group: id, name: 'Replaced Again', fields: 'displayName externalId members', members_added: 1, members_removed: 1, by: 'scim' },
    ]);
    world.clock.advance(1000);
    await replaceGroupResource(deps, id, group({ displayName: 'Replaced Again', members: [{ value: grace.id }, { value: alan.id }] }), null);
    assert.deepEqual(
      (await events('group.updated', id)).at(-1),
      {
        group: id,
        name: 'Replaced Again',
        fields: '',
        members_added: 0,
        members_removed: 0,
        by: 'scim',
      },
      'the same members in another order: nothing changed but the version',
    );
    await replaceGroupResource(deps, id, group({ displayName: 'Replaced Again' }), null);
    assert.deepEqual(await held(id).then((it) => it?.members), [], 'no members given: none left');
    assert.deepEqual(await world.store.groups.namesOf(grace.id), ['OPERATORS'], 'her other group kept');
  });

  it('changes a Group only at the version If-Match names: 412 for a stale or foreign one, nothing written (§3.14)', async () => {
    const made = await createGroupResource(deps, group({ displayName: 'Versioned', members: [{ value: ada.id }] }));
    const id = String(made['id']);
    const version = scimVersionOf(made)!;
    // The clock does not move: each change still moves the version on, so the one read before is stale.
    const first = await patchGroupResource(deps, id, patchOf({ op: 'add', path: 'members', value: [{ value: alan.id }] }), version);
    assert.ok(scimVersionOf(first)! > version, 'a new version though no time passed');
    const before = await held(id);
    // §3.12, Table 8: "412 | PRECONDITION FAILED | PUT, PATCH, DELETE | Failed to update. Resource has changed on the server."
    const stale: [string, Promise<unknown>][] = [
      ['PUT at the version read before', replaceGroupResource(deps, id, group({ displayName: 'Versioned', members: [] }), version)],
      ['PATCH at the version read before', patchGroupResource(deps, id, patchOf({ op: 'remove', path: 'members' }), version)],
      [
        'PATCH at a version it never gave (-1: ifMatchVersion of another entity tag)',
        patchGroupResource(deps, id, patchOf({ op: 'remove', path: 'members' }), -1),
      ],
      ['DELETE at the version read before', deleteGroupResource(deps, id, version)],
      ['DELETE at a later version', deleteGroupResource(deps, id, scimVersionOf(first)! + 1)],
    ];
    for (const [what, run] of stale) assert.deepEqual(await scimRefusal(run), [412, null], what);
    assert.deepEqual(await held(id), before, 'nothing written');
    assert.equal((await events('group.updated', id)).length, 1, 'the one change alone recorded');
    assert.deepEqual(await events('group.removed', id), []);
    const changed = await patchGroupResource(deps, id, patchOf({ op: 'remove', path: 'members' }), scimVersionOf(first));
    assert.equal('members' in changed, false, 'at the version read: done');
  });

  it('lets one of two changes made at once through, the other 412, even without If-Match', async () => {
    const made = await createGroupResource(deps, group({ displayName: 'Raced' }));
    const id = String(made['id']);
    const add = (user: UserRecord) => patchGroupResource(deps, id, patchOf({ op: 'add', path: 'members', value: [{ value: user.id }] }), null);
    const outcomes = await Promise.allSettled([add(ada), add(alan)]);
    assert.deepEqual(outcomes.map((outcome) => outcome.status).sort(), ['fulfilled', 'rejected']);
    const lost = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult;
    assert.equal((lost.reason as ScimError).status, 412, 'read again and applied: no member lost unseen');
    assert.equal((await held(id))?.members.length, 1);
    assert.equal((await events('group.updated', id)).length, 1);
  });

  it("patches members (§3.5.2) in Entra ID's and Okta's forms, the store holding the members after each", async () => {
    const made = await createGroupResource(deps, group({ displayName: 'Patched', externalId: 'entra-p', members: [{ value: ada.id }] }));
    const id = String(made['id']);
    const steps: [string, Json, string[], Json][] = [
      [
        // §3.5.2.1: "If the target location specifies a multi-valued attribute, a new value is added to the attribute"; Entra ID sends
        // "Add" and a null $ref.
        'Entra ID: "Add" members with a null $ref',
        patchOf({ op: 'Add', path: 'members', value: [{ $ref: null, value: alan.id }] }),
        [ada.id, alan.id],
        { fields: 'members', members_added: 1, members_removed: 0 },
      ],
      [
        // Okta sends the member's display, and a member already there is not one twice.
        'Okta: add members with their display, one already a member',
        patchOf({
          op: 'add',
          path: 'members',
          value: [
            { value: grace.id, display: 'grace' },
            { value: ada.id, display: 'ada' },
          ],
        }),
        [ada.id, alan.id, grace.id],
        { fields: 'members', members_added: 1, members_removed: 0 },
      ],
      [
        'Entra ID: "Remove" members by value',
        patchOf({ op: 'Remove', path: 'members', value: [{ $ref: null, value: ada.id }] }),
        [alan.id, grace.id],
        { fields: 'members', members_added: 0, members_removed: 1 },
      ],
      [
        // §3.5.2.2: "If the target location is a multi-valued attribute and a complex filter is specified ... the values matched by the filter are removed".
        'Okta: remove a member by a path filter',
        patchOf({ op: 'remove', path: `members[value eq "${alan.id}"]` }),
        [grace.id],
        { fields: 'members', members_added: 0, members_removed: 1 },
      ],
      [
        // §3.5.2.3: "If the target location is a multi-valued attribute and no filter is specified, the attribute and all values are replaced".
        'replace every member',
        patchOf({ op: 'replace', path: 'members', value: [{ value: ada.id }, { value: alan.id }] }),
        [ada.id, alan.id],
        { fields: 'members', members_added: 2, members_removed: 1 },
      ],
      [
        // Okta renames by "replace" without a path, the group's id beside its name (read-only: ignored).
        'Okta: rename by replace without a path, the members kept',
        patchOf({ op: 'replace', value: { id: 'another-id', displayName: 'Patched Renamed' } }),
        [ada.id, alan.id],
        { fields: 'displayName', members_added: 0, members_removed: 0 },
      ],
      [
        // §3.5.2.2: "If the target location is a multi-valued attribute and no filter is specified, the attribute and all values are removed".
        'remove every member',
        patchOf({ op: 'remove', path: 'members' }),
        [],
        { fields: 'members', members_added: 0, members_removed: 2 },
      ],
    ];
    for (const [what, body, expected, change] of steps) {
      world.clock.advance(1000);
      const answer = await patchGroupResource(deps, id, body, null);
      assert.deepEqual(memberIds(answer), expected, what);
      assert.deepEqual((await held(id))?.members, expected, `${what}: the store`);
      assert.equal(scimVersionOf(answer), world.clock.now(), `${what}: a new version`);
      assert.deepEqual(answer, await getGroupResource(deps, id), `${what}: answered as read back`);
      const { group: _group, name: _name, by, ...detail } = (await events('group.updated', id)).at(-1)!;
      assert.deepEqual({ ...detail, by }, { ...change, by: 'scim' }, `${what}: its event`);
    }
    const last = await getGroupResource(deps, id);
    assert.equal(last['displayName'], 'Patched Renamed');
    assert.equal(last['externalId'], 'entra-p', 'a PATCH keeps what it does not name');
    assert.equal(last['id'], id);
    assert.equal((await events('group.updated', id)).length, steps.length, 'one event a change');
  });

  it('refuses a PATCH that adds no User, or that SCIM refuses, with its scimType, writing nothing', async () => {
    const made = await createGroupResource(deps, group({ displayName: 'Guarded', members: [{ value: ada.id }] }));
    const id = String(made['id']);
    const cases: [string, unknown, number, string | null][] = [
      ['a member that is no User', patchOf({ op: 'add', path: 'members', value: [{ value: alan.id }, { value: 'no-such-user' }] }), 400, 'invalidValue'],
      ['members replaced by something else', patchOf({ op: 'replace', path: 'members', value: 'ada' }), 400, 'invalidValue'],
      ['the displayName removed (required)', patchOf({ op: 'remove', path: 'displayName' }), 400, 'invalidValue'],
      ['an attribute a Group has not', patchOf({ op: 'replace', path: 'userName', value: 'x' }), 400, 'invalidPath'],
      ['the id (read-only)', patchOf({ op: 'replace', path: 'id', value: 'x' }), 400, 'mutability'],
      ['no Operations', { schemas: [PATCH_SCHEMA] }, 400, 'invalidSyntax'],
    ];
    for (const [what, body, status, scimType] of cases) assert.deepEqual(await scimRefusal(patchGroupResource(deps, id, body, null)), [status, scimType], what);
    assert.deepEqual(await getGroupResource(deps, id), made, 'as it was');
    assert.deepEqual(await events('group.updated', id), []);
    assert.equal((await world.store.groups.namesOf(alan.id)).includes('Guarded'), false, 'alan not added');
  });

  it('answers 404 for a Group there is not (§3.12), whatever the operation, and for ids no group can have', async () => {
    const operations: [string, (id: string) => Promise<unknown>][] = [
      ['GET', (id) => getGroupResource(deps, id)],
      ['PUT', (id) => replaceGroupResource(deps, id, group({ displayName: 'Nowhere' }), null)],
      ['PATCH', (id) => patchGroupResource(deps, id, patchOf({ op: 'replace', path: 'displayName', value: 'Nowhere' }), null)],
      ['DELETE', (id) => deleteGroupResource(deps, id, null)],
    ];
    for (const id of ['no-such-group', ada.id, `${'g'.repeat(201)}`, 'a\u0000b'])
      for (const [what, run] of operations) assert.deepEqual(await scimRefusal(run(id)), [404, null], `${what} ${id.slice(0, 20)}`);
    assert.equal(
      (await world.store.groups.list()).some((one) => one.displayName === 'Nowhere'),
      false,
      'nothing made',
    );
  });

  it('deletes a Group at the version given: its memberships go, the event names it, and it is then not found (§3.6)', async () => {
    const made = await createGroupResource(deps, group({ displayName: 'Doomed', members: [{ value: ada.id }, { value: alan.id }] }));
    const id = String(made['id']);
    assert.ok((await world.store.groups.namesOf(alan.id)).includes('Doomed'));
    await deleteGroupResource(deps, id, scimVersionOf(made));
    // §3.6: service providers "MUST return a 404 (Not Found) error code for all operations associated with the previously deleted resource".
    assert.deepEqual(await scimRefusal(getGroupResource(deps, id)), [404, null]);
    assert.deepEqual(await scimRefusal(deleteGroupResource(deps, id, null)), [404, null], 'deleted twice');
    assert.equal(await held(id), null);
    assert.equal(
      (await world.store.groups.memberships()).some((membership) => membership.groupId === id),
      false,
      'no membership left',
    );
    assert.equal((await world.store.groups.namesOf(alan.id)).includes('Doomed'), false, 'no longer in their groups claim');
    assert.ok(await world.store.users.get(alan.id), 'the members themselves kept');
    assert.deepEqual(await events('group.removed', id), [{ group: id, name: 'Doomed', by: 'scim' }]);
    const raced = String((await createGroupResource(deps, group({ displayName: 'Doomed Twice' })))['id']);
    const outcomes = await Promise.allSettled([deleteGroupResource(deps, raced, null), deleteGroupResource(deps, raced, null)]);
    assert.deepEqual(outcomes.map((outcome) => outcome.status).sort(), ['fulfilled', 'rejected'], 'two deletes at once: one done');
    assert.equal(((outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult).reason as ScimError).status, 404, 'the other 404');
    assert.equal((await events('group.removed', raced)).length, 1, 'one event');
    // §3.6: "the service provider SHOULD NOT consider the deleted resource in conflict calculation".
    const again = await createGroupResource(deps, group({ displayName: 'doomed' }));
    assert.equal(again['displayName'], 'doomed', 'its name free again');
  });

  it(`renders a page of more than ${READ_EACH_UP_TO} groups in one read of their members, as each reads alone`, async () => {
    for (let i = 0; i < READ_EACH_UP_TO + 1; i += 1)
      await createGroupResource(deps, group({ displayName: `Team ${i}`, members: i % 2 === 0 ? [{ value: ada.id }, { value: grace.id }] : [] }));
    const records = await world.store.groups.list();
    assert.ok(records.length > READ_EACH_UP_TO);
    const page = await groupResourcesOf(deps, records);
    assert.deepEqual(page, await Promise.all(records.map((record) => getGroupResource(deps, record.id))));
    assert.ok(page.some((one) => memberIds(one).length === 2) && page.some((one) => !('members' in one)));
    assert.deepEqual(
      await groupResourcesOf(deps, records.slice(0, 3)),
      await Promise.all(records.slice(0, 3).map((record) => getGroupResource(deps, record.id))),
    );
  });
});
