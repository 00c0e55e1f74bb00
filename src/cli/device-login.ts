/**
 * `tessera device-login`: a device for people to try the Device Authorization Grant with
 * (RFC 8628). It asks for codes (§3.1), shows the user code and a QR code of
 * verification_uri_complete (§3.3.1), polls the token endpoint honouring `interval` and
 * `slow_down` (§3.4-3.5) with a live countdown, and prints the granted scopes, the ID
 * token's claims, verified against the server's published keys, and the UserInfo claims.
 *
 * It talks to the server over HTTP only, as a real device would: no store, no shared code
 * with the server but the wire format and the words of the pages (ui/locales), in the
 * language of the terminal (LC_ALL, LC_MESSAGES, LANG).
 */
import { createLocalJWKSet, jwtVerify, type JSONWebKeySet } from 'jose';
import QRCode from 'qrcode';
import { fetchFailure } from '../core/fetch-failure.ts';
import { messages, type Messages } from '../ui/i18n.ts';

export interface DeviceLoginOptions {
  readonly issuer: string;
  /** Why this issuer, when the command line did not name it (src/cli/issuer.ts): said when nothing answers there. */
  readonly issuerBecause?: string | undefined;
  readonly clientId: string;
  /** Absent for a public client, which sends its client_id in the form instead (RFC 6749 §2.3.1 is for confidential ones). */
  readonly clientSecret?: string | undefined;
  readonly scope: string;
}

export interface DeviceLoginDeps {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly fetch: typeof fetch;
  readonly now: () => number;
  readonly sleep: (ms: number) => Promise<void>;
  /** Standard output is a terminal: redraw a live countdown while waiting. */
  readonly tty: boolean;
  /**
   * Writes the command's own drawing to standard output as it is, terminal escapes and all:
   * the QR code and the countdown's redraw, never a value from the server (`stdout` escapes
   * those: cli/text.ts). `stdout` when not given.
   */
  readonly drawing?: ((text: string) => void) | undefined;
  /** What the person reads, in their language; English when not given. */
  readonly t?: Messages | undefined;
}

export const systemDeviceLoginDeps = (
  tty: boolean,
  stdout: (text: string) => void,
  stderr: (text: string) => void,
  drawing: (text: string) => void,
  t: Messages,
): DeviceLoginDeps => ({
  t,
  stdout,
  stderr,
  drawing,
  fetch: globalThis.fetch,
  now: Date.now,
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  tty,
});

const GRANT_TYPE = 'urn:ietf:params:oauth:grant-type:device_code';
/** RFC 8628 §3.5: "If no value is provided, clients MUST use 5 as the default." */
const DEFAULT_INTERVAL = 5;
/** Back-off ceiling after a connection failure (RFC 8628 §3.5 asks clients to slow down). */
const MAX_BACKOFF_INTERVAL = 60;

/** A failure to report in one line and exit 1. */
class DeviceLoginError extends Error {}

interface Metadata {
  readonly issuer: string;
  readonly device_authorization_endpoint: string;
  readonly token_endpoint: string;
  readonly jwks_uri: string;
  readonly userinfo_endpoint?: string;
}

interface DeviceAuthorization {
  readonly device_code: string;
  readonly user_code: string;
  readonly verification_uri: string;
  readonly verification_uri_complete?: string;
  readonly expires_in: number;
  readonly interval?: number;
}

/** RFC 6749 §2.3.1: id and secret are form-encoded, then Basic-encoded. */
function basicAuth(clientId: string, clientSecret: string): string {
  const encode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+');
  return `Basic ${Buffer.from(`${encode(clientId)}:${encode(clientSecret)}`).toString('base64')}`;
}

function countdown(ms: number): string {
  const seconds = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
}

