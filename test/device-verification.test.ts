import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { ManualClock } from '../src/core/clock.ts';
import { deviceCodeKey, newDeviceCode } from '../src/flows/device/device-code.ts';
import { normalizeUserCode } from '../src/flows/device/user-code.ts';
import { cookieNames } from '../src/flows/session/cookies.ts';
import { assertPollError, BrowserAt, poll, startDevice, text } from './helpers/device.ts';
import { assertApprovalPage } from './helpers/browser.ts';
import { startTestServer, type TestClient, type TestServer, type TestUser } from './helpers/server.ts';
import { startWithApp } from './helpers/fixtures.ts';
import { pendingDevice } from './store/fixtures.ts';

const MINUTE = 60_000;

/** A user code that is well formed and belongs to no request (one in 2.56 × 10^10 it does). */
const WRONG_CODE = 'BBBB-BBBB';

describe('the device verification pages (RFC 8628 §3.3, §5.1, §5.4)', () => {
  let clock: ManualClock, server: TestServer, client: TestClient, user: TestUser;
  let addresses = 0;

  before(async () => {
    clock = new ManualClock();
    // Each test is its own client address (X-Forwarded-For), so wrong codes in one do not
    // lock out another.
    ({ server, client, user } = await startWithApp({
      server: { clock, env: { TESSERA_TRUST_PROXY: 'true' } },
      client: { name: 'Living Room TV', scopes: ['openid', 'profile', 'email'] },
      user: { username: 'grace', name: 'Grace Hopper' },
    }));
  });
  after(() => server.close());

  /** A fresh client address in its own /24. */
  function address(): string {
    addresses += 1;
    return `198.51.${addresses}.10`;
  }

  it('pre-fills the code from verification_uri_complete and waits for the person to confirm it', async () => {
    const started = await startDevice(server, client);
    const browser = new BrowserAt(server.url, address());
    const page = await browser.request(started.verification_uri_complete);
    assert.equal(page.status, 200);
    assert.equal(browser.form(page, '/device').fields['user_code'], started.user_code);
    assert.doesNotMatch(page.html, /Approve/, 'no approval without pressing Continue');
    assert.match(page.html, /<label for="user_code">Code<\/label>/);
    assert.match(page.html, /<button type="submit" class="primary">Continue<\/button>/);
  });

  it('accepts the code in lower case, without its dash, or with spaces', async () => {
    const ip = address();
    for (const typed of [(code: string) => code.toLowerCase(), (code: string) => code.replace('-', ''), (code: string) => ` ${code.replace('-', ' ')} `]) {
      const started = await startDevice(server, client);
      const page = await new BrowserAt(server.url, ip).reachApproval(typed(started.user_code), user);
      assert.match(text(page), new RegExp(started.user_code));
    }
  });

  it('asks the person to sign in, then shows the application, the scopes in words, the code, when and where the device asked, and where they are', async () => {
    const started = await startDevice(server, client, 'openid profile email', { 'x-forwarded-for': '203.0.113.7', 'user-agent': 'SmartTV/5.1 (Living room)' });
    clock.advance(3 * MINUTE);
    const browser = new BrowserAt(server.url, '203.0.113.99');
    const signIn = await browser.enterCode(started.user_code);
    assert.match(signIn.html, /action="\/login"/);
    assert.match(text(signIn), /Sign in to continue to Living Room TV/);
    const page = await browser.reachApproval(started.user_code, user);
    const shown = text(page);
    assert.match(shown, /Allow Living Room TV to access your account\?/);
    assert.match(
      shown,
      /Sign you in and know who you are See your name, nickname, username, picture, web pages, gender, birthdate, language and time zone See your email address/,
    );
    assert.match(shown, new RegExp(`Check that this code is the one on your device's screen: ${started.user_code}`));
    assert.match(shown, /Requested 3 minutes ago/);
    assert.match(shown, /Device 203\.0\.113\.7 SmartTV\/5\.1 \(Living room\)/);
    assert.match(shown, /You 203\.0\.113\.99/);
    assert.match(shown, /Approve only if you started this yourself, on a device you have with you/);
    assert.doesNotMatch(shown, /different network/, 'same /24: no warning');
    assert.match(shown, /Signed in as Grace Hopper/);
  });

  it('warns when the device asked from a different network than the approver is on', async () => {
    const started = await startDevice(server, client, 'openid', { 'x-forwarded-for': '192.0.2.50' });
    const page = await new BrowserAt(server.url, '203.0.113.40').reachApproval(started.user_code, user);
    assert.match(page.html, /<p class="alert warning" role="alert"><strong>This device is on a different network from you\.<\/strong>/);
    assert.match(text(page), /Device 192\.0\.2\.50/);
    assert.match(text(page), /You 203\.0\.113\.40/);
  });

  it('says the device is approved, and that the person can return to it', async () => {
    const started = await startDevice(server, client);
    const page = await new BrowserAt(server.url, address()).decide(started.user_code, user, 'approve');
    assert.equal(page.status, 200);
    assert.match(text(page), /Device approved Living Room TV is now connected to your account\. You can return to your device/);
    assert.equal((await poll(server, client, started.device_code)).status, 200);
  });

  it('says the request is denied, and that the person can return to the device', async () => {
    const started = await startDevice(server, client);
    const page = await new BrowserAt(server.url, address()).decide(started.user_code, user, 'deny');
    assert.equal(page.status, 200);
    assert.match(text(page), /Request denied Living Room TV was not given access to your account\. You can return to your device/);
    assertPollError(await poll(server, client, started.device_code), 'access_denied');
  });

  it('tells the person clearly that an unknown code is not valid, and lets them type it again', async () => {
    const browser = new BrowserAt(server.url, address());
    const page = await browser.enterCode(WRONG_CODE);
    assert.equal(page.status, 400);
    assert.match(page.html, /<p class="alert error" role="alert">That code is not valid, or it has expired/);
    assert.equal(browser.form(page, '/device').fields['user_code'], WRONG_CODE);
    assert.doesNotMatch(page.html, /at .*\.ts:\d+/, 'no stack trace');
  });

  it('tells the person clearly that an expired code has expired', async () => {
    const started = await startDevice(server, client);
    clock.advance(10 * MINUTE);
    const page = await new BrowserAt(server.url, address()).enterCode(started.user_code);
    assert.equal(page.status, 400);
    assert.match(text(page), /That code is not valid, or it has expired \(codes last 10 minutes\)/);
  });

  it('explains the format of a code that cannot be one', async () => {
    const page = await new BrowserAt(server.url, address()).enterCode('1234-5678');
    assert.equal(page.status, 400);
    assert.match(text(page), /A code is 8 letters, like BCDF-GHJK/);
  });

  it('says a code was already used once it has been approved or denied', async () => {
    for (const decision of ['approve', 'deny'] as const) {
      const started = await startDevice(server, client);
      const ip = address();
      await new BrowserAt(server.url, ip).decide(started.user_code, user, decision);
      const again = await new BrowserAt(server.url, ip).enterCode(started.user_code);
      assert.equal(again.status, 400);
      assert.match(text(again), /This code has already been used/);
    }
  });

  it('lets only the first of two approvals of one code count, and tells the second it was already decided', async () => {
    const started = await startDevice(server, client);
    const other = await server.addUser({ username: 'mallory' });
    const first = new BrowserAt(server.url, address());
    const second = new BrowserAt(server.url, address());
    const firstPage = await first.reachApproval(started.user_code, user);
    const secondPage = await second.reachApproval(started.user_code, other);
    assert.match(text(await second.submit(secondPage, '/device/approve', { decision: 'approve' })), /Device approved/);
    const late = await first.submit(firstPage, '/device/approve', { decision: 'approve' });
    assert.match(text(late), /This code has already been used/);
    const tokens = await poll(server, client, started.device_code);
    assert.equal(tokens.status, 200);
    assert.equal(decodeJwt(tokens.body['access_token'] as string).sub, other.id, 'the tokens are for the approval that won');
  });

  it('shows the approval again, deciding nothing, when the browser is signed in as someone else than the page was shown to', async () => {
    const started = await startDevice(server, client);
    const other = await server.addUser({ username: 'bob-in-another-tab', name: 'Bob in Another Tab' });
    const browser = new BrowserAt(server.url, address());
    const shownToGrace = await browser.reachApproval(started.user_code, user);
    // In another tab of the same browser, Grace's session ends (she signs out) and Bob signs in.
    browser.cookies.delete(cookieNames(server.config).session);
    await browser.signIn(await browser.request('/login'), other);
    const posted = await browser.submit(shownToGrace, '/device/approve', { decision: 'approve' });
    assert.equal(posted.status, 303);
    const again = await browser.follow(posted);
    assertApprovalPage(again, '/device/approve');
    assert.match(text(again), /Bob in Another Tab/, 'the page now says who is signed in');
    assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
    // Decided from the page shown to Bob, it is Bob's.
    assert.match(text(await browser.submit(again, '/device/approve', { decision: 'approve' })), /Device approved/);
    clock.advance(10_000); // past the poll interval (RFC 8628 §3.5), not to be told slow_down
    const tokens = await poll(server, client, started.device_code);
    assert.equal(decodeJwt(tokens.body['access_token'] as string).sub, other.id);
  });

  it('decides nothing from a page shown for a request that has expired since and whose code another request was given', async () => {
    const started = await startDevice(server, client);
    const browser = new BrowserAt(server.url, address());
    const shown = await browser.reachApproval(started.user_code, user);
    clock.advance(10 * MINUTE);
    // The next request drawing the same code (one in 2.56 × 10^10 does) replaces the expired one.
    const now = clock.now();
    const deviceCode = newDeviceCode(now);
    const userCode = normalizeUserCode(started.user_code)!;
    const next = pendingDevice(client.clientId, { deviceCodeHash: deviceCodeKey(deviceCode), userCode, createdAt: now, expiresAt: now + 10 * MINUTE });
    assert.equal(await server.store.devices.create(next), true);
    const posted = await browser.submit(shown, '/device/approve', { decision: 'approve' });
    assert.equal(posted.status, 400);
    assert.match(text(posted), /That code is not valid, or it has expired/);
    assertPollError(await poll(server, client, deviceCode), 'authorization_pending');
  });

  it('refuses a code form posted without its CSRF token, or from another site', async () => {
    const browser = new BrowserAt(server.url, address());
    await browser.request('/device');
    const noToken = await browser.request('/device', { form: { user_code: WRONG_CODE } });
    assert.equal(noToken.status, 403);
    const entry = await browser.request('/device');
    const crossSite = await browser.request('/device', {
      form: { ...browser.form(entry, '/device').fields, user_code: WRONG_CODE },
      headers: { origin: 'https://attacker.example' },
    });
    assert.equal(crossSite.status, 403);
  });

  it('refuses a decision other than approve or deny', async () => {
    const started = await startDevice(server, client);
    const browser = new BrowserAt(server.url, address());
    const page = await browser.submit(await browser.reachApproval(started.user_code, user), '/device/approve', { decision: 'maybe' });
    assert.equal(page.status, 400);
    assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
  });
});

