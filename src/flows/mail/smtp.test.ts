/**
 * The SMTP transport (flows/mail/smtp.ts), from the settings an operator writes
 * (TESSERA_SMTP_URL, TESSERA_SMTP_STARTTLS, TESSERA_MAIL_FROM, TESSERA_SMTP_TIMEOUT) to real
 * `smtp-server`s on loopback: the helper's (test/helpers/smtp.ts) where what arrived matters,
 * and servers of the test's own where the session does (the EHLO name, AUTH, STARTTLS), or
 * plain sockets where nothing should be said at all. None without a URL; a message handed
 * over as the outbox gave it, no value of it read as a command, a header of its own, a file or
 * a URL; the host's name in EHLO and the URL's user name and password, decoded, in AUTH;
 * STARTTLS required, tried, or never; `smtps://` in TLS from the first byte; the default
 * ports; a server that never greets given up after the timeout; and a failed try told
 * without the recipient's address or domain.
 *
 * mail/dispatcher.test.ts plays the transport to check the retries; test/recovery.test.ts and
 * test/sign-up.test.ts send real messages from a running server through the helper's server.
 */
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it, type TestContext } from 'node:test';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';
import { loadConfig } from '../../config/index.ts';
import type { MailSettings } from '../../config/types.ts';
import { startSmtpServer, type TestSmtpServer } from '../../../test/helpers/smtp.ts';
import { type Outgoing, smtpFailure, smtpTransport } from './smtp.ts';

/** The issuer's host: what Tessera calls itself in EHLO. */
const HOST = 'auth.example.com';

/** The mail settings of a server started with `env` (and the issuer above). */
function settings(env: Readonly<Record<string, string>>): MailSettings {
  return loadConfig({ TESSERA_ISSUER: `https://${HOST}`, ...env }).mail;
}

const message = (overrides: Partial<Outgoing> = {}): Outgoing => ({
  to: { address: 'ada@example.com', name: 'Ada Lovelace' },
  subject: 'Reset your password',
  text: 'Open https://auth.example.com/reset-password?token=abc within an hour.',
  html: '<p>Open <a href="https://auth.example.com/reset-password?token=abc">this link</a> within an hour.</p>',
  messageId: '<delivery-1@auth.example.com>',
  ...overrides,
});

/** How a send went: 'sent', or the error's code and message. */
async function send(mail: MailSettings, outgoing: Outgoing = message()): Promise<string> {
  const transport = smtpTransport(mail, HOST);
  assert.ok(transport);
  try {
    await transport.send(outgoing);
    return 'sent';
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    return `${code}: ${message}`;
  } finally {
    transport.close();
  }
}

/** What a server of the test's own saw of each session: its EHLO name, whether in TLS, who signed in, and the logins tried. */
interface Seen {
  readonly mail: { ehlo: string | false; secure: boolean; user: unknown }[];
  readonly logins: { username: string | undefined; password: string | null | undefined }[];
}

/** An `smtp-server` on `host`, port 0, that keeps nothing but what `Seen` says; closed after the test. */
async function sessionServer(t: TestContext, options: SMTPServerOptions, host = '127.0.0.1'): Promise<{ url: string; seen: Seen }> {
  const seen: Seen = { mail: [], logins: [] };
  const server = new SMTPServer({
    logger: false,
    authOptional: true,
    ...options,
    onAuth(auth, _session, callback) {
      seen.logins.push({ username: auth.username, password: auth.password });
      callback(null, { user: auth.username });
    },
    onMailFrom(_address, session, callback) {
      seen.mail.push({ ehlo: session.hostNameAppearsAs, secure: session.secure, user: session.user });
      callback();
    },
    onData(stream, _session, callback) {
      stream.resume();
      stream.on('end', () => callback());
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, host, () => resolve());
  });
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.server.address() as { port: number };
  return { url: `smtp://${host.includes(':') ? `[${host}]` : host}:${port}`, seen };
}

/**
 * A listener on 127.0.0.1 that says nothing (or only `greeting`, then nothing; or, `trickle`,
 * a greeting it never ends, a byte at a time): counts connections and keeps the first bytes
 * each sends (or, `hangUp`, closes each at once); null when `port` cannot be listened on here.
 */