async function json(response: Response): Promise<Record<string, unknown>> {
  try {
    const body: unknown = await response.json();
    return body !== null && typeof body === 'object' && !Array.isArray(body) ? (body as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

function oauthError(body: Record<string, unknown>, status: number): string {
  const error = typeof body['error'] === 'string' ? body['error'] : `HTTP ${status}`;
  return typeof body['error_description'] === 'string' ? `${error}: ${body['error_description']}` : error;
}

/** Runs the device side of the flow; returns the exit code. */
export async function deviceLogin(options: DeviceLoginOptions, deps: DeviceLoginDeps): Promise<number> {
  try {
    return await run(options, deps);
  } catch (error) {
    if (error instanceof DeviceLoginError) {
      deps.stderr(`tessera: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

async function request(deps: DeviceLoginDeps, url: string, init?: RequestInit, because?: string): Promise<Response> {
  try {
    return await deps.fetch(url, init);
  } catch (error) {
    const assumed =
      because === undefined ? '' : `; the issuer ${new URL(url).origin} is ${because}: give --issuer, or TESSERA_ISSUER (or PORT) as the server has it`;
    throw new DeviceLoginError(`cannot reach ${new URL(url).origin}: ${fetchFailure(error)}${assumed}`);
  }
}

async function discover(options: DeviceLoginOptions, deps: DeviceLoginDeps): Promise<Metadata> {
  const response = await request(deps, `${options.issuer}/.well-known/oauth-authorization-server`, undefined, options.issuerBecause);
  const body = await json(response);
  if (!response.ok) throw new DeviceLoginError(`${options.issuer} has no authorization server metadata (HTTP ${response.status})`);
  const field = (name: keyof Metadata) => {
    const value = body[name];
    if (typeof value !== 'string') throw new DeviceLoginError(`${options.issuer} does not offer the device flow (no ${name} in its metadata)`);
    return value;
  };
  // RFC 8414 §3.3: the issuer in the metadata MUST be identical to the one it was fetched for.
  if (field('issuer') !== options.issuer) {
    throw new DeviceLoginError(`the server at ${options.issuer} says its issuer is ${field('issuer')}; use --issuer ${field('issuer')} or fix TESSERA_ISSUER`);
  }
  const userinfo = body['userinfo_endpoint'];
  return {
    issuer: field('issuer'),
    device_authorization_endpoint: field('device_authorization_endpoint'),
    token_endpoint: field('token_endpoint'),
    jwks_uri: field('jwks_uri'),
    ...(typeof userinfo === 'string' ? { userinfo_endpoint: userinfo } : {}),
  };
}

async function run(options: DeviceLoginOptions, deps: DeviceLoginDeps): Promise<number> {
  const t = deps.t ?? messages('en');
  const metadata = await discover(options, deps);
  const secret = options.clientSecret;
  const authorization: Record<string, string> = secret === undefined ? {} : { authorization: basicAuth(options.clientId, secret) };
  const identification: Record<string, string> = secret === undefined ? { client_id: options.clientId } : {};
  const form = (params: Record<string, string>): RequestInit => ({
    method: 'POST',
    headers: { ...authorization, 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams({ ...identification, ...params }).toString(),
  });

  // RFC 8628 §3.1-3.2.
  const started = await request(deps, metadata.device_authorization_endpoint, form({ scope: options.scope }));
  const startBody = await json(started);
  if (!started.ok) throw new DeviceLoginError(`the server refused the device authorization request (${oauthError(startBody, started.status)})`);
  const device = startBody as unknown as DeviceAuthorization;
  if (
    typeof device.device_code !== 'string' ||
    typeof device.user_code !== 'string' ||
    typeof device.verification_uri !== 'string' ||
    typeof device.expires_in !== 'number'
  ) {
    throw new DeviceLoginError('the device authorization response is missing fields');
  }

  // RFC 8628 §3.3: tell the person where to go and what to enter.
  const link = device.verification_uri_complete ?? device.verification_uri;
  const qr = await QRCode.toString(link, { type: 'terminal', small: true });
  const draw = deps.drawing ?? deps.stdout;
  deps.stdout(
    `${t.text('deviceLogin.open')}\n\n    ${device.verification_uri}\n\n${t.text('deviceLogin.enter')}\n\n    ${device.user_code}\n\n${t.text('deviceLogin.scan')}\n\n`,
  );
  draw(qr);
  deps.stdout(`\n    ${link}\n\n`);

  const expiresAt = deps.now() + device.expires_in * 1000;
  let interval = device.interval ?? DEFAULT_INTERVAL;
  if (!deps.tty) deps.stdout(`${t.text('deviceLogin.waiting', { time: countdown(expiresAt - deps.now()) })}\n`);

  /** Waits `seconds`, redrawing the countdown every second on a terminal. */
  const wait = async (seconds: number) => {
    const until = deps.now() + seconds * 1000;
    if (!deps.tty) return deps.sleep(seconds * 1000);
    while (deps.now() < until) {
      draw('\r\x1b[K');
      deps.stdout(t.text('deviceLogin.waitingLive', { time: countdown(expiresAt - deps.now()) }));
      await deps.sleep(Math.min(1000, until - deps.now()));
    }
  };
  const endLine = () => {
    if (deps.tty) draw('\r\x1b[K');
  };

  for (;;) {
    // RFC 8628 §3.5: the client waits at least `interval` seconds between requests,
    // the first one included.
    await wait(interval);
    if (deps.now() >= expiresAt) {
      endLine();
      deps.stderr(`${t.text('deviceLogin.expired')}\n`);
      return 1;
    }
    let polled: Response;
    try {
      polled = await deps.fetch(metadata.token_endpoint, form({ grant_type: GRANT_TYPE, device_code: device.device_code }));
    } catch (error) {
      // RFC 8628 §3.5: "On encountering a connection timeout, clients MUST unilaterally
      // reduce their polling frequency before retrying."
      interval = Math.min(interval * 2, MAX_BACKOFF_INTERVAL);
      endLine();
      deps.stderr(`${t.text('deviceLogin.unreachable', { reason: error instanceof Error ? error.message : String(error), seconds: interval })}\n`);
      continue;
    }
    const body = await json(polled);
    if (polled.ok) {
      endLine();
      return printTokens(options, metadata, body, deps, t);
    }
    switch (body['error']) {
      case 'authorization_pending':
        continue;
      case 'slow_down':
        // RFC 8628 §3.5: "the interval MUST be increased by 5 seconds for this and all
        // subsequent requests."
        interval += 5;
        if (!deps.tty) deps.stdout(`${t.text('deviceLogin.slowDown', { seconds: interval })}\n`);
        continue;
      case 'temporarily_unavailable':
        // Not an RFC 8628 §3.5 answer, but the same request may succeed later (its 503 says
        // so): backed off from as from a connection timeout, rather than given up on.
        interval = Math.min(interval * 2, MAX_BACKOFF_INTERVAL);
        endLine();
        deps.stderr(`${t.text('deviceLogin.unavailable', { seconds: interval })}\n`);
        continue;
      case 'access_denied':
        endLine();
        deps.stderr(`${t.text('deviceLogin.denied')}\n`);
        return 1;
      case 'expired_token':
        endLine();
        deps.stderr(`${t.text('deviceLogin.expired')}\n`);
        return 1;
      default:
        endLine();
        deps.stderr(`${t.text('deviceLogin.refused', { reason: oauthError(body, polled.status) })}\n`);
        return 1;
    }
  }
}

async function printTokens(
  options: DeviceLoginOptions,
  metadata: Metadata,
  body: Record<string, unknown>,
  deps: DeviceLoginDeps,
  t: Messages,
): Promise<number> {
  const scope = typeof body['scope'] === 'string' ? body['scope'] : options.scope;
  deps.stdout(`${t.text('deviceLogin.approved', { scope })}\n`);
  const idToken = body['id_token'];
  if (typeof idToken !== 'string') {
    deps.stdout(`${t.text('deviceLogin.noIdToken')}\n`);
    return 0;
  }
  const jwksResponse = await request(deps, metadata.jwks_uri);
  if (!jwksResponse.ok) throw new DeviceLoginError(`cannot fetch the server's keys from ${metadata.jwks_uri} (HTTP ${jwksResponse.status})`);
  const jwks = (await jwksResponse.json()) as JSONWebKeySet;
  try {
    // OIDC Core §3.1.3.7: the ID token is signed by the issuer, for this client.
    const { payload } = await jwtVerify(idToken, createLocalJWKSet(jwks), {
      issuer: metadata.issuer,
      audience: options.clientId,
      currentDate: new Date(deps.now()),
    });
    deps.stdout(`${t.text('deviceLogin.claims', { jwksUri: metadata.jwks_uri })}\n${JSON.stringify(payload, null, 2)}\n`);
  } catch (error) {
    throw new DeviceLoginError(`the ID token did not verify: ${error instanceof Error ? error.message : String(error)}`);
  }
  // OIDC Core §5.4: with an access token issued, the claims of profile and email come from
  // the UserInfo endpoint, not the ID token.
  const accessToken = body['access_token'];
  if (metadata.userinfo_endpoint === undefined || typeof accessToken !== 'string' || body['token_type'] !== 'Bearer') return 0;
  const userinfo = await request(deps, metadata.userinfo_endpoint, { headers: { authorization: `Bearer ${accessToken}` } });
  if (!userinfo.ok) throw new DeviceLoginError(`the UserInfo endpoint answered HTTP ${userinfo.status}`);
  deps.stdout(`${t.text('deviceLogin.userinfo', { endpoint: metadata.userinfo_endpoint })}\n${JSON.stringify(await userinfo.json(), null, 2)}\n`);
  return 0;
}
