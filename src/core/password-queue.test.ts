import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { hashPassword } from './password.ts';
import { PasswordQueue } from './password-queue.ts';

describe('PasswordQueue', () => {
  const cost = { memory: 8, passes: 1, parallelism: 1 };
  // One thread: checks run one after another, so the order they are answered in is the
  // order the queue chose, whatever each one takes.
  const queue = new PasswordQueue({ threads: 1, maxWaiting: 20, perAddress: 10 });
  after(() => queue.close());

  it('serves waiting addresses in turn: with one address holding six places, another address is answered before its later ones', async () => {
    const encoded = await hashPassword('right', cost);
    const answered: string[] = [];
    const check = (who: string, password: string) =>
      queue.verify(password, encoded, who.split(' ')[0]!).then((result) => {
        answered.push(who);
        return result;
      });
    // All asked at once, the flood first: its first check takes the thread, five wait.
    const results = await Promise.all([
      ...Array.from({ length: 6 }, (_, i) => check(`203.0.113.9 #${i + 1}`, 'guess')),
      check('198.51.100.7 #1', 'right'),
    ]);
    assert.deepEqual(answered, [
      '203.0.113.9 #1',
      '203.0.113.9 #2',
      '198.51.100.7 #1',
      '203.0.113.9 #3',
      '203.0.113.9 #4',
      '203.0.113.9 #5',
      '203.0.113.9 #6',
    ]);
    assert.deepEqual(results.map((result) => result.kind === 'checked' && result.matches), [false, false, false, false, false, false, true]);
  });

  it("refuses at once, hashing nothing, past an address's share", async () => {
    const small = new PasswordQueue({ threads: 1, maxWaiting: 20, perAddress: 2 });
    try {
      const encoded = await hashPassword('right', cost);
      const results = await Promise.all(Array.from({ length: 3 }, () => small.verify('guess', encoded, '203.0.113.9')));
      assert.deepEqual(results.map((result) => result.kind), ['checked', 'checked', 'busy']);
      assert.equal(small.hasRoom('203.0.113.9'), true, 'the places are given back once answered');
    } finally {
      await small.close();
    }
  });
});