describe('brute-force protection of user codes (RFC 8628 §5.1)', () => {
  let clock: ManualClock, server: TestServer, client: TestClient, user: TestUser;
  let addresses = 0;

  before(async () => {
    clock = new ManualClock();
    // Smaller allowances per address and network than the defaults (20, 60), so that the
    // tests reach them quickly; the browser's stays the default 5.
    ({ server, client, user } = await startWithApp({
      server: {
        clock,
        env: { TESSERA_TRUST_PROXY: 'true', TESSERA_USER_CODE_FAILURES_PER_ADDRESS: '8', TESSERA_USER_CODE_FAILURES_PER_NETWORK: '12' },
      },
      client: { name: 'Set-top Box' },
      user: { username: 'linus' },
    }));
  });
  after(() => server.close());

  function address(): string {
    addresses += 1;
    return `203.0.${addresses}.1`;
  }

  async function wrongCodes(browser: BrowserAt, count: number) {
    for (let i = 0; i < count; i++) assert.equal((await browser.enterCode(WRONG_CODE)).status, 400);
  }

  it('refuses every code, the right one too, after 5 wrong codes from one browser, until the window has passed', async () => {
    const started = await startDevice(server, client);
    const browser = new BrowserAt(server.url, address());
    await wrongCodes(browser, 5);
    const locked = await browser.enterCode(started.user_code);
    assert.equal(locked.status, 429);
    assert.equal(locked.headers.get('retry-after'), '600');
    assert.match(text(locked), /Too many wrong codes from this browser\. Wait 10 minutes, then type the code your device shows again/);
    clock.advance(9 * MINUTE);
    assert.equal((await browser.enterCode(started.user_code)).status, 429, 'still refused within the window');

    clock.advance(1 * MINUTE);
    const fresh = await startDevice(server, client);
    const page = await browser.reachApproval(fresh.user_code, user);
    assert.match(text(page), new RegExp(fresh.user_code));
  });

  it('writes no event per refused code: one row per limit and window, with the count, once the window has ended', async () => {
    const started = await startDevice(server, client);
    const ip = address();
    const browser = new BrowserAt(server.url, ip);
    await wrongCodes(browser, 5);
    for (let i = 0; i < 7; i++) assert.equal((await browser.enterCode(started.user_code)).status, 429);
    const locked = async () => (await server.store.events.list({ type: 'device.code_entry_locked', limit: 1000 })).filter((event) => event.ip === ip);
    assert.deepEqual(await locked(), [], 'nothing written while the window is open');
    clock.advance(10 * MINUTE);
    // The next refusal anywhere stores the windows that have ended.
    const other = new BrowserAt(server.url, address());
    await wrongCodes(other, 5);
    assert.equal((await other.enterCode(started.user_code)).status, 429);
    assert.deepEqual(
      (await locked()).map((event) => [event.detail['limit'], event.detail['refused']]),
      [['browser', 7]],
    );
  });

  it('counts wrong codes per browser across addresses', async () => {
    const browser = new BrowserAt(server.url, address());
    await wrongCodes(browser, 3);
    const moved = new BrowserAt(server.url, address());
    for (const [name, value] of browser.cookies) moved.cookies.set(name, value);
    await wrongCodes(moved, 2);
    assert.equal((await moved.enterCode(WRONG_CODE)).status, 429);
  });

  it('locks only the guessing browser: another browser at the same address still approves its own device', async () => {
    const ip = address();
    const guesser = new BrowserAt(server.url, ip);
    await wrongCodes(guesser, 5);
    const started = await startDevice(server, client);
    assert.equal((await guesser.enterCode(started.user_code)).status, 429);
    // The person next to the guesser, behind the same NAT, with their own browser.
    const neighbour = new BrowserAt(server.url, ip);
    const page = await neighbour.reachApproval(started.user_code, user);
    assert.match(text(page), new RegExp(started.user_code));
  });

  it('counts wrong codes per address across browsers (8 here), and leaves other addresses alone', async () => {
    const ip = address();
    for (let i = 0; i < 8; i++) await wrongCodes(new BrowserAt(server.url, ip), 1);
    const started = await startDevice(server, client);
    const locked = await new BrowserAt(server.url, ip).enterCode(started.user_code);
    assert.equal(locked.status, 429);
    assert.match(text(locked), /Too many wrong codes from your internet connection\. Wait 10 minutes and try again, or use another connection/);
    const elsewhere = await new BrowserAt(server.url, address()).enterCode(started.user_code);
    assert.match(elsewhere.html, /action="\/login"/, 'another address goes on to sign in');
  });

  it('counts wrong codes per network (12 here) across the addresses of one /24, and per address (8 here) across those of one IPv6 /64', async () => {
    addresses += 1;
    for (let i = 0; i < 12; i++) await wrongCodes(new BrowserAt(server.url, `203.0.${addresses}.${i + 1}`), 1);
    const started = await startDevice(server, client);
    const locked = await new BrowserAt(server.url, `203.0.${addresses}.200`).enterCode(started.user_code);
    assert.equal(locked.status, 429);
    assert.match(text(locked), /Too many wrong codes from your network\./);
    const nextNetwork = await new BrowserAt(server.url, `203.0.${addresses + 1}.200`).enterCode(started.user_code);
    assert.match(nextNetwork.html, /action="\/login"/);

    // One host may hold the whole /64 (RFC 7934 §6): it is one address (core/networks.ts countedAddress).
    for (let i = 0; i < 8; i++) await wrongCodes(new BrowserAt(server.url, `2001:db8:${addresses}:1::${(i + 1).toString(16)}`), 1);
    const lockedV6 = await new BrowserAt(server.url, `2001:db8:${addresses}:1:ffff::1`).enterCode(started.user_code);
    assert.equal(lockedV6.status, 429);
    assert.match(text(lockedV6), /Too many wrong codes from your internet connection\./);
    assert.match((await new BrowserAt(server.url, `2001:db8:${addresses}:2::1`).enterCode(started.user_code)).html, /action="\/login"/);
  });

  it('counts wrong codes sent straight to the approval step, and refuses the decision once locked', async () => {
    const ip = address();
    const browser = new BrowserAt(server.url, ip);
    await browser.request('/device');
    for (let i = 0; i < 5; i++) assert.equal((await browser.request(`/device/approve?user_code=${WRONG_CODE}`)).status, 400);
    assert.equal((await browser.request(`/device/approve?user_code=${WRONG_CODE}`)).status, 429);

    // A signed-in browser that posts decisions for guessed codes is counted the same way.
    const started = await startDevice(server, client);
    const guesser = new BrowserAt(server.url, address());
    const approval = await guesser.reachApproval(started.user_code, user);
    for (let i = 0; i < 5; i++) {
      const guess = await guesser.submit(approval, '/device/approve', { decision: 'approve', user_code: WRONG_CODE });
      assert.equal(guess.status, 400);
    }
    const locked = await guesser.submit(approval, '/device/approve', { decision: 'approve' });
    assert.equal(locked.status, 429);
    assertPollError(await poll(server, client, started.device_code), 'authorization_pending');
  });

  it('does not count input that cannot be a code', async () => {
    const browser = new BrowserAt(server.url, address());
    for (let i = 0; i < 8; i++) assert.equal((await browser.enterCode('not a code')).status, 400);
    const started = await startDevice(server, client);
    assert.match((await browser.enterCode(started.user_code)).html, /action="\/login"/);
  });
});

