/**
 * A real SMTP server on loopback (the `smtp-server` package) that keeps what arrives: the
 * envelope as the client gave it, the raw message, and the message parsed (mailparser).
 */
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

export interface ReceivedMail {
  readonly from: string;
  readonly to: readonly string[];
  readonly raw: string;
  readonly parsed: ParsedMail;
}

export interface TestSmtpServer {
  readonly port: number;
  readonly url: string;
  readonly received: ReceivedMail[];
  /**
   * Resolves with the `count`-th message (1-based) once it has arrived. Without `count`, the
   * one after those arrived so far: a message that arrives before the call is missed, so a test
   * counts `received` before what sends its mail and asks for that number plus one.
   */
  next(count?: number, timeoutMs?: number): Promise<ReceivedMail>;
  close(): Promise<void>;
}

export async function startSmtpServer(
  options: { readonly port?: number; readonly delayMs?: number; readonly refuse?: () => boolean } = {},
): Promise<TestSmtpServer> {
  const received: ReceivedMail[] = [];
  const waiting: (() => void)[] = [];
  const serverOptions: SMTPServerOptions = {
    authOptional: true,
    disabledCommands: ['STARTTLS', 'AUTH'],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => {
        const finish = async () => {
          if (options.delayMs) await new Promise((resolve) => setTimeout(resolve, options.delayMs));
          if (options.refuse?.()) {
            callback(Object.assign(new Error('try again later'), { responseCode: 451 }));
            return;
          }
          const raw = Buffer.concat(chunks).toString('utf8');
          received.push({
            from: session.envelope.mailFrom === false ? '' : session.envelope.mailFrom.address,
            to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
            raw,
            parsed: await simpleParser(raw),
          });
          callback();
          for (const wake of waiting.splice(0)) wake();
        };
        void finish();
      });
    },
  };
  const server = new SMTPServer(serverOptions);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.server.address() as AddressInfo).port;
  return {
    port,
    url: `smtp://127.0.0.1:${port}`,
    received,
    next(count = received.length + 1, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no message number ${count} within ${timeoutMs} ms (${received.length} arrived)`)), timeoutMs);
        const check = () => {
          const mail = received[count - 1];
          if (mail) {
            clearTimeout(timer);
            resolve(mail);
          } else waiting.push(check);
        };
        check();
      });
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
