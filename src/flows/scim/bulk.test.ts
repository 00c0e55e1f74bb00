/**
 * SCIM bulk operations (RFC 7644 §3.7) with a dispatch the test plays: operations in order,
 * `bulkId:` references resolved in paths and data, each operation's status in the answer,
 * `failOnErrors`, and what is refused for the whole request or for one operation.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { bulk, MAX_BULK_OPERATIONS, type BulkDispatch } from './bulk.ts';
import { ScimError } from './errors.ts';

type Json = Record<string, unknown>;
type Call = [method: string, path: string, data: unknown, version: string | undefined];

/** A dispatch that records each call and answers a resource with its id (a POST makes `id-N`), or refuses a path with `/refused`. */
function played(): { calls: Call[]; dispatch: BulkDispatch } {
  const calls: Call[] = [];
  const dispatch: BulkDispatch = async (method, path, data, version) => {
    calls.push([method, path, data, version]);
    if (path.endsWith('/refused')) throw new ScimError(404, null, 'no such resource');
    if (method === 'DELETE') return null;
    const id = method === 'POST' ? `id-${calls.length}` : path.split('/')[2]!;
    return { id, meta: { location: `https://auth.example.com/scim/v2${path.split('/').slice(0, 2).join('/')}/${id}`, version: `W/"${calls.length}"` } };
  };
  return { calls, dispatch };
}

const statuses = (answer: Json) => (answer['Operations'] as Json[]).map((operation) => operation['status']);

describe('SCIM bulk operations (RFC 7644 §3.7)', () => {
  it('runs the operations in order, resolving bulkId references in paths and data, and answers each with its status', async () => {
    const { calls, dispatch } = played();
    const answer = await bulk(
      {
        Operations: [
          { method: 'POST', path: '/Users', bulkId: 'ada', data: { userName: 'ada' } },
          { method: 'post', path: '/Groups', bulkId: 'engines', data: { displayName: 'Engines', members: [{ value: 'bulkId:ada' }] } },
          { method: 'PATCH', path: '/Groups/bulkId:engines', version: 'W/"2"', data: { Operations: [] } },
          { method: 'DELETE', path: '/Users/bulkId:ada' },
        ],
      },
      dispatch,
    );
    assert.deepEqual(calls, [
      ['POST', '/Users', { userName: 'ada' }, undefined],
      ['POST', '/Groups', { displayName: 'Engines', members: [{ value: 'id-1' }] }, undefined],
      ['PATCH', '/Groups/id-2', { Operations: [] }, 'W/"2"'],
      ['DELETE', '/Users/id-1', undefined, undefined],
    ]);
    assert.deepEqual(statuses(answer), ['201', '201', '200', '204']);
    assert.deepEqual((answer['Operations'] as Json[])[1], {
      method: 'POST',
      bulkId: 'engines',
      location: 'https://auth.example.com/scim/v2/Groups/id-2',
      version: 'W/"2"',
      status: '201',
    });
  });

  it('answers a failed operation with its error and goes on, and stops after failOnErrors errors', async () => {
    const operations = [
      { method: 'PUT', path: '/Users/refused', data: {} },
      { method: 'DELETE', path: '/Users/bulkId:never-made' },
      { method: 'DELETE', path: '/Users/u1' },
    ];
    const { calls, dispatch } = played();
    const answer = await bulk({ Operations: operations }, dispatch);
    assert.deepEqual(statuses(answer), ['404', '409', '204'], 'a reference to no resource made under that bulkId before it: 409');
    assert.equal(calls.length, 2);
    const stopped = played();
    assert.deepEqual(statuses(await bulk({ failOnErrors: 1, Operations: operations }, stopped.dispatch)), ['404']);
    assert.equal(stopped.calls.length, 1);
    const inData = played();
    const unresolved = await bulk(
      { Operations: [{ method: 'POST', path: '/Groups', bulkId: 'g', data: { members: [{ value: 'bulkId:nobody' }] } }] },
      inData.dispatch,
    );
    assert.deepEqual((unresolved['Operations'] as Json[])[0]!['status'], '409', 'a reference in data to no bulkId made');
    assert.equal(inData.calls.length, 0);
  });

  it('refuses a request it cannot run as a whole, and an operation it cannot run alone', async () => {
    const { dispatch, calls } = played();
    const whole: [string, unknown, number][] = [
      ['not an object', [], 400],
      ['no Operations', { failOnErrors: 1 }, 400],
      [
        `more than ${MAX_BULK_OPERATIONS} operations (§3.7.4: 413)`,
        { Operations: Array.from({ length: MAX_BULK_OPERATIONS + 1 }, () => ({ method: 'DELETE', path: '/Users/x' })) },
        413,
      ],
      ['failOnErrors 0', { failOnErrors: 0, Operations: [] }, 400],
    ];
    for (const [what, body, status] of whole) {
      await assert.rejects(bulk(body, dispatch), (error: unknown) => error instanceof ScimError && error.status === status, what);
    }
    const answer = await bulk(
      {
        Operations: [
          { method: 'GET', path: '/Users/x' },
          { method: 'DELETE', path: '/Clients/x' },
          { method: 'DELETE', path: '/Users/x/y' },
          { method: 'POST', path: '/Users', data: {} },
          'DELETE /Users/x',
        ],
      },
      dispatch,
    );
    assert.deepEqual(
      (answer['Operations'] as Json[]).map((operation) => [operation['status'], (operation['response'] as Json)['scimType']]),
      [
        ['400', 'invalidSyntax'],
        ['400', 'invalidPath'],
        ['400', 'invalidPath'],
        ['400', 'invalidValue'],
        ['400', 'invalidSyntax'],
      ],
    );
    assert.equal(calls.length, 0, 'none of them dispatched');
    await assert.rejects(
      bulk({ Operations: [{ method: 'DELETE', path: '/Users/x' }] }, async () => {
        throw new Error('the store is down');
      }),
      /the store is down/,
      'an error that is not SCIM’s is not an operation’s answer',
    );
  });
});
