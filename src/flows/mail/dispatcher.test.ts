/**
 * The mail dispatcher over the flow world's store, with a transport the test plays: a message
 * queued in its event's transaction is handed over once, under the same Message-ID on every
 * try, its sealed copy erased once delivered; a server that refuses is tried again; one that
 * never takes it leaves a dead letter, an event and a warning. test/mail.test.ts and the
 * pages' tests hand the same to a real SMTP server on loopback.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it, type TestContext } from 'node:test';
import { systemClock } from '../../core/clock.ts';
import { flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { transactionWithEvents } from '../events.ts';
import { MailDispatcher } from './dispatcher.ts';
import { mailOutbox, type MailMessage, type MailOutbox } from './outbox.ts';
import type { Outgoing } from './smtp.ts';

/** A mail server that refuses the first `refusals` tries of each message (with `refusal`'s error), then takes them. */
class PlayedServer {
  readonly sent: Outgoing[] = [];
  readonly tries = new Map<string, number>();
  readonly refusals: number;
  readonly refusal: () => Error;
  constructor(refusals: number, refusal = () => new Error('451 4.3.0 try again later')) {
    this.refusals = refusals;
    this.refusal = refusal;
  }
  send = async (message: Outgoing): Promise<void> => {
    const tries = (this.tries.get(message.messageId) ?? 0) + 1;
    this.tries.set(message.messageId, tries);
    if (tries <= this.refusals) throw this.refusal();
    this.sent.push(message);
  };
  close = (): void => {};
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waited 5 s for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('the mail dispatcher', () => {
  let world: FlowWorld;
  /** The outbox on the real clock, as the dispatcher reads it: the world's clock stands still, and retries are due by time. */
  let outbox: MailOutbox;
  const warnings: Record<string, unknown>[] = [];

  before(async () => {
    world = await flowWorld();
    outbox = mailOutbox(world.secrets, () => Date.now());
  });
  after(() => world.close());

  /** A dispatcher handing mail to `server`, retrying after 20 ms (doubled) for `windowSeconds`; the test's alone, stopped after it. */
  function dispatcher(t: TestContext, server: PlayedServer, windowSeconds: number): MailDispatcher {
    const made = new MailDispatcher({
      store: world.store,
      clock: systemClock,
      outbox,
      transport: server,
      settings: { ...world.config.mail, retryDelayMs: 20, retryWindowSeconds: windowSeconds },
      render: (message) => ({ subject: `[${message.kind}] for ${message.to.address}`, text: String(message.values['link']), html: '<p>hello</p>' }),
      host: 'auth.example.com',
      events: world.deps.events,
      log: { warn: (details) => void warnings.push(details) },
    });
    t.after(() => made.stop());
    made.start(20);
    return made;
  }

  /** A message queued in the transaction of its event, as a flow queues one: its delivery's id and its event's. */
  async function queued(message: MailMessage): Promise<{ id: string; eventId: string }> {
    let eventId = '';
    await transactionWithEvents(world.deps, async (tx, record) => {
      const event = await record({ type: 'recovery.requested', detail: { accounts: 1 } });
      eventId = event.id;
      assert.equal(await outbox.queue(tx, event, message), true);
    });
    const [delivery] = await world.store.mail.forEvent(eventId);
    return { id: delivery!.id, eventId };
  }

  const message = (address: string): MailMessage => ({
    kind: 'recovery',
    to: { address, name: 'Ada' },
    locale: 'en',
    values: { username: 'ada', link: `https://auth.example.com/reset-password?token=${address}`, expiresAt: 0 },
  });

  const delivery = async ({ eventId }: { eventId: string }) => (await world.store.mail.forEvent(eventId))[0]!;

  it('hands a message over once, as rendered, under its own Message-ID, and erases its sealed copy', async (t) => {
    const server = new PlayedServer(0);
    const running = dispatcher(t, server, 60);
    const mail = await queued(message('ada@example.com'));
    const { id } = mail;
    running.wake();
    await until('the message to be delivered', async () => (await delivery(mail)).state === 'delivered');
    assert.deepEqual(server.sent, [
      {
        subject: '[recovery] for ada@example.com',
        text: 'https://auth.example.com/reset-password?token=ada@example.com',
        html: '<p>hello</p>',
        to: { address: 'ada@example.com', name: 'Ada' },
        messageId: `<${id}@auth.example.com>`,
      },
    ]);
    const done = await delivery(mail);
    assert.deepEqual([done.message, done.attempts], [null, 1], 'nothing of the message is kept once it is sent');
  });

  it('tries a refused message again, under the same Message-ID, until the server takes it', async (t) => {
    const server = new PlayedServer(2);
    const running = dispatcher(t, server, 60);
    const mail = await queued(message('grace@example.com'));
    const { id } = mail;
    running.wake();
    await until('the third try to be taken', async () => (await delivery(mail)).state === 'delivered');
    assert.deepEqual([...server.tries.entries()], [[`<${id}@auth.example.com>`, 3]]);
    assert.equal(server.sent.length, 1);
    assert.equal((await delivery(mail)).attempts, 3);
  });

  /** A message to `address` that `server` never takes, given up after a second: its dead delivery, its one mail.dead_lettered event and its warning. */
  async function deadLetter(t: TestContext, server: PlayedServer, address: string) {
    const running = dispatcher(t, server, 1);
    const mail = await queued(message(address));
    const { id } = mail;
    running.wake();
    await until('the dead letter', async () => (await delivery(mail)).state === 'dead');
    // The event follows the dead letter's write (the worker settles, then tells the kind): waited for, not assumed there already.
    const events = async () =>
      (await world.store.events.list({ limit: 50 })).filter((event) => event.type === 'mail.dead_lettered' && event.detail['mail'] === id);
    await until('the mail.dead_lettered event', async () => (await events()).length > 0);
    const [event, ...more] = await events();
    assert.equal(more.length, 0, 'one event');
    const warning = warnings.find((logged) => logged['mail'] === id);
    assert.ok(warning, 'a warning');
    return { dead: await delivery(mail), event: event!, warning };
  }

  it('gives a message the server never takes up after its retry window: a dead letter, an event and a warning', async (t) => {
    const server = new PlayedServer(Number.POSITIVE_INFINITY);
    const { dead, event } = await deadLetter(t, server, 'margaret@example.com');
    assert.match(dead.lastError ?? '', /451 4\.3\.0/);
    assert.equal(event.detail['last_error'], dead.lastError);
    assert.ok(dead.attempts > 1, `tried ${dead.attempts} times`);
    assert.equal(server.sent.length, 0);
  });

  // What Postfix and postgrey answer, as nodemailer reports it: its words, then the server's reply.
  const rejected = "Can't send mail - all recipients were rejected: 450 4.2.0 <Margaret@Example.com>: Recipient address rejected";
  const refusals: [string, () => Error, RegExp][] = [
    ['a plain error', () => new Error(rejected), /^Can't send mail - all recipients were rejected: 450 4\.2\.0 <\[address\]>: Recipient address rejected$/],
    [
      "nodemailer's error, with its code, reply and command",
      () => {
        const reply = '450 4.2.0 <margaret@example.com>: Recipient address rejected: Greylisted, see http://postgrey.schweikert.ch/help/example.com.html';
        return Object.assign(new Error(`Can't send mail - all recipients were rejected: ${reply}`), {
          code: 'EENVELOPE',
          response: reply,
          responseCode: 450,
          command: 'RCPT TO',
        });
      },
      /^Can't send mail - all recipients were rejected: 450 4\.2\.0 <\[address\]>: Recipient address rejected: Greylisted, see http:\/\/postgrey\.schweikert\.ch\/help\/\[domain\]\.html \(EENVELOPE, RCPT TO\)$/,
    ],
  ];
  for (const [what, refusal, kept] of refusals) {
    it(`keeps the recipient out of a refusal's text (${what}): the last error, the warning and the event say why, never to whom`, async (t) => {
      const { dead, event, warning } = await deadLetter(t, new PlayedServer(Number.POSITIVE_INFINITY, refusal), 'margaret@example.com');
      assert.match(dead.lastError ?? '', kept);
      const told = { 'the last error': dead.lastError ?? '', 'the warning': JSON.stringify(warning), "the event's detail": JSON.stringify(event.detail) };
      for (const [where, text] of Object.entries(told)) {
        assert.match(text, /450 4\.2\.0/, where);
        assert.doesNotMatch(text, /margaret|example\.com/i, where);
      }
    });
  }
});
