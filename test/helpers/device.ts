/**
 * Helpers for the device flow tests: the device's two requests as plain HTTP, a form
 * browser that can pretend to be elsewhere (X-Forwarded-For, with TESSERA_TRUST_PROXY),
 * and the stores to run the state tests against.
 */
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import * as oidc from 'openid-client';
import pg from 'pg';
import { assertApprovalPage, FormBrowser, type Page } from './browser.ts';
import { postgresSkipReason, postgresUrl } from './postgres.ts';
import { basic, postForm, type TestClient, type TestServer, type TestUser } from './server.ts';

export const DEVICE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code';

export interface Started {
  readonly device_code: string;
  readonly user_code: string;
  readonly verification_uri: string;
  readonly verification_uri_complete: string;
  readonly expires_in: number;
  readonly interval: number;
}

/** The device's first request (RFC 8628 §3.1), expected to succeed. */
export async function startDevice(server: TestServer, client: TestClient, scope = 'openid profile', headers: Record<string, string> = {}): Promise<Started> {
  const result = await postForm(
    `${server.url}/oauth/device/authorization`,
    { scope },
    { authorization: basic(client.clientId, client.clientSecret), ...headers },
  );
  assert.equal(result.status, 200, JSON.stringify(result.body));
  return result.body as unknown as Started;
}

/**
 * The settings of a server whose devices poll every second, not every 5: openid-client waits
 * the interval before each poll, and a test's device need not wait 5 s for its tokens.
 * test/device-polling.test.ts proves the setting, and the default 5 s.
 */
export const QUICK_POLLS: Readonly<Record<string, string>> = { TESSERA_DEVICE_POLL_INTERVAL: '1' };

/**
 * openid-client polling for the device's tokens (RFC 8628 §3.4-3.5), stopped when the test
 * ends however it ends, or after a minute with no tokens, so that a failed test never
 * leaves a device polling on for the ten minutes its code lives, nor waits for it.
 */
export function pollWhileTestRuns(t: TestContext, config: oidc.Configuration, device: oidc.DeviceAuthorizationResponse) {
  const controller = new AbortController();
  t.after(() => controller.abort());
  const signal = AbortSignal.any([controller.signal, AbortSignal.timeout(60_000)]);
  const polling = oidc.pollDeviceAuthorizationGrant(config, device, undefined, { signal });
  // The test awaits it; if the test fails first, the rejection the abort causes is expected.
  polling.catch(() => {});
  return polling;
}

/** One poll of the token endpoint (RFC 8628 §3.4). */
export function poll(server: TestServer, client: TestClient, deviceCode: string) {
  return postForm(
    `${server.url}/oauth/token`,
    { grant_type: DEVICE_GRANT, device_code: deviceCode },
    { authorization: basic(client.clientId, client.clientSecret) },
  );
}

/** Asserts an RFC 6749 §5.2 error answer with status 400 and the given code. */
export function assertPollError(result: { status: number; body: Record<string, unknown> }, error: string): void {
  assert.equal(result.body['error'], error, JSON.stringify(result.body));
  assert.equal(result.status, 400);
}

/** A browser that says it is at `ip` (the server must trust X-Forwarded-For). */
export class BrowserAt extends FormBrowser {
  readonly ip: string | null;
  constructor(base: string, ip: string | null = null) {
    super(base);
    this.ip = ip;
  }
  override request(
    url: string,
    init: { method?: string; form?: Record<string, string> | URLSearchParams; headers?: Record<string, string> } = {},
  ): Promise<Page> {
    return super.request(url, this.ip === null ? init : { ...init, headers: { 'x-forwarded-for': this.ip, ...init.headers } });
  }

  /** Types a code on /device and presses Continue; returns the page that follows (sign-in, approval or an error). */
  async enterCode(code: string): Promise<Page> {
    const entry = await this.request('/device');
    return this.follow(await this.submit(entry, '/device', { user_code: code }));
  }

  /**
   * Enters the code and returns the approval page, asserting each page on the way: with
   * `user`, the sign-in page must come first and is filled in; with null, this browser is
   * signed in already and the approval page must come at once.
   */
  async reachApproval(code: string, user: Pick<TestUser, 'username' | 'password'> | null): Promise<Page> {
    let page = await this.enterCode(code);
    if (user) page = await this.signIn(page, user);
    assertApprovalPage(page, '/device/approve');
    return page;
  }

  /** `reachApproval`, then decides; returns the page after the decision. */
  async decide(code: string, user: Pick<TestUser, 'username' | 'password'> | null, decision: 'approve' | 'deny'): Promise<Page> {
    return this.submit(await this.reachApproval(code, user), '/device/approve', { decision });
  }
}

/** The visible text of a page, roughly: tags dropped, entities decoded, spaces collapsed. */
export function text(page: Page): string {
  return page.html
    .replace(/<[^>]*>/g, ' ')
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ')
    .trim();
}

export interface StoreUnderTest {
  readonly name: string;
  /** Why it is skipped here, if it is. */
  readonly skip: string | undefined;
  /** A fresh, empty database: its setting, and how to remove it. */
  fresh(): Promise<{ database: string | undefined; drop(): Promise<void> }>;
}

/**
 * SQLite always; PostgreSQL as `test/helpers/postgres.ts` decides (mandatory when
 * TESSERA_TEST_POSTGRES_URL or CI is set, skipped with the reason when it cannot be reached).
 * Each PostgreSQL run gets its own schema, put first on the search path by the URL, so runs
 * share nothing (rate-limit windows included) and leave nothing behind.
 */
export function storesUnderTest(): StoreUnderTest[] {
  const url = postgresUrl;
  return [
    { name: 'SQLite', skip: undefined, fresh: async () => ({ database: undefined, drop: async () => {} }) },
    {
      name: 'PostgreSQL',
      skip: postgresSkipReason,
      async fresh() {
        const schema = `tessera_device_${Math.random().toString(36).slice(2, 10)}`;
        const admin = new pg.Client({ connectionString: url });
        await admin.connect();
        await admin.query(`CREATE SCHEMA ${schema}`);
        const database = new URL(url);
        database.searchParams.set('options', `-c search_path=${schema}`);
        return {
          database: database.href,
          async drop() {
            await admin.query(`DROP SCHEMA ${schema} CASCADE`);
            await admin.end();
          },
        };
      },
    },
  ];
}
