/**
 * OpenID Connect Back-Channel Logout 1.0: when a browser session ends, every client that
 * received an ID token in it is told so, server to server, with a logout token (§2.4)
 * POSTed to the back-channel logout URI it registered (§2.5). Delivery happens after the
 * browser is signed out and never holds it up; a client that cannot be reached is tried
 * again a bounded number of times, then the failure is logged with the client.
 */
import type { LogoutSettings } from '../../config/index.ts';
import { fetchFailure } from '../../core/fetch-failure.ts';
import { clientUrlFetch } from '../../core/outbound.ts';
import type { ClientRecord, SessionRecord } from '../../store/types.ts';
import type { FlowDeps } from '../types.ts';

/** Where delivery failures are reported (a pino logger fits). */
export interface LogoutLog {
  warn(details: Record<string, unknown>, message: string): void;
}

/** One logout token on its way to one client. */
interface Delivery {
  readonly client: ClientRecord;
  readonly uri: string;
  readonly token: string;
}

/**
 * Ends the back-channel side of `sessions`, which the caller has already removed: for each
 * session id, the clients recorded for it are taken (each exactly once, whoever else ends
 * the same session) and those with a back-channel logout URI are sent a logout token.
 * Resolves when the tokens are signed, with how many there are; the POSTs go on in the
 * background, and the returned `delivered` settles when they are all done (a server need
 * not wait; the command line does, before it exits).
 */
export async function sendLogoutTokens(
  deps: Pick<FlowDeps, 'store' | 'config'> & { readonly tokens: Pick<FlowDeps['tokens'], 'logoutToken'> },
  sessions: readonly SessionRecord[],
  log: LogoutLog,
): Promise<{ readonly clients: number; readonly delivered: Promise<void> }> {
  const deliveries: Delivery[] = [];
  const sids = new Map(sessions.map((session) => [session.sid, session.userId]));
  for (const [sid, userId] of sids) {
    for (const clientId of await deps.store.sessions.takeClients(sid)) {
      const client = await deps.store.clients.get(clientId);
      // §2.5: only to the URI the client registered; a client without one gets nothing.
      if (!client?.backchannelLogoutUri) continue;
      deliveries.push({ client, uri: client.backchannelLogoutUri, token: await deps.tokens.logoutToken(client, userId, sid) });
    }
  }
  const allowPrivateNetworks = deps.config.allowPrivateNetworkUrls;
  const delivered = Promise.all(
    deliveries.map((delivery) =>
      deliver(clientUrlFetch({ selfRegistered: delivery.client.registeredBy !== undefined, allowPrivateNetworks }), delivery, deps.config.logout, log),
    ),
  ).then(() => undefined);
  return { clients: deliveries.length, delivered };
}

/**
 * §2.5: "The OP sends an HTTP POST request ... using the application/x-www-form-urlencoded
 * format, with a logout_token parameter"; §2.8: the RP answers 200 (we take any 2xx) or 400
 * when the token is bad. Only an unreachable client or a 5xx is tried again.
 */
async function deliver(send: typeof fetch, delivery: Delivery, settings: LogoutSettings, log: LogoutLog): Promise<void> {
  let problem = '';
  for (let attempt = 1; attempt <= settings.attempts; attempt++) {
    if (attempt > 1) await wait(settings.retryDelayMs * 2 ** (attempt - 2));
    try {
      const response = await send(delivery.uri, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'cache-control': 'no-cache' },
        body: new URLSearchParams({ logout_token: delivery.token }).toString(),
        redirect: 'manual',
        signal: AbortSignal.timeout(settings.timeoutSeconds * 1000),
      });
      await response.body?.cancel();
      if (response.ok) return;
      problem = `answered ${response.status}`;
      if (response.status < 500) break;
    } catch (error) {
      // Why, as the SSF dispatcher says it: fetch's own message is only "fetch failed".
      problem = fetchFailure(error);
    }
  }
  log.warn({ client: delivery.client.id, uri: delivery.uri, problem }, 'back-channel logout could not be delivered');
}

/** A wait that does not keep the process alive (a server stopping does not wait for retries). */
function wait(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
