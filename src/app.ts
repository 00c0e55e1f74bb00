import fastifyCookie from '@fastify/cookie';
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Clock } from './core/clock.ts';
import type { Config } from './config/index.ts';
import { PasswordQueue } from './core/password-queue.ts';
import { eventLogFields, Events, isLockout, type EventListener } from './core/events.ts';
import { authorizationCodeGrant } from './flows/authorization-code/token.ts';
import { DpopNonces } from './flows/dpop/nonce.ts';
import { deviceCodeGrant } from './flows/device/token.ts';
import { refreshTokenGrant } from './flows/refresh/token.ts';
import { clientCredentialsGrant } from './flows/client-credentials/token.ts';
import { tokenExchangeGrant } from './flows/token-exchange/token.ts';
import { jwtBearerGrant } from './flows/jwt-bearer/token.ts';
import { trustedIssuerUrlRule } from './flows/manage/trusted-issuers.ts';
import { adminListenerHandler, adminRoutes, separateAdminListener } from './http/admin/index.ts';
import { registrationRoutes } from './http/registration.ts';
import { metadataDocumentClients } from './flows/registration/metadata-document.ts';

export { adminListenerHandler };
import type { TokenGrant } from './flows/types.ts';
import type { AppDeps } from './http/deps.ts';
import { deviceRoutes } from './http/device.ts';
import { discoveryRoutes } from './http/discovery.ts';
import { registerCors } from './http/cors.ts';
import { registerErrorHandling } from './http/errors.ts';
import { parseParams, registerFormParsing } from './http/form.ts';
import { homeRoutes } from './http/home.ts';
import { localeRoutes } from './http/locale.ts';
import { introspectionRoutes } from './http/introspection.ts';
import { listenerOptions } from './http/listener.ts';
import type { Metrics } from './http/metrics.ts';
import { browserRoutes } from './http/browser.ts';
import { parRoutes } from './http/par.ts';
import { revocationRoutes } from './http/revocation.ts';
import { scimRoutes } from './http/scim.ts';
import { registerSecurityHeaders } from './http/security.ts';
import { tokenRoutes } from './http/token.ts';
import { userinfoRoutes } from './http/userinfo.ts';
import { buildSerializer, buildValidator } from './http/schema-compilers.ts';
import type { Store } from './store/types.ts';
import { clientUrlFetch } from './core/outbound.ts';
import { ClientKeySets } from './tokens/client-jwks.ts';
import type { KeyManager } from './tokens/keys.ts';
import { KeyEncryption } from './tokens/key-encryption.ts';
import { secretBox } from './tokens/secret-box.ts';
import { randomBytes } from 'node:crypto';
import { TokenIssuer } from './tokens/issue.ts';
import { webhookTypeOf } from './core/webhook-events.ts';
import { WebhookDispatcher } from './flows/webhooks/dispatcher.ts';
import { MailDispatcher } from './flows/mail/dispatcher.ts';
import { MAIL_EVENT_TYPES, mailOutbox } from './flows/mail/outbox.ts';
import { smtpTransport } from './flows/mail/smtp.ts';
import { renderMail } from './ui/mail.ts';
import { SsfDispatcher } from './flows/ssf/dispatcher.ts';
import { TurnBudget } from './flows/outbox/worker.ts';
import { ssfTypeOf } from './core/ssf.ts';
import { ssfRoutes } from './http/ssf.ts';
import { named } from './http/plugin-name.ts';

export interface AppInput {
  readonly config: Config;
  readonly store: Store;
  readonly keys: KeyManager;
  /**
   * The key encryption key (tokens/key-encryption.ts), which also seals upstream providers'
   * secrets. Without it (a test's app), a key of this process's own: a secret sealed by
   * another process does not open.
   */
  readonly encryption?: KeyEncryption;
  readonly clock: Clock;
  /** Defaults to a pino logger at `config.logLevel`. */
  readonly logger?: FastifyServerOptions['logger'];
  /** Counts requests, store calls and events when given (main.ts, with TESSERA_METRICS_PORT). */
  readonly metrics?: Metrics;
  /** Says when the server is draining (SIGTERM): `/readyz` then answers 503. */
  readonly readiness?: Readiness;
}

/** Whether this instance should be sent new requests: false from SIGTERM on. */
export class Readiness {
  #draining = false;
  get draining(): boolean {
    return this.#draining;
  }
  drain(): void {
    this.#draining = true;
  }
}

/** The grants this server implements. */
export const GRANTS: readonly TokenGrant[] = [
  authorizationCodeGrant,
  deviceCodeGrant,
  refreshTokenGrant,
  clientCredentialsGrant,
  tokenExchangeGrant,
  jwtBearerGrant,
];

