import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { getPriority } from 'node:os';
import { after, describe, it } from 'node:test';
import { threadNiceValues } from '../../test/helpers/threads.ts';
import { hashPassword } from './password.ts';
import { PasswordQueue, type PasswordCheck } from './password-queue.ts';

describe('PasswordQueue', () => {
  const cost = { memory: 8, passes: 1, parallelism: 1 };
  // One thread: checks run one after another, so the order they are answered in is the
  // order the queue chose, whatever each one takes.
  const queue = new PasswordQueue({ threads: 1, maxWaiting: 20, perAddress: 10 });
  after(() => queue.close());

  it('checks passwords in a process whose --eval is read as a module, whose threads inherit that', () => {
    const { status, stdout, stderr } = spawnSync(
      process.execPath,
      [
        '--disable-warning=ExperimentalWarning',
        '--input-type=module',
        '--eval',
        `import { hashPassword } from ${JSON.stringify(new URL('./password.ts', import.meta.url).href)};
         import { PasswordQueue } from ${JSON.stringify(new URL('./password-queue.ts', import.meta.url).href)};
         const queue = new PasswordQueue({ threads: 1, maxWaiting: 1, perAddress: 1 });
         const check = await queue.verify('right', await hashPassword('right', ${JSON.stringify(cost)}), '203.0.113.9');
         await queue.close();
         console.log(JSON.stringify(check));`,
      ],
      { encoding: 'utf8', timeout: 20_000 },
    );
    assert.equal(status, 0, stderr);
    assert.deepEqual(JSON.parse(stdout), { kind: 'checked', matches: true });
  });

  it("hashes on threads that lower their own priority by the nice value given, leaving the process's other threads as they were", {
    skip: process.platform !== 'linux' && 'nice values per thread are read from /proc',
  }, async () => {
    const own = getPriority();
    const lowered = Math.min(19, own + 7);
    const atLowered = () => threadNiceValues().filter((nice) => nice === lowered).length;
    const before = atLowered();
    const others = threadNiceValues().length - before;
    const nice = new PasswordQueue({ threads: 2, maxWaiting: 4, perAddress: 4, nice: 7 });
    try {
      const encoded = await hashPassword('right', cost);
      // Two checks at once: each takes a thread of its own.
      const checks = await Promise.all([nice.verify('right', encoded, '198.51.100.7'), nice.verify('guess', encoded, '203.0.113.9')]);
      assert.deepEqual(
        checks.map((check) => check.kind === 'checked' && check.matches),
        [true, false],
      );
      assert.equal(atLowered() - before, 2, "both hashing threads at the process's nice value + 7");
      assert.equal(getPriority(), own, 'the thread that made the queue keeps its own');
      assert.ok(threadNiceValues().length - atLowered() >= others, 'no other thread lowered');
    } finally {
      await nice.close();
    }
    assert.equal(atLowered(), before, 'the threads end with the queue');
  });

  it('serves waiting addresses in turn: with one address holding six places, another address is answered before its later ones', async () => {
    const encoded = await hashPassword('right', cost);
    const answered: string[] = [];
    const check = (who: string, password: string) =>
      queue.verify(password, encoded, who.split(' ')[0]!).then((result) => {
        answered.push(who);
        return result;
      });
    // All asked at once, the flood first: its first check takes the thread, five wait.
    const results = await Promise.all([...Array.from({ length: 6 }, (_, i) => check(`203.0.113.9 #${i + 1}`, 'guess')), check('198.51.100.7 #1', 'right')]);
    assert.deepEqual(answered, ['203.0.113.9 #1', '203.0.113.9 #2', '198.51.100.7 #1', '203.0.113.9 #3', '203.0.113.9 #4', '203.0.113.9 #5', '203.0.113.9 #6']);
    assert.deepEqual(
      results.map((result) => result.kind === 'checked' && result.matches),
      [false, false, false, false, false, false, true],
    );
  });

  it("holds an address's places while a directory checks its password, and refuses past its share without asking", async () => {
    const small = new PasswordQueue({ threads: 1, maxWaiting: 20, perAddress: 2 });
    try {
      let release!: () => void;
      const directory = new Promise<void>((resolve) => (release = resolve));
      let asked = 0;
      const bind = async () => {
        asked += 1;
        await directory;
        return true;
      };
      const first = small.elsewhere('203.0.113.9', bind);
      const second = small.elsewhere('203.0.113.9', bind);
      // Two binds in flight hold the address's share, here and for its local passwords.
      assert.equal(await small.elsewhere('203.0.113.9', bind), null);
      assert.equal(small.hasRoom('203.0.113.9'), false);
      assert.equal(small.hasRoom('198.51.100.7'), true, 'another address is not held back');
      assert.equal(asked, 2);
      release();
      assert.deepEqual(await Promise.all([first, second]), [true, true]);
      assert.equal(small.hasRoom('203.0.113.9'), true, 'the places are given back');
      assert.equal(small.counts().hashed, 0, 'no thread was taken');
    } finally {
      await small.close();
    }
  });

  it("refuses at once, hashing nothing, past an address's share", async () => {
    const small = new PasswordQueue({ threads: 1, maxWaiting: 20, perAddress: 2 });
    try {
      const encoded = await hashPassword('right', cost);
      const results = await Promise.all(Array.from({ length: 3 }, () => small.verify('guess', encoded, '203.0.113.9')));
      assert.deepEqual(
        results.map((result) => result.kind),
        ['checked', 'checked', 'busy'],
      );
      assert.equal(small.hasRoom('203.0.113.9'), true, 'the places are given back once answered');
    } finally {
      await small.close();
    }
  });

  it('gives the addresses of one IPv6 /64 one share, so that one host cannot fill the queue alone', async () => {
    const small = new PasswordQueue({ threads: 1, maxWaiting: 20, perAddress: 2 });
    try {
      const encoded = await hashPassword('right', cost);
      const results = await Promise.all(['2001:db8:1:2::1', '2001:db8:1:2::2', '2001:db8:1:2::3'].map((ip) => small.verify('guess', encoded, ip)));
      assert.deepEqual(
        results.map((result) => result.kind),
        ['checked', 'checked', 'busy'],
      );
      const held = [small.verify('guess', encoded, '2001:db8:1:2::4'), small.verify('guess', encoded, '2001:db8:1:2::5')];
      assert.equal(small.placeFor('2001:db8:1:2::6'), null, 'the /64 holds its share');
      assert.equal(small.placeFor('2001:db8:1:3::1'), 'free', 'the next /64 has its own');
      assert.equal(small.placeFor('198.51.100.2'), 'free');
      await Promise.all(held);
    } finally {
      await small.close();
    }
  });
});