async function silentSocket(
  t: TestContext,
  { port = 0, hangUp = false, greeting = '', trickle = false }: { port?: number; hangUp?: boolean; greeting?: string; trickle?: boolean } = {},
): Promise<{ port: number; connections: number; first: Buffer[] } | null> {
  const first: Buffer[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;
  const server: Server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    if (hangUp) socket.destroy();
    else if (greeting !== '') socket.write(greeting);
    else if (trickle) {
      const timer = setInterval(() => socket.write('2'), 20);
      socket.on('close', () => clearInterval(timer));
    }
    socket.once('data', (chunk: Buffer) => {
      first.push(chunk);
      // Having greeted, it hears the client out, and answers nothing.
      if (greeting === '') socket.destroy();
    });
    socket.on('error', () => {});
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
  } catch {
    return null;
  }
  t.after(() => {
    for (const socket of sockets) socket.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return {
    port: (server.address() as { port: number }).port,
    get connections() {
      return connections;
    },
    first,
  };
}

describe('the SMTP transport (flows/mail/smtp.ts)', () => {
  let server: TestSmtpServer;

  before(async () => {
    server = await startSmtpServer();
  });
  after(() => server.close());

  it('is none without TESSERA_SMTP_URL: no mail is sent', () => {
    const none = settings({});
    assert.equal(none.smtpUrl, null);
    assert.equal(smtpTransport(none, HOST), null);
  });

  it('hands a message over as the outbox gave it: from TESSERA_MAIL_FROM, to its recipient, its subject, text and HTML, under its Message-ID', async () => {
    const mail = settings({ TESSERA_SMTP_URL: server.url, TESSERA_SMTP_STARTTLS: 'off', TESSERA_MAIL_FROM: 'Tessera Sign-in <no-reply@auth.example.com>' });
    assert.equal(await send(mail), 'sent');
    const arrived = server.received.at(-1)!;
    // RFC 5321 §3.3: the envelope, MAIL FROM and RCPT TO.
    assert.equal(arrived.from, 'no-reply@auth.example.com');
    assert.deepEqual(arrived.to, ['ada@example.com']);
    // RFC 5322 §3.6: the message's own fields.
    assert.deepEqual(arrived.parsed.from?.value, [{ name: 'Tessera Sign-in', address: 'no-reply@auth.example.com' }]);
    assert.deepEqual(
      (Array.isArray(arrived.parsed.to) ? arrived.parsed.to : [arrived.parsed.to]).flatMap((to) => to?.value),
      [{ name: 'Ada Lovelace', address: 'ada@example.com' }],
    );
    assert.equal(arrived.parsed.subject, 'Reset your password');
    assert.equal(arrived.parsed.text?.trim(), message().text);
    assert.equal(arrived.parsed.html, message().html);
    // RFC 5322 §3.6.4: the same id on every try, so that a receiver may drop a copy.
    assert.equal(arrived.parsed.messageId, '<delivery-1@auth.example.com>');
    assert.match(arrived.raw, /^Message-ID: <delivery-1@auth\.example\.com>\r$/m);
  });

  it('writes every value as a header’s or the body’s, never as a command or a header of its own (RFC 2047, RFC 5321 §4.5.2)', async () => {
    const mail = settings({ TESSERA_SMTP_URL: server.url, TESSERA_SMTP_STARTTLS: 'off', TESSERA_MAIL_FROM: 'Tessera, Ltd. <no-reply@auth.example.com>' });
    const count = server.received.length;
    const outgoing = message({
      to: { address: 'ada@example.com', name: 'Lovelace, Ada "Countess"' },
      subject: 'Réinitialiser\r\nBcc: eve@example.com',
      // A line of a single dot ends DATA unless doubled (RFC 5321 §4.5.2, transparency).
      text: 'Hello\r\n.\r\nRCPT TO:<eve@example.com>\r\nQUIT',
    });
    assert.equal(await send(mail, outgoing), 'sent');
    assert.equal(server.received.length, count + 1, 'one message');
    const arrived = server.received.at(-1)!;
    assert.deepEqual(arrived.to, ['ada@example.com'], 'no recipient but the one given');
    assert.equal(arrived.parsed.headers.has('bcc'), false, 'no header but those written');
    assert.equal(arrived.parsed.subject, 'Réinitialiser Bcc: eve@example.com', 'the line break is the subject’s, encoded');
    assert.match(arrived.raw, /^Subject: =\?UTF-8\?Q\?/m, 'RFC 2047 encoded words');
    assert.deepEqual(arrived.parsed.from?.value, [{ name: 'Tessera, Ltd.', address: 'no-reply@auth.example.com' }]);
    assert.deepEqual(
      (Array.isArray(arrived.parsed.to) ? arrived.parsed.to : [arrived.parsed.to]).flatMap((to) => to?.value),
      [{ name: 'Lovelace, Ada "Countess"', address: 'ada@example.com' }],
    );
    assert.equal(arrived.parsed.text?.trim(), 'Hello\n.\nRCPT TO:<eve@example.com>\nQUIT', 'the body as written');
  });

  it('reads no file or URL that a message might name: nothing outside it is attached', async () => {
    const mail = settings({ TESSERA_SMTP_URL: server.url, TESSERA_SMTP_STARTTLS: 'off' });
    const count = server.received.length;
    const cases: [string, Outgoing, RegExp][] = [
      ['a file', message({ text: { path: '/etc/hostname' } as unknown as string }), /File access rejected/],
      ['a URL', message({ html: { href: 'http://127.0.0.1:9/' } as unknown as string }), /Url access rejected/],
    ];
    await Promise.all(cases.map(async ([what, outgoing, refusal]) => assert.match(await send(mail, outgoing), refusal, what)));
    assert.equal(server.received.length, count, 'nothing sent');
  });

  it('names itself in EHLO by the issuer’s host, and signs in with the URL’s user name and password, decoded', async (t) => {
    const { url, seen } = await sessionServer(t, { disabledCommands: ['STARTTLS'], allowInsecureAuth: true });
    const signedIn = url.replace('smtp://', 'smtp://mail%40auth.example.com:p%40ss%3Aw%2Frd%20x@');
    assert.equal(await send(settings({ TESSERA_SMTP_URL: signedIn, TESSERA_SMTP_STARTTLS: 'off' })), 'sent');
    assert.deepEqual(seen.logins, [{ username: 'mail@auth.example.com', password: 'p@ss:w/rd x' }]);
    assert.equal(await send(settings({ TESSERA_SMTP_URL: url, TESSERA_SMTP_STARTTLS: 'off' })), 'sent');
    assert.equal(seen.logins.length, 1, 'no AUTH without a user name in the URL');
    assert.deepEqual(seen.mail, [
      { ehlo: HOST, secure: false, user: 'mail@auth.example.com' },
      { ehlo: HOST, secure: false, user: undefined },
    ]);
  });

  it('with smtp://, sends only after STARTTLS when it is required, upgrades when offered if told to try, and never upgrades when off', async (t) => {
    // STARTTLS not offered; or offered with smtp-server's own certificate, which no client trusts: an upgrade is tried, and fails.
    const PLAIN: SMTPServerOptions = { disabledCommands: ['STARTTLS'] };
    const OFFERED: SMTPServerOptions = {};
    const cases: [string, SMTPServerOptions, 'sent' | RegExp][] = [
      // TESSERA_SMTP_STARTTLS=require: "a server that does not offer STARTTLS gets no message".
      ['require', PLAIN, /^ETLS: /],
      ['try', PLAIN, 'sent'],
      // try: "upgrade when offered": never the message in the clear to a server that offers it.
      ['try', OFFERED, /^ESOCKET: .*certificate/],
      // off: "never (a test server)".
      ['off', OFFERED, 'sent'],
    ];
    // Side by side, each to a server of its own: smtp-server waits 100 ms before it greets.
    await Promise.all(
      cases.map(async ([startTls, options, expected]) => {
        const what = `${startTls}, STARTTLS ${options === PLAIN ? 'not ' : ''}offered`;
        const { url, seen } = await sessionServer(t, options);
        const result = await send(settings({ TESSERA_SMTP_URL: url, TESSERA_SMTP_STARTTLS: startTls }));
        if (expected === 'sent') {
          assert.equal(result, 'sent', what);
          assert.deepEqual(
            seen.mail.map((session) => session.secure),
            [false],
            `${what}: sent in the clear`,
          );
        } else {
          assert.match(result, expected, what);
          assert.deepEqual(seen.mail, [], `${what}: nothing sent in the clear`);
        }
      }),
    );
  });

  it('with smtps://, speaks TLS from the first byte', async (t) => {
    const socket = await silentSocket(t);
    assert.ok(socket);
    const result = await send(settings({ TESSERA_SMTP_URL: `smtps://127.0.0.1:${socket.port}`, TESSERA_SMTP_STARTTLS: 'off' }));
    assert.notEqual(result, 'sent');
    // RFC 8446 §5.1: a TLS record of type handshake (22), the ClientHello, before any greeting.
    assert.equal(socket.first[0]?.[0], 22, 'a TLS handshake, not a wait for the greeting');
    const count = server.received.length;
    assert.match(await send(settings({ TESSERA_SMTP_URL: server.url.replace('smtp:', 'smtps:') })), /^ESOCKET: /, 'a plain server is sent nothing');
    assert.equal(server.received.length, count);
  });

  it('connects to port 587 with smtp:// and 465 with smtps:// when the URL names none', async (t) => {
    for (const [scheme, port] of [
      ['smtp', 587],
      ['smtps', 465],
    ] as const) {
      // Closed as it is reached: the try fails at once, having reached the port.
      const socket = await silentSocket(t, { port, hangUp: true });
      if (socket === null) {
        t.diagnostic(`port ${port} of 127.0.0.1 cannot be listened on here: not checked`);
        continue;
      }
      const result = await send(settings({ TESSERA_SMTP_URL: `${scheme}://127.0.0.1`, TESSERA_SMTP_STARTTLS: 'off' }));
      assert.notEqual(result, 'sent');
      assert.equal(socket.connections, 1, `${scheme}:// reached port ${port}`);
    }
  });

  // The test's own timeout is a bound for a break, not a measure: each try gives up after 100 ms.
  it('gives up on a server that never ends its greeting, or never answers, after TESSERA_SMTP_TIMEOUT', { timeout: 10_000 }, async (t) => {
    // Never idle, so that only the greeting's own timeout ends the wait.
    const trickling = await silentSocket(t, { trickle: true });
    const greetsOnly = await silentSocket(t, { greeting: '220 mail.example.com ESMTP\r\n' });
    assert.ok(trickling && greetsOnly);
    const mail = (port: number) => ({ ...settings({ TESSERA_SMTP_URL: `smtp://127.0.0.1:${port}`, TESSERA_SMTP_STARTTLS: 'off' }), timeoutSeconds: 0.1 });
    const [neverGreeted, neverAnswered] = await Promise.all([send(mail(trickling.port)), send(mail(greetsOnly.port))]);
    assert.equal(neverGreeted, 'ETIMEDOUT: Greeting never received');
    assert.deepEqual(trickling.first, [], 'nothing said before the greeting');
    assert.equal(neverAnswered, 'ETIMEDOUT: Timeout', 'no answer to EHLO');
    assert.match(greetsOnly.first[0]?.toString() ?? '', /^EHLO auth\.example\.com\r\n/);
  });

  it('reaches a server at an IPv6 address, written in brackets in the URL', async (t) => {
    let ipv6: Awaited<ReturnType<typeof sessionServer>>;
    try {
      ipv6 = await sessionServer(t, { disabledCommands: ['STARTTLS'] }, '::1');
    } catch {
      t.skip('no IPv6 loopback here');
      return;
    }
    assert.match(ipv6.url, /^smtp:\/\/\[::1\]:\d+$/);
    assert.equal(await send(settings({ TESSERA_SMTP_URL: ipv6.url, TESSERA_SMTP_STARTTLS: 'off' })), 'sent');
    assert.equal(ipv6.seen.mail.length, 1);
  });
});

describe('a failed try in words (smtpFailure)', () => {
  it("replaces every address and the recipient's domain, written as given or in ASCII, but not a longer name ending in it", () => {
    const said = (message: string, recipient: string) => smtpFailure(Object.assign(new Error(message), { code: 'EENVELOPE', command: 'RCPT TO' }), recipient);
    assert.equal(
      said('450 <Ada@Example.com>: rejected, see http://postgrey.example.net/help/EXAMPLE.COM.html via smtp.example.com', 'ada@example.com'),
      '450 <[address]>: rejected, see http://postgrey.example.net/help/[domain].html via smtp.example.com (EENVELOPE, RCPT TO)',
    );
    assert.equal(said('550 bücher.example and xn--bcher-kva.example refused', 'ada@bücher.example'), '550 [domain] and [domain] refused (EENVELOPE, RCPT TO)');
    assert.equal(smtpFailure('refused ada@example.com', null), 'refused [address]');
  });
});
