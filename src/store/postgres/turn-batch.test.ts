import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { TurnBatch } from './turn-batch.ts';

/** Resolves at the end of the current turn of the event loop, after setImmediate callbacks queued before it. */
const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Two turns: an answered batch queues the next one's send at the end of the turn it answered in. */
const afterAnswer = async () => {
  await nextTurn();
  await nextTurn();
};

/**
 * A batch whose statements are held until the test lets them answer: what each statement
 * was sent (`sent`, one entry a statement, alone or batched), and `answer()` to answer the
 * oldest one still held. Each call's result is its item doubled.
 */
function heldBatch() {
  const sent: string[][] = [];
  const held: (() => void)[] = [];
  const hold = <V>(value: V) =>
    new Promise<V>((resolve) => {
      held.push(() => resolve(value));
    });
  const batch = new TurnBatch<string, string>({
    key: (item) => item,
    one: (item) => {
      sent.push([item]);
      return hold(item + item);
    },
    many: (items) => {
      sent.push([...items]);
      return hold(new Map(items.map((item) => [item, item + item])));
    },
    absent: '',
    retryAlone: () => false,
  });
  return { batch, sent, answer: () => held.shift()!() };
}

describe('TurnBatch', () => {
  it('sends the calls of one turn as one statement, and one call alone as the ordinary one', async () => {
    const { batch, sent, answer } = heldBatch();
    const first = [batch.run('a'), batch.run('b'), batch.run('c')];
    await nextTurn();
    assert.deepEqual(sent, [['a', 'b', 'c']]);
    answer();
    assert.deepEqual(await Promise.all(first), ['aa', 'bb', 'cc']);
    await afterAnswer();
    const alone = batch.run('d');
    await nextTurn();
    assert.deepEqual(sent[1], ['d']);
    answer();
    assert.equal(await alone, 'dd');
  });

  it('holds the calls that arrive while a batch is in flight, over several turns, and sends them together once it has answered', async () => {
    const { batch, sent, answer } = heldBatch();
    const first = [batch.run('a'), batch.run('b')];
    await nextTurn();
    const waiting: Promise<string>[] = [];
    for (const item of ['c', 'd', 'e']) {
      waiting.push(batch.run(item));
      await nextTurn();
    }
    // Three turns went by with three calls: none of them was sent while the first batch was out.
    assert.deepEqual(sent, [['a', 'b']]);
    answer();
    assert.deepEqual(await Promise.all(first), ['aa', 'bb']);
    await afterAnswer();
    assert.deepEqual(sent, [
      ['a', 'b'],
      ['c', 'd', 'e'],
    ]);
    answer();
    assert.deepEqual(await Promise.all(waiting), ['cc', 'dd', 'ee']);
  });

  it('sends a second call for a key in the batch after it, as it would have waited for the row lock', async () => {
    const { batch, sent, answer } = heldBatch();
    const calls = [batch.run('a'), batch.run('b'), batch.run('a')];
    await nextTurn();
    assert.deepEqual(sent, [['a', 'b']]);
    answer();
    await afterAnswer();
    assert.deepEqual(sent, [['a', 'b'], ['a']]);
    answer();
    assert.deepEqual(await Promise.all(calls), ['aa', 'bb', 'aa']);
  });

  it('retries a batch that one call may have made fail one call at a time, each call with its own answer', async () => {
    const refused = new Error('duplicate key');
    const sent: string[][] = [];
    const batch = new TurnBatch<string, string>({
      key: (item) => item,
      one: async (item) => {
        sent.push([item]);
        if (item === 'bad') throw refused;
        return item + item;
      },
      many: async (items) => {
        sent.push([...items]);
        throw refused;
      },
      absent: '',
      retryAlone: (error) => error === refused,
    });
    const good = batch.run('good');
    const bad = batch.run('bad');
    assert.equal(await good, 'goodgood');
    await assert.rejects(bad, refused);
    assert.deepEqual(sent, [['good', 'bad'], ['good'], ['bad']]);
    // The batch that failed is done: the next call is sent.
    assert.equal(await batch.run('next'), 'nextnext');
  });
});
