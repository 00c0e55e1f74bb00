/**
 * SCIM lists over HTTP against PostgreSQL (docs/scim.md), where filters become SQL with that
 * database's types and text: users and groups found by the filters provisioning systems send,
 * `.search`, a NUL character refused before it reaches the database, and random filters (a
 * fuzzer) answered 200 or a 400 SCIM defines, never a 500. test/scim.test.ts drives the
 * whole life on SQLite; the store contract compares the SQL with the filter on both.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { addScimToken } from '../src/flows/manage/scim-tokens.ts';
import { manageDeps } from './helpers/manage.ts';
import { describePostgres, freshPostgresDatabase } from './helpers/postgres.ts';
import { startTestServer, type TestServer } from './helpers/server.ts';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const GROUP = 'urn:ietf:params:scim:schemas:core:2.0:Group';
const SEARCH = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

describePostgres('SCIM lists on PostgreSQL', () => {
  let server: TestServer;
  let token: string;
  let drop: () => Promise<void>;

  before(async () => {
    const database = await freshPostgresDatabase();
    drop = database.drop;
    server = await startTestServer({ database: database.url });
    token = (await addScimToken(manageDeps(server), { name: 'Okta' })).token;
  });
  after(async () => {
    await server.close();
    await drop();
  });

  const scim = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${server.url}/scim/v2${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/scim+json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
  };
  const ids = (answer: { body: Record<string, unknown> }) => ((answer.body['Resources'] ?? []) as Record<string, unknown>[]).map((resource) => resource['id']);

  it('finds users and groups by the filters provisioning systems send, by GET and by .search', async () => {
    const ada = await scim('POST', '/Users', {
      schemas: [USER],
      userName: 'Ada_100',
      externalId: 'OKTA-1',
      displayName: 'Ada 100%',
      emails: [{ value: 'ada@example.com', primary: true }, { value: 'a_l@home.example' }],
    });
    assert.equal(ada.status, 201, JSON.stringify(ada.body));
    const bob = await scim('POST', '/Users', { schemas: [USER], userName: 'bob', externalId: 'okta-1', active: false });
    assert.equal(bob.status, 201, JSON.stringify(bob.body));
    const team = await scim('POST', '/Groups', { schemas: [GROUP], displayName: 'Team 50%', members: [{ value: ada.body['id'] }] });
    assert.equal(team.status, 201, JSON.stringify(team.body));
    const find = async (filter: string) => ids(await scim('GET', `/Users?filter=${encodeURIComponent(filter)}&sortBy=userName`));
    assert.deepEqual(await find('userName eq "ADA_100"'), [ada.body['id']]);
    assert.deepEqual(await find('userName co "_1"'), [ada.body['id']], '_ is itself, not any character');
    assert.deepEqual(await find('userName co "%"'), [], '% is itself, not any text');
    assert.deepEqual(await find('displayName ew "0%"'), [ada.body['id']]);
    assert.deepEqual(await find('externalId eq "okta-1"'), [bob.body['id']], 'externalId keeps its case');
    assert.deepEqual(await find('emails co "A_L@"'), [ada.body['id']]);
    assert.deepEqual(await find('active eq false or displayName sw "ada"'), [ada.body['id'], bob.body['id']]);
    assert.deepEqual(await find(`meta.lastModified ge "${String((ada.body['meta'] as Record<string, unknown>)['lastModified'])}" and not (active eq false)`), [
      ada.body['id'],
    ]);
    const groups = await scim('POST', '/Groups/.search', { schemas: [SEARCH], filter: `members eq "${String(ada.body['id'])}" and displayName co "50%"` });
    assert.deepEqual(ids(groups), [team.body['id']]);
    const everything = await scim('POST', '/.search', { schemas: [SEARCH], filter: 'displayName pr', count: 10 });
    assert.deepEqual([everything.status, everything.body['totalResults']], [200, 2]);
    const nul = await scim('POST', '/Users', { schemas: [USER], userName: 'nul', title: 'a\u0000' });
    assert.deepEqual([nul.status, nul.body['scimType']], [400, 'invalidValue']);
    assert.equal((await scim('GET', '/Users/%00')).status, 404);
  });

  it('answers random filters (a fuzzer) with 200 or a 400 SCIM defines, never a 500', async () => {
    const attributes = ['userName', 'emails', 'externalId', 'displayName', 'active', 'id', 'meta.created', 'title', 'name.givenName'];
    const ops = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'ge', 'lt', 'le', 'pr'];
    const values = ['"%"', '"_"', '"\\\\"', '"a"', 'true', 'false', 'null', '1', '"2026-01-01T00:00:00Z"', '"\\u0000"', '"é"'];
    let seed = 5;
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return Math.floor((seed / 2 ** 31) * n);
    };
    const expression = (depth: number): string => {
      const roll = random(depth > 2 ? 1 : 4);
      if (roll === 1) return `${expression(depth + 1)} ${random(2) === 0 ? 'and' : 'or'} ${expression(depth + 1)}`;
      if (roll === 2) return `not (${expression(depth + 1)})`;
      if (roll === 3) return `emails[${expression(depth + 1).replace(/emails\.?/g, 'value')}]`;
      const op = ops[random(ops.length)]!;
      return `${attributes[random(attributes.length)]} ${op}${op === 'pr' ? '' : ` ${values[random(values.length)]}`}`;
    };
    for (let run = 0; run < 150; run += 1) {
      const filter = expression(0);
      const sortBy = attributes[random(attributes.length)];
      const answer = await scim('POST', '/Users/.search', { schemas: [SEARCH], filter, sortBy, count: 5 });
      assert.ok(
        answer.status === 200 || (answer.status === 400 && ['invalidFilter', 'invalidValue'].includes(answer.body['scimType'] as string)),
        `${filter} (sortBy ${sortBy}): ${JSON.stringify(answer.body)}`,
      );
    }
  });
});
