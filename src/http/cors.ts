import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { OAuthError } from '../core/errors.ts';
import type { ClientRecord, Store } from '../store/types.ts';
import type { Clock } from '../core/clock.ts';
import { DEVICE_AUTHORIZATION_PATH, PAR_PATH, REVOCATION_PATH, TOKEN_PATH, USERINFO_PATH } from '../core/endpoints.ts';

declare module 'fastify' {
  interface FastifyRequest {
    /** The client the request was made for, once known: it decides which origins may read the answer. */
    oauthClient?: ClientRecord;
  }
}

/**
 * The endpoints a browser app calls from its own origin. The authorization endpoint is a
 * navigation, never a CORS call (RFC 9700 §2.6), and introspection is for resource servers.
 */
export const CORS_ENDPOINTS: readonly { readonly path: string; readonly methods: string }[] = [
  { path: TOKEN_PATH, methods: 'POST' },
  { path: PAR_PATH, methods: 'POST' },
  { path: DEVICE_AUTHORIZATION_PATH, methods: 'POST' },
  { path: REVOCATION_PATH, methods: 'POST' },
  { path: USERINFO_PATH, methods: 'GET, POST' },
];

/** How long a browser may cache a preflight answer, seconds. */
const PREFLIGHT_MAX_AGE = 600;

/**
 * The registered web origins of all clients, read at most every few seconds: a preflight
 * names no client, so it is answered for an origin some client registered. Refreshing on a
 * miss lets a newly registered app work at once without a lookup per request.
 */
class WebOrigins {
  readonly #store: Store;
  readonly #clock: Clock;
  #origins = new Set<string>();
  #loadedAt = -Infinity;

  constructor(store: Store, clock: Clock) {
    this.#store = store;
    this.#clock = clock;
  }

  async registered(origin: string): Promise<boolean> {
    const age = this.#clock.now() - this.#loadedAt;
    if (age > 30_000 || (!this.#origins.has(origin) && age > 2_000)) {
      const clients = await this.#store.clients.list();
      this.#origins = new Set(clients.flatMap((client) => client.webOrigins));
      this.#loadedAt = this.#clock.now();
    }
    return this.#origins.has(origin);
  }
}

/**
 * CORS for browser apps (public clients registered with web origins): preflights and
 * responses carry `Access-Control-Allow-Origin` only for a registered origin, and a request
 * from a browser origin that the client did not register is refused outright.
 */
export function registerCors(app: FastifyInstance, deps: { readonly store: Store; readonly clock: Clock; readonly config: { readonly issuer: string } }): void {
  const origins = new WebOrigins(deps.store, deps.clock);
  const ownOrigin = new URL(deps.config.issuer).origin;
  const paths = new Map(CORS_ENDPOINTS.map((endpoint) => [endpoint.path, endpoint.methods]));
  const crossOrigin = (request: FastifyRequest): string | null => {
    const origin = request.headers.origin;
    return origin !== undefined && origin !== ownOrigin && paths.has(request.url.split('?')[0]!) ? origin : null;
  };

  for (const [path, methods] of paths) {
    app.options(path, async (request, reply) => {
      const origin = crossOrigin(request);
      reply.header('Vary', 'Origin').header('Cache-Control', 'no-store');
      if (origin === null || !(await origins.registered(origin))) {
        return reply.status(403).send(new OAuthError('invalid_request', 'this origin is not registered for any client', { status: 403 }).toJSON());
      }
      return reply
        .status(204)
        .header('Access-Control-Allow-Origin', origin)
        .header('Access-Control-Allow-Methods', methods)
        .header('Access-Control-Allow-Headers', 'Authorization, Content-Type, DPoP')
        .header('Access-Control-Max-Age', String(PREFLIGHT_MAX_AGE))
        .send();
    });
  }

  const allow = (reply: FastifyReply, origin: string) =>
    reply.header('Access-Control-Allow-Origin', origin).header('Access-Control-Expose-Headers', 'WWW-Authenticate, DPoP-Nonce');
  // A callback hook, not an async one: it runs on every response, most of which come from
  // no browser origin, and an async hook costs a promise per response.
  app.addHook('onSend', (request: FastifyRequest, reply: FastifyReply, payload, done) => {
    const origin = crossOrigin(request);
    if (origin === null || request.method === 'OPTIONS') return done(null, payload);
    reply.header('Vary', 'Origin');
    // Before the client is known (a failed authentication), any registered origin may read
    // the error, so the app can show it; after, only the client's own origins.
    if (request.oauthClient) {
      if (request.oauthClient.webOrigins.includes(origin)) allow(reply, origin);
      return done(null, payload);
    }
    origins.registered(origin).then(
      (allowed) => {
        if (allowed) allow(reply, origin);
        done(null, payload);
      },
      (error: Error) => done(error),
    );
  });
}

/**
 * Binds a request to its client: refused when it comes from a browser origin the client did
 * not register, since a browser app's origin is all that tells it apart from a copy of it.
 */
export function bindClient(request: FastifyRequest, client: ClientRecord, issuer: string): void {
  request.oauthClient = client;
  const origin = request.headers.origin;
  if (origin !== undefined && origin !== new URL(issuer).origin && !client.webOrigins.includes(origin)) {
    throw new OAuthError('invalid_client', 'this client is not registered for calls from this web origin');
  }
}
