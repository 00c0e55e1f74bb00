/**
 * Reading the audit trail without HTTP: `listEvents` with its filters (a person by username,
 * a removed one too, a client, a type, a time), its bounds (DEFAULT_EVENTS, MAX_EVENTS) and
 * its cursors (`eventCursor`, every event once across the pages, ties in time included),
 * `parseSince`, `eventJson` and the dashboard's `eventCounts` per window. The events are
 * real ones, emitted through the world's seam and through a management flow. test/events.test.ts
 * checks `tessera events` and the flows that emit; test/admin-api.test.ts /admin/events.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import type { AuditEvent, EventInput } from '../../core/events.ts';
import { COUNT_WINDOWS, DEFAULT_EVENTS, eventCounts, eventCursor, eventJson, listEvents, MAX_EVENTS, parseSince, type EventQuery } from './events.ts';
import { removeUser } from './users.ts';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

describe('reading the audit trail (flows/manage/events.ts)', () => {
  let world: FlowWorld;

  before(async () => {
    world = await flowWorld();
  });
  after(() => world.close());

  /**
   * Emits `input` through the world's seam and returns it as stored; the clock then moves a
   * millisecond, so that the next is newer (two in the same millisecond are ordered by their
   * ids, which are random past the time).
   */
  async function emit(input: EventInput): Promise<AuditEvent> {
    await world.deps.events.emit(input);
    const [stored] = await world.store.events.list({ limit: 1 });
    assert.equal(stored?.type, input.type);
    world.clock.advance(1);
    return stored!;
  }

  const list = (query: EventQuery) => listEvents(world.manage, query);
  const ids = (events: readonly AuditEvent[]) => events.map((event) => event.id);

  it('reads an age or an ISO 8601 time, and refuses anything else, naming the field', async () => {
    const now = Date.UTC(2026, 0, 31, 12);
    const read: [string, number][] = [
      ['45s', now - 45_000],
      ['30m', now - 30 * MINUTE],
      ['24h', now - DAY],
      ['7d', now - 7 * DAY],
      [' 2h ', now - 2 * HOUR],
      ['999999s', now - 999_999_000],
      ['2026-01-31T12:00:00Z', Date.UTC(2026, 0, 31, 12)],
      ['2026-01-30', Date.UTC(2026, 0, 30)],
      ['2026-01-31T13:00:00+02:00', Date.UTC(2026, 0, 31, 11)],
    ];
    for (const [raw, expected] of read) assert.equal(parseSince(raw, now), expected, raw);
    const refused = ['', '30', 'm', '1w', '30 m', '-5m', '1.5h', '1234567s', 'yesterday', '31/01/2026', 'Jan 31 2026', '2026-13-45', '2026'];
    for (const raw of refused) assert.equal(await outcome(() => parseSince(raw, now)), 'invalid:since', JSON.stringify(raw));
  });

  it('lists the trail newest first, the events with a user id alone shown with their username', async () => {
    const ada = await world.addUser({ username: 'ada' });
    const first = await emit({ type: 'signin.succeeded', userId: ada.id, username: 'ada', clientId: 'notes', ip: '192.0.2.1' });
    world.clock.advance(1000);
    const second = await emit({ type: 'consent.given', userId: ada.id, clientId: 'notes', detail: { scope: 'openid' } });
    const listed = await list({ limit: 2 });
    assert.deepEqual(ids(listed), [second.id, first.id]);
    assert.equal(second.username, null, 'stored with the id alone');
    assert.equal(listed[0]?.username, 'ada', 'shown with the username the user has');
    assert.deepEqual(eventJson(listed[0]!), {
      id: second.id,
      type: 'consent.given',
      at: new Date(second.at).toISOString(),
      user_id: ada.id,
      username: 'ada',
      client_id: 'notes',
      grant_id: null,
      ip: null,
      user_agent: null,
      detail: { scope: 'openid' },
    });
  });

  it('filters by person (case and spacing aside), client, type and time, every filter at once', async () => {
    world.clock.advance(HOUR);
    const grace = await world.addUser({ username: 'grace' });
    const start = world.clock.now();
    const hers = await emit({ type: 'signin.succeeded', userId: grace.id, username: 'grace', clientId: 'notes' });
    world.clock.advance(1000);
    const typed = await emit({ type: 'signin.failed', username: 'grace', detail: { reason: 'wrong_password' } });
    world.clock.advance(1000);
    const byId = await emit({ type: 'consent.given', userId: grace.id, clientId: 'photos' });
    const other = await emit({ type: 'signin.succeeded', userId: 'sub-someone', username: 'someone', clientId: 'notes' });

    const cases: [string, EventQuery, AuditEvent[]][] = [
      ['her username, as typed with capitals and spaces', { username: '  Grace ', since: start }, [byId, typed, hers]],
      ['a client', { clientId: 'notes', since: start }, [other, hers]],
      ['a type', { type: 'signin.failed', since: start }, [typed]],
      ['a time, the event at it included', { since: typed.at }, [other, byId, typed]],
      ['a person and a client', { username: 'grace', clientId: 'photos' }, [byId]],
      ['a person, a client and a type that none has together', { username: 'grace', clientId: 'photos', type: 'signin.succeeded' }, []],
      ['nobody', { username: 'nobody' }, []],
    ];
    for (const [what, query, expected] of cases) assert.deepEqual(ids(await list(query)), ids(expected), what);
  });

  it("finds a removed person's events by the username their removal recorded", async () => {
    world.clock.advance(HOUR);
    const since = world.clock.now();
    const margaret = await world.addUser({ username: 'margaret' });
    const signedIn = await emit({ type: 'consent.given', userId: margaret.id, clientId: 'notes' });
    world.clock.advance(1000);
    await removeUser(world.manage, 'margaret');
    assert.equal(await world.store.users.get(margaret.id), null);
    const found = await list({ username: 'Margaret', since });
    assert.deepEqual(
      found.map((event) => event.type),
      ['user.removed', 'consent.given'],
    );
    assert.equal(found[1]?.id, signedIn.id, 'the event that named her id alone is hers still');
    assert.equal(found[1]?.username, null, 'no username to show for an id no user has now');
  });

  it('pages with cursors: every event once, in order, even those at the same millisecond', async () => {
    world.clock.advance(DAY);
    const since = world.clock.now();
    for (let i = 0; i < 7; i += 1) {
      await world.deps.events.emit({ type: 'token.revoked', clientId: 'pager', detail: { i } });
      if (i % 3 === 2) world.clock.advance(1);
    }
    const whole = await list({ clientId: 'pager', since });
    assert.equal(new Set(ids(whole)).size, 7);
    assert.equal(new Set(whole.map((event) => event.at)).size, 3, 'three milliseconds, the events of each tied in time');
    assert.deepEqual(
      whole.map((event) => event.at),
      whole.map((event) => event.at).sort((a, b) => b - a),
      'newest first',
    );
    const pages: string[][] = [];
    let cursor: string | undefined;
    for (let read = 0; read < 5; read += 1) {
      const page = await list({ clientId: 'pager', since, limit: 3, ...(cursor === undefined ? {} : { after: cursor }) });
      if (page.length === 0) break;
      pages.push(ids(page));
      cursor = eventCursor(page.at(-1)!);
    }
    assert.deepEqual(pages, [ids(whole.slice(0, 3)), ids(whole.slice(3, 6)), ids(whole.slice(6))]);
  });

  it(`returns ${DEFAULT_EVENTS} events unless asked, up to ${MAX_EVENTS}, and refuses a limit, type or cursor out of bounds, naming the field`, async () => {
    world.clock.advance(DAY);
    const since = world.clock.now();
    for (let i = 0; i <= DEFAULT_EVENTS; i += 1) await world.deps.events.emit({ type: 'code.issued', clientId: 'many' });
    assert.equal((await list({ clientId: 'many' })).length, DEFAULT_EVENTS);
    assert.equal((await list({ clientId: 'many', limit: MAX_EVENTS })).length, DEFAULT_EVENTS + 1);
    assert.equal((await list({ since, limit: 1 })).length, 1);
    const cursor = (text: string) => Buffer.from(text).toString('base64url');
    const cases: [string, EventQuery, string][] = [
      ['a limit of none', { limit: 0 }, 'invalid:limit'],
      ['a limit past the bound', { limit: MAX_EVENTS + 1 }, 'invalid:limit'],
      ['a limit that is not whole', { limit: 2.5 }, 'invalid:limit'],
      ['a limit that is not a number', { limit: Number.NaN }, 'invalid:limit'],
      ['a type that does not exist', { type: 'signin.maybe' }, 'invalid:type'],
      ['a cursor of nonsense', { after: '!!!' }, 'invalid:after'],
      ['a cursor without a dot', { after: cursor('12345') }, 'invalid:after'],
      ['a cursor without an id', { after: cursor('12345.') }, 'invalid:after'],
      ['a cursor whose time is no number', { after: cursor('soon.abc') }, 'invalid:after'],
      ['a cursor whose time is too long', { after: cursor(`${'9'.repeat(16)}.abc`) }, 'invalid:after'],
      ['a cursor whose id is too long', { after: cursor(`12345.${'a'.repeat(101)}`) }, 'invalid:after'],
      // Base64url decoding skips what is not of its alphabet: padded past 200 characters, a cursor is not read at all.
      ['a cursor too long to read', { after: `${cursor('12345.abc')}${'='.repeat(200)}` }, 'invalid:after'],
      ['a cursor this server gave', { after: cursor(`12345.${'a'.repeat(100)}`) }, 'ok'],
    ];
    for (const [what, query, expected] of cases) assert.equal(await outcome(() => list(query)), expected, what);
  });

  it('counts each type over the last hour and the last day, the start of each window included', async () => {
    world.clock.advance(7 * DAY);
    const now = world.clock.now();
    const at = async (ago: number, type: EventInput['type']) => {
      world.clock.set(now - ago);
      await world.deps.events.emit({ type });
    };
    assert.deepEqual(COUNT_WINDOWS, { hour: HOUR, day: DAY });
    await at(DAY + 1, 'logout');
    await at(DAY, 'logout');
    await at(HOUR + 1, 'logout');
    await at(HOUR, 'logout');
    await at(30 * MINUTE, 'signin.failed');
    await at(0, 'signin.failed');
    world.clock.set(now);
    const counts = await eventCounts(world.manage, now);
    assert.deepEqual(Object.fromEntries(counts.hour), { logout: 1, 'signin.failed': 2 });
    assert.deepEqual(Object.fromEntries(counts.day), { logout: 3, 'signin.failed': 2 });
  });
});
