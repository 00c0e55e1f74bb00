import type { IncomingHttpHeaders, Server } from 'node:http';
import { createServer } from 'node:http';
import { closeServer, listenOnFreePort } from './server.ts';

/** A request as a receiver got it: its headers, its body as text, and when it arrived (ms). */
export interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
  readonly at: number;
}

/** An RFC 8935 §2.3 error, as a push receiver refuses a SET with it. */
export interface Refusal {
  readonly err: string;
  readonly description: string;
}

/**
 * What the outbox delivers to, on a loopback port: a webhook endpoint or a Shared Signals push
 * receiver (RFC 8935), as the webhook, SSF and outbox files each wrote one. It records every
 * request it answers (`received`) and answers `status` (`hang`: never, until `close()`), after
 * `delayMs` (a slow receiver keeps several senders busy at once); `refuse` makes it answer 400
 * with an RFC 8935 error instead, recording nothing; `down()` and `up()` stop it listening and
 * start it again on the same port.
 */
export class Receiver {
  readonly received: Received[] = [];
  status: number | 'hang';
  server: Server;
  port = 0;
  readonly #path: string;
  readonly #delayMs: number;
  readonly #hanging = new Set<() => void>();
  #refusal: Refusal | null = null;
  #refusals = 0;

  constructor(options: { readonly status?: number | 'hang'; readonly path?: string; readonly delayMs?: number } = {}) {
    this.status = options.status ?? 204;
    this.#path = options.path ?? '/';
    this.#delayMs = options.delayMs ?? 0;
    this.server = this.#make();
  }

  #make(): Server {
    return createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const answer = () => {
          if (this.#refusal !== null && this.#refusals > 0) {
            const refusal = this.#refusal;
            this.#refusals -= 1;
            if (this.#refusals === 0) this.#refusal = null;
            response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify(refusal));
            return;
          }
          if (this.status === 'hang') {
            this.#hanging.add(() => response.destroy());
            return;
          }
          this.received.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() });
          response.writeHead(this.status).end();
        };
        if (this.#delayMs > 0) setTimeout(answer, this.#delayMs);
        else answer();
      });
    });
  }

  /** Listens on a free loopback port. */
  async start(): Promise<this> {
    this.port = (await listenOnFreePort(this.server)).port;
    return this;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}${this.#path}`;
  }

  /** Answers the next `times` requests (every one, with Infinity) with `refusal` and 400. */
  refuse(refusal: Refusal, times = 1): void {
    this.#refusal = refusal;
    this.#refusals = times;
  }

  /** Stops listening: connections are refused until `up`. */
  async down(): Promise<void> {
    await closeServer(this.server);
  }

  /** Listens again on the same port. */
  async up(): Promise<void> {
    this.server = this.#make();
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.port, '127.0.0.1', () => resolve());
    });
  }

  /** Ends the requests it holds (`hang`) and stops listening. */
  async close(): Promise<void> {
    for (const end of this.#hanging) end();
    await closeServer(this.server);
  }
}