/** `listeners`: who hears of each event besides the events table (the log, the metrics). */
export function appDeps(input: AppInput, listeners: readonly EventListener[] = []): AppDeps {
  const store = input.metrics ? input.metrics.instrumentStore(input.store) : input.store;
  const clientKeys = new ClientKeySets(input.clock, input.config.clientAuth, (selfRegistered) =>
    clientUrlFetch({ selfRegistered, allowPrivateNetworks: input.config.allowPrivateNetworkUrls }),
  );
  const tokens = new TokenIssuer(input.keys, input.clock, input.config.issuer, input.config.lifetimes, store, input.config.accessTokenAlg);
  const secrets = secretBox(input.encryption ?? new KeyEncryption([randomBytes(32)]));
  const deps: AppDeps = {
    config: input.config,
    store,
    clock: input.clock,
    keys: input.keys,
    passwords: new PasswordQueue({
      threads: input.config.signIn.hashThreads,
      nice: input.config.signIn.hashNice,
      maxWaiting: input.config.signIn.queue,
      perAddress: input.config.signIn.queuePerAddress,
    }),
    clientKeys,
    // A trusted issuer's keys, cached as clients' are; its jwks_uri reached as the rule for
    // who added it says (any host for the server's owner, the public network for others).
    issuerKeys: (issuer) => {
      const rule = trustedIssuerUrlRule(input.config, issuer.addedByOwner);
      return clientKeys.keysFrom(issuer, rule === null ? fetch : clientUrlFetch(rule));
    },
    tokens,
    events: new Events(input.clock, store.events, input.metrics ? [...listeners, input.metrics.listener] : listeners),
    readiness: input.readiness ?? new Readiness(),
    secrets,
    // Mail goes out only with a mail server: without one, nothing that needs mail is offered.
    ...(input.config.mail.smtpUrl === null ? {} : { mail: mailOutbox(secrets, () => input.clock.now()) }),
    grants: GRANTS,
    dpopNonces: new DpopNonces(() => input.keys.derivedSecret('dpop nonce'), input.clock, input.config.dpop.nonceLifetime),
  };
  if (!input.config.registration.metadataDocuments.enabled) return deps;
  return { ...deps, metadataClient: metadataDocumentClients(deps) };
}