describe('the overall rate of wrong user codes (RFC 8628 §5.1)', () => {
  let server: TestServer, client: TestClient, user: TestUser;
  const log: Record<string, unknown>[] = [];

  before(async () => {
    ({ server, client, user } = await startWithApp({
      server: {
        env: { TESSERA_TRUST_PROXY: 'true', TESSERA_USER_CODE_FAILURES_PER_MINUTE: '3', TESSERA_USER_CODE_SLOW_MS: '300' },
        log: (line) => log.push(line),
      },
      client: { name: 'Set-top Box' },
      user: { username: 'edsger' },
    }));
  });
  after(() => server.close());

  it('refuses lookups once the budget is spent, with one alert, except from a signed-in browser, which waits and goes on', async () => {
    // Wrong codes from addresses far apart: no browser, address or network limit applies.
    for (let i = 1; i <= 3; i++) assert.equal((await new BrowserAt(server.url, `192.${i}.0.7`).enterCode(WRONG_CODE)).status, 400);
    const started = await startDevice(server, client);
    for (let i = 4; i <= 6; i++) {
      const refused = await new BrowserAt(server.url, `192.${i}.0.7`).enterCode(started.user_code);
      assert.equal(refused.status, 429, 'even the right code, from a browser with no record');
      assert.match(text(refused), /Too many wrong codes are being tried on this site right now\. Sign in first/);
    }
    const alerts = log.filter((line) => (line['alert'] as { type?: string } | undefined)?.type === 'device.user_code_guessing');
    assert.equal(alerts.length, 1, JSON.stringify(log));
    assert.deepEqual(alerts[0]!['alert'], { type: 'device.user_code_guessing', wrongCodesLastMinute: 3, limitPerMinute: 3 });

    // The person signs in first, then types the code their device shows: never refused.
    const person = new BrowserAt(server.url, '192.99.0.7');
    await person.signIn(await person.follow(await person.request('/login')), user);
    const before = performance.now();
    const page = await person.enterCode(started.user_code);
    assert.ok(performance.now() - before >= 300, 'the lookup waited');
    assertApprovalPage(page, '/device/approve');
    assert.match(text(page), new RegExp(started.user_code), 'and the person with the right code goes on');
  });
});

