/**
 * Refused requests write nothing: a flood from a locked address is
 * counted in memory, told to the listeners (the log line, the metric) once per limit and
 * window, and stored as one row with its count once the window has ended.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from './clock.ts';
import { Events, type AuditEvent } from './events.ts';

describe('refusals', () => {
  it('tells the listeners once per limit and window, and stores one row with the count when the window ends', async () => {
    const clock = new ManualClock(Date.parse('2026-11-24T12:00:00Z'));
    const stored: AuditEvent[] = [];
    const heard: AuditEvent[] = [];
    const events = new Events(clock, { add: async (event) => void stored.push(event) }, [(event) => heard.push(event)]);
    const endsAt = clock.now() + 900_000;
    const request = events.forRequest({ ip: '203.0.113.9', userAgent: 'flood/1.0' });
    for (let i = 0; i < 500; i++) {
      await request.refused({ type: 'signin.locked', username: 'owner', detail: { limit: 'user-address' } }, 'sign-in:user-ip:203.0.113.9 owner', endsAt);
      clock.advance(100);
    }
    await request.refused({ type: 'signin.locked', username: 'other', detail: { limit: 'user-address' } }, 'sign-in:user-ip:203.0.113.9 other', endsAt);
    assert.equal(stored.length, 0, 'nothing written while the windows are open');
    assert.deepEqual(
      heard.map((event) => [event.username, event.ip, event.detail['until']]),
      [
        ['owner', '203.0.113.9', '2026-11-24T12:15:00.000Z'],
        ['other', '203.0.113.9', '2026-11-24T12:15:00.000Z'],
      ],
    );

    clock.advance(900_000);
    await events.flushRefusals();
    assert.deepEqual(
      stored.map((event) => [event.type, event.username, event.ip, event.userAgent, event.detail['refused'], event.detail['first']]),
      [
        ['signin.locked', 'owner', '203.0.113.9', 'flood/1.0', 500, '2026-11-24T12:00:00.000Z'],
        ['signin.locked', 'other', '203.0.113.9', 'flood/1.0', 1, '2026-11-24T12:00:50.000Z'],
      ],
    );
    assert.equal(heard.length, 2, 'the stored rows are not told again');

    // The next window starts its own count, told once again.
    await events.refused(
      { type: 'signin.locked', username: 'owner', ip: '203.0.113.9', detail: { limit: 'user-address' } },
      'sign-in:user-ip:203.0.113.9 owner',
      clock.now() + 900_000,
    );
    assert.equal(heard.length, 3);
    await events.flushRefusals(true);
    assert.equal(stored.length, 3, 'at shutdown, open windows are stored too');
    assert.equal(stored[2]!.detail['refused'], 1);
  });
});