/** Builds the Fastify app from its dependencies; does not listen. */
export async function buildApp(input: AppInput): Promise<FastifyInstance> {
  const listener = listenerOptions(input.config.requestTimeoutSeconds);
  const app = Fastify({
    logger: input.logger ?? {
      level: input.config.logLevel,
      // Request URLs may carry user codes and authorization responses: log the path only.
      serializers: {
        req: (request) => ({ method: request.method, path: request.url.split('?')[0], id: request.id }),
      },
    },
    // No line per request: device polling alone would flood the log, and the hot path
    // should not pay for it. Failures and security events are logged where they happen.
    logController: new LogController({ disableRequestLogging: true }),
    trustProxy: typeof input.config.trustProxy === 'boolean' ? input.config.trustProxy : [...input.config.trustProxy],
    bodyLimit: 16 * 1024,
    // Fastify sets its server's requestTimeout from its own option (0, no limit, by default).
    requestTimeout: listener.requestTimeout,
    http: listener,
    routerOptions: { querystringParser: (query: string) => parseParams(query) },
    // The admin API's schemas refuse an unknown field (400 naming it) rather than drop it.
    ajv: { customOptions: { removeAdditional: false } },
    schemaController: { compilersFactory: { buildValidator, buildSerializer } },
  });
  // The audit trail's log line: one JSON object per event, beside the request logs. Alerts
  // are one JSON log line each, at warn, with the event under `alert`.
  // A lockout's line (once per limit and window: core/events.ts) is at warn, for whoever is on call.
  // The line's fields are built only at a level that logs it: every token request stores an
  // event, and at the default level (warn) only lockouts are logged.
  // An event some webhook may hear wakes the dispatcher (below) at once, rather than at its next look.
  let wakeDispatcher = () => {};
  // An event that queues mail wakes the mail dispatcher (below) at once.
  let wakeMail = () => {};
  // One that some Shared Signals stream may be sent wakes the SSF dispatcher (below).
  let wakeSsf = () => {};
  const built = appDeps(input, [
    (event) => {
      if (webhookTypeOf(event.type) !== null) wakeDispatcher();
      if (MAIL_EVENT_TYPES.has(event.type)) wakeMail();
    },
    (event) => {
      if (ssfTypeOf(event) !== null) wakeSsf();
    },
    (event) => {
      const level = isLockout(event) ? 'warn' : 'info';
      if ((app.log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled?.(level) ?? true) app.log[level](eventLogFields(event), 'audit event');
    },
  ]);
  const deps: AppDeps = { ...built, alert: (event) => app.log.warn({ alert: event }, `alert: ${event.type}`) };
  app.addHook('onClose', () => deps.passwords.close());
  // Refusals are counted in memory and stored one row per limit once its window has ended:
  // looked for every minute, and all of them at shutdown (before the store closes).
  const refusals = setInterval(
    () => void deps.events.flushRefusals().catch((error: unknown) => app.log.warn({ err: error }, 'storing refusal counts failed')),
    60_000,
  );
  refusals.unref();
  app.addHook('onClose', async () => {
    clearInterval(refusals);
    await deps.events.flushRefusals(true).catch((error: unknown) => app.log.warn({ err: error }, 'storing refusal counts failed'));
  });
  // The outbox: sent by every instance, each delivery by one of them at a time; its three
  // workers together begin at most TESSERA_OUTBOX_TRIES_PER_TURN tries in a turn of the event
  // loop, and while the loop is busy, fewer a second, down to TESSERA_OUTBOX_BUSY_TRIES_PER_SECOND.
  const budget = new TurnBudget(input.config.outbox.triesPerTurn, { busyTriesPerSecond: input.config.outbox.busyTriesPerSecond });
  const batch = input.config.outbox.batch;
  const dispatcher = new WebhookDispatcher({
    budget,
    batch,
    store: deps.store,
    clock: input.clock,
    secrets: deps.secrets,
    settings: input.config.webhooks,
    allowPrivateNetworkUrls: input.config.allowPrivateNetworkUrls,
    events: deps.events,
    log: app.log,
    ...(input.metrics ? { observer: input.metrics.webhooks } : {}),
  });
  wakeDispatcher = () => dispatcher.wake();
  app.addHook('onReady', async () => dispatcher.start());
  // Before the store closes: tries under way end, and their deliveries are given back.
  app.addHook('onClose', () => dispatcher.stop());
  // Mail in the outbox: sent by every instance, each message by one of them at a time.
  const transport = deps.mail === undefined ? null : smtpTransport(input.config.mail, new URL(input.config.issuer).hostname);
  if (deps.mail !== undefined && transport !== null) {
    const site = input.config.site;
    const mailer = new MailDispatcher({
      budget,
      ...(input.metrics ? { observer: input.metrics.mail } : {}),
      store: deps.store,
      clock: input.clock,
      outbox: deps.mail,
      transport,
      settings: input.config.mail,
      render: (message) => renderMail(site, message),
      host: new URL(input.config.issuer).hostname,
      events: deps.events,
      log: app.log,
    });
    wakeMail = () => mailer.wake();
    app.addHook('onReady', async () => mailer.start());
    app.addHook('onClose', () => mailer.stop());
  }
  // Shared Signals push delivery (RFC 8935), from the same outbox and by the same rules.
  const ssfDispatcher = new SsfDispatcher({
    budget,
    batch,
    store: deps.store,
    clock: input.clock,
    secrets: deps.secrets,
    tokens: deps.tokens,
    issuer: input.config.issuer,
    settings: input.config.webhooks,
    allowPrivateNetworkUrls: input.config.allowPrivateNetworkUrls,
    events: deps.events,
    log: app.log,
    ...(input.metrics ? { observer: input.metrics.ssf } : {}),
  });
  wakeSsf = () => ssfDispatcher.wake();
  app.addHook('onReady', async () => ssfDispatcher.start());
  app.addHook('onClose', () => ssfDispatcher.stop());
  if (input.metrics) {
    input.metrics.countWebhookDeliveries(() => deps.store.webhooks.countByState());
    input.metrics.countSsfDeliveries(() => deps.store.ssf.countByState());
    input.metrics.countMailDeliveries(() => deps.store.mail.countByState());
    input.metrics.instrument(app);
    input.metrics.countPendingDevices(() => deps.store.devices.countPending(input.clock.now()));
  }
  registerErrorHandling(app, input.config.site);
  if (input.config.adminListen) separateAdminListener(app);
  registerSecurityHeaders(app, input.config.site.logoUrl);
  registerFormParsing(app);
  registerCors(app, deps);
  await app.register(fastifyCookie);
  for (const routes of [
    homeRoutes,
    localeRoutes,
    discoveryRoutes,
    browserRoutes,
    tokenRoutes,
    parRoutes,
    deviceRoutes,
    revocationRoutes,
    introspectionRoutes,
    userinfoRoutes,
    registrationRoutes,
    adminRoutes,
    ssfRoutes,
    scimRoutes,
  ])
    await app.register(named(routes), { deps });
  return app;
}