describe('wrong user codes per larger network: IPv4 /16, IPv6 /48 (RFC 8628 §5.1)', () => {
  let server: TestServer;
  let client: TestClient;

  before(async () => {
    server = await startTestServer({
      env: {
        TESSERA_TRUST_PROXY: 'true',
        TESSERA_USER_CODE_FAILURES_PER_BROWSER: '2',
        TESSERA_USER_CODE_FAILURES_PER_ADDRESS: '2',
        TESSERA_USER_CODE_FAILURES_PER_NETWORK: '4',
        TESSERA_USER_CODE_FAILURES_PER_LARGE_NETWORK: '6',
      },
    });
    client = await server.addClient({ name: 'Set-top Box' });
  });
  after(() => server.close());

  it('refuses a /16 after its wrong codes from many /24s, and an IPv6 /48 after many /64s, and leaves the next one alone', async () => {
    // One wrong code from each of six /24s of 198.18.0.0/16: no /24 reaches its 4.
    for (let i = 1; i <= 6; i++) assert.equal((await new BrowserAt(server.url, `198.18.${i}.1`).enterCode(WRONG_CODE)).status, 400);
    const started = await startDevice(server, client);
    const locked = await new BrowserAt(server.url, '198.18.200.1').enterCode(started.user_code);
    assert.equal(locked.status, 429);
    assert.match(text(locked), /Too many wrong codes from your network\./);
    assert.match((await new BrowserAt(server.url, '198.19.0.1').enterCode(started.user_code)).html, /action="\/login"/, 'the next /16 goes on');

    for (let i = 1; i <= 6; i++) assert.equal((await new BrowserAt(server.url, `2001:db8:7:${i}::1`).enterCode(WRONG_CODE)).status, 400);
    assert.equal((await new BrowserAt(server.url, '2001:db8:7:ff::1').enterCode(started.user_code)).status, 429);
    assert.match((await new BrowserAt(server.url, '2001:db8:8::1').enterCode(started.user_code)).html, /action="\/login"/, 'the next /48 goes on');
  });
});