/**
 * The password queue when it is full: a flood must not refuse everyone
 * else. Every call below is made in one turn of the event loop, before any thread can
 * answer, so what is queued, displaced or refused does not depend on the machine's speed.
 */
const COST = { memory: 8, passes: 1, parallelism: 1 };

describe('a full password queue', () => {
  const queues: PasswordQueue[] = [];
  after(() => Promise.all(queues.map((queue) => queue.close())));
  const queue = () => {
    // One thread running one check, four waiting; two places per address.
    const made = new PasswordQueue({ threads: 1, maxWaiting: 4, perAddress: 2 });
    queues.push(made);
    return made;
  };

  it('gives a newcomer the place of the latest attempt of the address holding the most', async () => {
    const passwords = queue();
    const hash = await hashPassword('right', COST);
    const flood: Promise<PasswordCheck>[] = [];
    // 203.0.113.1 and .2 take two places each, .3 one: the queue (1 running, 4 waiting) is full.
    for (const ip of ['203.0.113.1', '203.0.113.1', '203.0.113.2', '203.0.113.2', '203.0.113.3']) flood.push(passwords.verify('guess', hash, ip));
    assert.equal(passwords.hasRoom('203.0.113.3'), false, 'an address holding one place cannot displace one holding two');
    assert.equal(passwords.hasRoom('198.51.100.7'), true);
    const person = passwords.verify('right', hash, '198.51.100.7');
    const answers = await Promise.all(flood);
    assert.deepEqual(await person, { kind: 'checked', matches: true });
    // .1 and .2 hold two each: .2 came later, and its latest attempt gave its place.
    assert.deepEqual(
      answers.map((answer) => answer.kind),
      ['checked', 'checked', 'checked', 'busy', 'checked'],
    );
    assert.deepEqual(passwords.counts(), { hashed: 5, refused: 0, displaced: 1 });
  });

  it('lets an attempt with a good record displace any other, and serves it first', async () => {
    const passwords = queue();
    const hash = await hashPassword('right', COST);
    const order: string[] = [];
    const send = (who: string, password: string, ip: string, trusted = false) =>
      passwords.verify(password, hash, ip, { trusted }).then((answer) => {
        order.push(`${who}:${answer.kind}`);
        return answer;
      });
    // Five addresses, one place each: nobody holds more than a newcomer could displace.
    const flood = ['1', '2', '3', '4', '5'].map((n) => send(`flood${n}`, 'guess', `203.0.113.${n}`));
    assert.equal(passwords.hasRoom('198.51.100.7'), false, 'a newcomer without a record is refused');
    assert.equal(passwords.hasRoom('198.51.100.7', { trusted: true }), true);
    const owner = send('owner', 'right', '198.51.100.7', true);
    await Promise.all([...flood, owner]);
    assert.deepEqual(await owner, { kind: 'checked', matches: true });
    // flood1 was running; the owner then went before every waiting attempt; flood5, the last to come, gave its place.
    assert.deepEqual(order, ['flood5:busy', 'flood1:checked', 'owner:checked', 'flood2:checked', 'flood3:checked', 'flood4:checked']);
    assert.deepEqual(passwords.counts(), { hashed: 5, refused: 0, displaced: 1 });
  });

  it('says whether a place is free or would be taken from another, so that a good record is read where it decides', async () => {
    const passwords = queue();
    const hash = await hashPassword('right', COST);
    assert.equal(passwords.placeFor('198.51.100.7'), 'free');
    // 203.0.113.1 and .2 take two places each, .3 one: the queue (1 running, 4 waiting) is full.
    const flood = ['203.0.113.1', '203.0.113.1', '203.0.113.2', '203.0.113.2', '203.0.113.3'].map((ip) => passwords.verify('guess', hash, ip));
    assert.equal(passwords.placeFor('198.51.100.7'), 'displacing', 'a newcomer takes the place of the latest attempt of .2');
    assert.equal(passwords.placeFor('198.51.100.7', { trusted: true }), 'displacing');
    assert.equal(passwords.placeFor('203.0.113.3'), null, 'an address holding one place cannot displace one holding two');
    assert.equal(passwords.placeFor('203.0.113.3', { trusted: true }), 'displacing', 'with a good record it can');
    await Promise.all(flood);
    assert.equal(passwords.placeFor('203.0.113.3'), 'free');
  });

  it('refuses at once, counting the refusal, when nobody can be displaced', async () => {
    const passwords = queue();
    const hash = await hashPassword('right', COST);
    const flood = ['1', '2', '3', '4', '5'].map((n) => passwords.verify('guess', hash, `203.0.113.${n}`));
    assert.deepEqual(await passwords.verify('right', hash, '198.51.100.7'), { kind: 'busy', retryAfterSeconds: passwords.retryAfterSeconds() });
    await Promise.all(flood);
    assert.deepEqual(passwords.counts(), { hashed: 5, refused: 1, displaced: 0 });
  });
});
