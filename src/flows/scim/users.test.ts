/**
 * SCIM Users (RFC 7644 §3.3, §3.5, §3.6) over the flow world, without HTTP: a User made,
 * replaced, patched and removed as a provisioning system does, at the version If-Match names
 * (§3.14: 412 when stale), unique by userName and e-mail address in any case; `active: false`
 * ending the person's sessions; an operator's account left to operators. test/scim.test.ts
 * sends the same through the API, with Entra ID's and Okta's own requests.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { flowWorld, scimRefusal, scimVersionOf, type FlowWorld } from '../../../test/helpers/flows.ts';
import type { ScimError } from './errors.ts';
import { PATCH_SCHEMA, USER_SCHEMA } from './schema.ts';
import { createUserResource, deleteUserResource, getUserResource, ifMatchVersion, patchUserResource, replaceUserResource, type ScimDeps } from './users.ts';
import { createResetLink, findResetLink } from '../users.ts';

type Json = Record<string, unknown>;

describe('SCIM Users (RFC 7644)', () => {
  let world: FlowWorld;
  let deps: ScimDeps;
  const told: number[] = [];

  before(async () => {
    world = await flowWorld();
    deps = {
      ...world.manage,
      base: 'https://auth.example.com/scim/v2',
      tellApps: async (sessions) => {
        told.push(sessions.length);
        return sessions.length;
      },
    };
  });
  after(() => world.close());

  const user = (fields: Json = {}): Json => ({
    schemas: [USER_SCHEMA],
    userName: 'ada.lovelace',
    externalId: 'entra-1',
    name: { givenName: 'Ada', familyName: 'Lovelace' },
    emails: [{ value: 'ada@example.com', type: 'work', primary: true }],
    active: true,
    ...fields,
  });

  /** A person provisioned as `name`, with one live session; the clock then a second on. */
  async function provisionedWithSession(name: string): Promise<string> {
    const made = await createUserResource(deps, user({ userName: name, externalId: `entra-${name}`, emails: [{ value: `${name}@example.com` }] }));
    const id = String(made['id']);
    const now = world.clock.now();
    await world.store.sessions.create({
      idHash: `${name}-session`,
      sid: `sid-${name}`,
      userId: id,
      authTime: now,
      createdAt: now,
      expiresAt: now + 3600_000,
      ip: null,
      userAgent: null,
    });
    world.clock.advance(1000);
    return id;
  }

  it('reads the version of If-Match weak or strong, any for *, and none it gave for anything else', () => {
    const cases: [string | undefined, number | null][] = [
      [undefined, null],
      ['*', null],
      ['W/"1764417600000"', 1764417600000],
      ['"42"', 42],
      ['W/"not-a-version"', -1],
      ['42', -1],
    ];
    for (const [header, expected] of cases) assert.equal(ifMatchVersion(header), expected, String(header));
  });

  it('makes a User as given, the account and SCIM’s record, and answers it as it reads it back', async () => {
    const made = await createUserResource(
      deps,
      user({ userName: 'Grace.Hopper', externalId: 'entra-grace', emails: [{ value: 'grace@example.com', primary: true }] }),
    );
    assert.equal(made['userName'], 'grace.hopper', 'usernames are kept lower-case');
    assert.equal(made['externalId'], 'entra-grace');
    assert.deepEqual(made, await getUserResource(deps, String(made['id'])));
    const account = (await world.store.users.get(String(made['id'])))!;
    assert.deepEqual([account.email, account.givenName, account.disabled], ['grace@example.com', 'Ada', false]);
    const inactive = await createUserResource(deps, user({ userName: 'dormant', externalId: 'entra-dormant', emails: [], active: false }));
    assert.equal((await world.store.users.get(String(inactive['id'])))?.disabled, true, 'active false: made disabled');
  });

  it('refuses a userName or an e-mail address another account has, in any case, with 409 uniqueness', async () => {
    await createUserResource(deps, user({ userName: 'unique.one', emails: [{ value: 'unique@example.com' }] }));
    assert.deepEqual(await scimRefusal(createUserResource(deps, user({ userName: 'UNIQUE.ONE', emails: [] }))), [409, 'uniqueness']);
    assert.deepEqual(await scimRefusal(createUserResource(deps, user({ userName: 'unique.two', emails: [{ value: 'Unique@Example.com' }] }))), [
      409,
      'uniqueness',
    ]);
    assert.deepEqual(await scimRefusal(createUserResource(deps, user({ userName: 'has space', emails: [] }))), [400, 'invalidValue']);
  });

  it('replaces and patches at the version If-Match names, 412 when it is stale, and unassigned attributes become null (§3.5.1)', async () => {
    const made = await createUserResource(deps, user({ userName: 'versioned', externalId: 'entra-v', emails: [{ value: 'v@example.com' }], displayName: 'V' }));
    const id = String(made['id']);
    const version = scimVersionOf(made);
    world.clock.advance(1000);
    const replaced = await replaceUserResource(deps, id, user({ userName: 'versioned', externalId: 'entra-v', emails: [{ value: 'v@example.com' }] }), version);
    assert.equal(replaced['displayName'], undefined, 'not given: gone');
    assert.notEqual(scimVersionOf(replaced), version, 'a new version');
    assert.deepEqual(await scimRefusal(replaceUserResource(deps, id, user({ userName: 'versioned', emails: [] }), version)), [412, null], 'the old version');
    assert.deepEqual(
      await scimRefusal(patchUserResource(deps, id, { schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', path: 'title', value: 'x' }] }, -1)),
      [412, null],
    );
    world.clock.advance(1000);
    const patched = await patchUserResource(
      deps,
      id,
      { schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', path: 'title', value: 'Engineer' }] },
      scimVersionOf(replaced),
    );
    assert.equal(patched['title'], 'Engineer');
    assert.deepEqual(patched['emails'], replaced['emails'], 'a PATCH keeps what it does not name');
  });

  it('lets one of two changes made at the same version through, the other 412, whichever comes first', async () => {
    const made = await createUserResource(deps, user({ userName: 'raced', externalId: 'entra-raced', emails: [{ value: 'raced@example.com' }] }));
    world.clock.advance(1000);
    const change = (title: string) =>
      patchUserResource(
        deps,
        String(made['id']),
        { schemas: [PATCH_SCHEMA], Operations: [{ op: 'replace', path: 'title', value: title }] },
        scimVersionOf(made),
      );
    const outcomes = await Promise.allSettled([change('first'), change('second')]);
    assert.deepEqual(outcomes.map((outcome) => outcome.status).sort(), ['fulfilled', 'rejected']);
    const lost = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult;
    assert.equal((lost.reason as ScimError).status, 412);
  });

  it("ends a person's sessions when a patch sets active false, and tells the apps of those sessions", async () => {
    const id = await provisionedWithSession('leaver');
    await patchUserResource(deps, id, { schemas: [PATCH_SCHEMA], Operations: [{ op: 'Replace', path: 'active', value: 'False' }] }, null);
    assert.equal((await world.store.users.get(id))?.disabled, true);
    assert.deepEqual(await world.store.sessions.listForUser(id, world.clock.now()), [], 'their sessions ended');
    assert.equal(told.at(-1), 1, 'the app of the ended session told');
  });

  it('a password given in a replace ends the person’s sessions and reset links, tells their apps, and is recorded as set by scim', async () => {
    const id = await provisionedWithSession('rotated');
    const link = new URL((await createResetLink(world.deps, (await world.store.users.get(id))!, 3600)).url).searchParams.get('token')!;
    const toldBefore = told.length;
    const replaced = await replaceUserResource(
      deps,
      id,
      user({ userName: 'rotated', externalId: 'entra-rotated', emails: [{ value: 'rotated@example.com' }], password: 'a new provisioned password' }),
      null,
    );
    assert.equal(replaced['password'], undefined, 'never returned');
    assert.deepEqual(await world.store.sessions.listForUser(id, world.clock.now()), [], 'their sessions ended');
    assert.deepEqual(told.slice(toldBefore), [1], 'the app of the ended session told');
    assert.equal(await findResetLink(world.deps, link), null, 'a reset link sent before would undo the new password');
    const [event] = await world.store.events.list({ userId: id, type: 'user.password_set', limit: 10 });
    assert.deepEqual(event?.detail, { sessions_ended: 1, by: 'scim' }, 'the audit trail says scim set the password');
    assert.doesNotMatch(JSON.stringify(event), /a new provisioned password/, 'never the password');
  });

  it('records a User made inactive as made and disabled by scim, in the audit trail', async () => {
    const made = await createUserResource(deps, user({ userName: 'made.inactive', externalId: 'entra-inactive', emails: [], active: false }));
    const id = String(made['id']);
    assert.equal(made['active'], false);
    const events = await world.store.events.list({ userId: id, limit: 10 });
    assert.deepEqual(events.map((event) => [event.type, event.detail['by']]).sort(), [
      ['user.created', 'scim'],
      ['user.disabled', 'scim'],
    ]);
  });

  it("leaves an operator's account to operators (403), and removes a person at the version given, then knows them no more", async () => {
    const operator = await world.addUser({ username: 'operator', email: 'operator@example.com' });
    await world.store.users.setRole(operator.id, 'admin');
    assert.equal((await scimRefusal(replaceUserResource(deps, operator.id, user({ userName: 'operator', emails: [] }), null)))[0], 403);
    assert.equal((await scimRefusal(deleteUserResource(deps, operator.id, null)))[0], 403);
    const made = await createUserResource(deps, user({ userName: 'gone.soon', externalId: 'entra-gone', emails: [{ value: 'gone@example.com' }] }));
    const id = String(made['id']);
    assert.deepEqual(await scimRefusal(deleteUserResource(deps, id, scimVersionOf(made)! - 1)), [412, null]);
    await deleteUserResource(deps, id, scimVersionOf(made));
    assert.deepEqual(await scimRefusal(getUserResource(deps, id)), [404, null]);
    assert.equal(await world.store.users.get(id), null);
  });
});
