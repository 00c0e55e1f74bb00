import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { loadConfig } from '../../config/index.ts';
import { ManualClock } from '../../core/clock.ts';
import { hasSecondFactor } from '../../core/auth-methods.ts';
import { hashSecret } from '../../core/crypto.ts';
import { Events, type AuditEvent } from '../../core/events.ts';
import { hashPassword } from '../../core/password.ts';
import { openStore } from '../../store/open.ts';
import { newUserRecord, type ClientRecord, type Store, type UserRecord } from '../../store/types.ts';
import { beginTotpEnrolment, confirmTotpEnrolment } from '../second-factor/codes.ts';
import { totpAt } from '../second-factor/totp.ts';
import { sessionMethods } from '../second-factor/policy.ts';
import { enrolmentLimits } from '../sign-in.ts';
import type { FlowDeps } from '../types.ts';
import { changePassword, setUserDisabled } from '../users.ts';
import { PasswordQueue } from '../../core/password-queue.ts';
import { CookieJar } from '../../../test/helpers/flows.ts';
import { cookieNames } from './cookies.ts';
import { beginSession, endEverywhere, endSession, signedIn, type Browser } from './session.ts';
import { afterFirstStep, completeSecondFactor } from './sign-in.ts';

const T0 = Date.UTC(2026, 0, 1);
const warnings: string[] = [];

function browserWith(cookies: CookieJar, ip = '192.0.2.1'): Browser {
  return { cookies, ip, userAgent: 'TestBrowser/1.0', log: { warn: (_details, message) => void warnings.push(message) } };
}

describe('the browser session flow', () => {
  const clock = new ManualClock(T0);
  const config = loadConfig({ TESSERA_PASSWORD_HASH: 'm=8,t=1,p=1' });
  const names = cookieNames(config);
  let store: Store;
  let deps: FlowDeps;
  let ada: UserRecord;
  let bob: UserRecord;
  let n = 0;

  async function user(username: string): Promise<UserRecord> {
    const record = newUserRecord({
      id: `sub-${username}`,
      username,
      passwordHash: await hashPassword('correct horse', config.passwordHash),
      createdAt: clock.now(),
    });
    await store.users.create(record);
    return record;
  }

  /**
   * The events recorded at `since` or later, in order of type (those of one transaction share
   * a millisecond). Every test moves the clock on before the step it looks at.
   */
  async function eventsSince(since: number): Promise<AuditEvent[]> {
    return (await store.events.list({ limit: 1000 })).filter((event) => event.at >= since).sort((a, b) => a.type.localeCompare(b.type));
  }

  /** Now, a moment after everything before. */
  function moment(): number {
    clock.advance(1000);
    return clock.now();
  }

  /** A client that received an ID token in session `sid` (what back-channel logout takes). */
  async function clientIn(sid: string): Promise<string> {
    n += 1;
    const client: ClientRecord = {
      id: `client-${n}`,
      name: 'App',
      secretHash: null,
      redirectUris: [],
      scopes: ['openid'],
      grantTypes: ['authorization_code'],
      webOrigins: [],
      requireDpop: false,
      requirePar: false,
      deviceNetworks: [],
      createdAt: T0,
      authMethod: 'none',
      previousSecretHash: null,
      previousSecretExpiresAt: null,
      jwksUri: null,
      jwks: null,
      pkce: 'required',
      firstParty: false,
      postLogoutRedirectUris: [],
      backchannelLogoutUri: null,
    };
    await store.clients.create(client);
    await store.sessions.addClient(sid, client.id, clock.now() + 3600_000);
    return client.id;
  }

  before(async () => {
    store = await openStore(':memory:');
    // No client here registers a back-channel URI: no logout token is ever signed.
    deps = { store, clock, config, tokens: undefined as never, events: new Events(clock, store.events, []) };
    ada = await user('ada');
    bob = await user('bob');
  });
  after(async () => {
    await store.close();
  });
  beforeEach(() => clock.advance(60_000));

  it('begins a session: a session cookie for the session lifetime, the sign-in recorded with how and for which app', async () => {
    const since = moment();
    const cookies = new CookieJar();
    const session = await beginSession(deps, browserWith(cookies), ada, ['pwd'], { clientId: 'app-1' });
    assert.ok(session);
    assert.deepEqual(
      cookies.writes.map((write) => [write.name, write.maxAgeSeconds]),
      [[names.session, config.lifetimes.session]],
    );
    assert.equal(hashSecret(cookies.jar.get(names.session)!), session.idHash);
    const found = await signedIn(deps, { cookies });
    assert.equal(found?.user.id, ada.id);
    assert.deepEqual(found?.session.amr, ['pwd']);
    const events = await eventsSince(since);
    assert.deepEqual(
      events.map((event) => [event.type, event.userId, event.clientId, event.detail['amr'], event.ip, event.userAgent]),
      [['signin.succeeded', ada.id, 'app-1', 'pwd', '192.0.2.1', 'TestBrowser/1.0']],
    );
    // The session lasts its lifetime on the clock, and not a moment more.
    clock.advance(config.lifetimes.session * 1000);
    assert.equal(await signedIn(deps, { cookies }), null);
  });

  it('continues the OIDC session when the same person signs in again, under a new cookie, and ends nothing', async () => {
    const cookies = new CookieJar();
    const first = await beginSession(deps, browserWith(cookies), ada, ['pwd'], { clientId: null });
    const firstCookie = cookies.jar.get(names.session);
    const clientId = await clientIn(first!.sid);
    const since = moment();
    const second = await beginSession(deps, browserWith(cookies), ada, ['hwk', 'user'], { clientId: null });
    assert.equal(second!.sid, first!.sid);
    assert.notEqual(cookies.jar.get(names.session), firstCookie);
    assert.equal(await store.sessions.get(first!.idHash, clock.now()), null, 'the old cookie is worth nothing');
    assert.deepEqual(
      (await eventsSince(since)).map((event) => event.type),
      ['signin.succeeded'],
    );
    assert.deepEqual(await store.sessions.takeClients(first!.sid), [clientId], 'the apps of the session stay signed in');
  });

  it('ends the session of someone else signed in in the browser, recording the logout and telling its apps', async () => {
    const cookies = new CookieJar();
    const bobs = await beginSession(deps, browserWith(cookies), bob, ['pwd'], { clientId: null });
    await clientIn(bobs!.sid);
    const since = moment();
    const adas = await beginSession(deps, browserWith(cookies), ada, ['pwd'], { clientId: null });
    assert.notEqual(adas!.sid, bobs!.sid);
    const events = await eventsSince(since);
    assert.deepEqual(
      events.map((event) => [event.type, event.userId, event.detail['by'] ?? null]),
      [
        ['logout', bob.id, 'sign_in'],
        ['signin.succeeded', ada.id, null],
      ],
    );
    assert.deepEqual(await store.sessions.takeClients(bobs!.sid), [], 'the apps were taken to be sent logout tokens');
  });

  it('writes nothing when its guard refuses (a waiting sign-in completed by another request)', async () => {
    const cookies = new CookieJar();
    const since = moment();
    const session = await beginSession(deps, browserWith(cookies), ada, ['pwd'], { clientId: null }, { guard: async () => false });
    assert.equal(session, null);
    assert.deepEqual(cookies.writes, []);
    assert.deepEqual(await eventsSince(since), []);
    assert.deepEqual(await store.sessions.listForUser(ada.id, clock.now()).then((all) => all.filter((s) => s.createdAt >= since)), []);
  });

  it('signs out ("user"): the cookie cleared, the session gone, `logout` recorded, its apps told', async () => {
    const cookies = new CookieJar();
    const session = await beginSession(deps, browserWith(cookies), ada, ['pwd'], { clientId: null });
    await clientIn(session!.sid);
    const since = moment();
    const ended = await endSession(deps, browserWith(cookies), 'user');
    assert.equal(ended?.idHash, session!.idHash);
    assert.equal(cookies.jar.has(names.session), false);
    assert.equal(await store.sessions.get(session!.idHash, clock.now()), null);
    const events = await eventsSince(since);
    assert.deepEqual(
      events.map((event) => [event.type, event.userId, event.detail['by'], event.detail['sessions_ended']]),
      [['logout', ada.id, 'user', 1]],
    );
    assert.deepEqual(await store.sessions.takeClients(session!.sid), []);
    // A browser with no session: the cookie is cleared all the same, and nothing is recorded.
    const again = moment();
    assert.equal(await endSession(deps, browserWith(cookies), 'user'), null);
    assert.deepEqual(await eventsSince(again), []);
  });

  it('records an app\'s logout request as "rp", naming the app', async () => {
    const cookies = new CookieJar();
    await beginSession(deps, browserWith(cookies), ada, ['pwd'], { clientId: null });
    const since = moment();
    await endSession(deps, browserWith(cookies), 'rp', 'app-2');
    assert.deepEqual(
      (await eventsSince(since)).map((event) => [event.type, event.clientId, event.detail['by']]),
      [['logout', 'app-2', 'rp']],
    );
  });

  it("signs out everywhere: every session of the person ends, nobody else's, one `logout` saying how many", async () => {
    const here = new CookieJar();
    const there = new CookieJar();
    const elsewhere = new CookieJar();
    const mine = [
      await beginSession(deps, browserWith(here), ada, ['pwd'], { clientId: null }),
      await beginSession(deps, browserWith(there, '198.51.100.7'), ada, ['pwd'], { clientId: null }),
    ];
    await beginSession(deps, browserWith(elsewhere), bob, ['pwd'], { clientId: null });
    const since = moment();
    const ended = await endEverywhere(deps, browserWith(here), ada);
    // Ada's sessions that expired in the tests before end too: every one of hers is gone.
    assert.ok(mine.every((session) => ended.some((gone) => gone.idHash === session!.idHash)));
    assert.deepEqual(await store.sessions.listForUser(ada.id, clock.now()), []);
    const live = ended.length;
    assert.equal(here.jar.has(names.session), false);
    assert.equal(await signedIn(deps, { cookies: there }), null);
    assert.equal((await signedIn(deps, { cookies: elsewhere }))?.user.id, bob.id);
    const events = await eventsSince(since);
    assert.deepEqual(
      events.map((event) => [event.type, event.userId, event.detail['by'], event.detail['sessions_ended']]),
      [['logout', ada.id, 'everywhere', live]],
    );
  });

  it('records the sessions a new password and an operator end, with what ended them', async () => {
    const mine = new CookieJar();
    const other = new CookieJar();
    const kept = await beginSession(deps, browserWith(mine), bob, ['pwd'], { clientId: null });
    await beginSession(deps, browserWith(other), bob, ['pwd'], { clientId: null });
    let since = moment();
    const passwords = new PasswordQueue({ threads: 1, maxWaiting: 4, perAddress: 4 });
    const change = await changePassword({ ...deps, passwords }, bob, kept!.idHash, {
      current: 'correct horse',
      next: 'battery staple',
      ip: '192.0.2.1',
    }).finally(() => passwords.close());
    assert.equal(change.kind, 'done');
    assert.deepEqual(
      (await eventsSince(since)).map((event) => [event.type, event.detail['by'] ?? null]),
      [
        ['logout', 'password_change'],
        ['password.changed', null],
      ],
    );
    since = moment();
    await setUserDisabled(deps, bob, true);
    assert.deepEqual(
      (await eventsSince(since)).map((event) => [event.type, event.detail['by']]),
      [
        ['logout', 'operator'],
        ['user.disabled', 'operator'],
      ],
    );
    await setUserDisabled(deps, bob, false);
  });

  describe('with one-time codes', () => {
    let cara: UserRecord;
    let secret: string;

    before(async () => {
      cara = await user('cara');
      const started = await beginTotpEnrolment(deps, cara.id);
      assert.equal(started.kind, 'started');
      secret = started.kind === 'started' ? started.secret : '';
      const confirmed = await confirmTotpEnrolment(deps, cara, totpAt(secret, clock.now()), enrolmentLimits(cara.id));
      assert.equal(confirmed.kind, 'confirmed');
    });

    it('signs a person without codes in at once, with a password', async () => {
      const cookies = new CookieJar();
      assert.equal(await afterFirstStep(deps, browserWith(cookies), ada, ['pwd'], { clientId: null }), 'signed-in');
      assert.deepEqual((await signedIn(deps, { cookies }))?.session.amr, ['pwd']);
    });

    it('keeps a sign-in waiting for its code under its own cookie, for the pending sign-in timeout only', async () => {
      const cookies = new CookieJar();
      assert.equal(await afterFirstStep(deps, browserWith(cookies), cara, ['pwd'], { clientId: null }), 'second-factor');
      assert.deepEqual(
        cookies.writes.map((write) => [write.name, write.maxAgeSeconds]),
        [[names.pending, config.secondFactor.pendingSignInTimeout]],
      );
      assert.equal(await signedIn(deps, { cookies }), null, 'not signed in before the code');
      clock.advance(config.secondFactor.pendingSignInTimeout * 1000 + 1);
      const since = moment();
      const step = await completeSecondFactor(deps, browserWith(cookies), totpAt(secret, clock.now()), { clientId: null });
      assert.equal(step.kind, 'expired');
      assert.equal(cookies.jar.has(names.pending), false);
      assert.deepEqual(await eventsSince(since), [], 'a right code for a sign-in that waited too long signs nobody in');
    });

    it('signs in with the right code, once: the waiting sign-in is used up with the session begun and recorded', async () => {
      const cookies = new CookieJar();
      await afterFirstStep(deps, browserWith(cookies), cara, ['pwd'], { clientId: 'app-3' });
      const pending = cookies.jar.get(names.pending)!;
      clock.advance(31_000);
      const wrong = await completeSecondFactor(deps, browserWith(cookies), '000000' === totpAt(secret, clock.now()) ? '111111' : '000000', {
        clientId: 'app-3',
      });
      assert.equal(wrong.kind, 'wrong-code');
      const since = moment();
      const step = await completeSecondFactor(deps, browserWith(cookies), totpAt(secret, clock.now()), { clientId: 'app-3' });
      assert.equal(step.kind, 'signed-in');
      assert.equal(cookies.jar.has(names.pending), false);
      assert.deepEqual((await signedIn(deps, { cookies }))?.session.amr, ['pwd', 'otp', 'mfa']);
      assert.deepEqual(
        (await eventsSince(since)).map((event) => [event.type, event.clientId, event.detail['amr']]),
        [['signin.succeeded', 'app-3', 'pwd otp mfa']],
      );
      // The same waiting sign-in cannot be completed twice (a second tab, a replayed post).
      cookies.jar.set(names.pending, pending);
      clock.advance(31_000);
      assert.equal((await completeSecondFactor(deps, browserWith(cookies), totpAt(secret, clock.now()), { clientId: null })).kind, 'expired');
    });

    it('records what a first step proved and no more: nothing named, then a code, is the code alone', async () => {
      const without = new CookieJar();
      assert.equal(await afterFirstStep(deps, browserWith(without), ada, [], { clientId: null }), 'signed-in');
      const bare = (await signedIn(deps, { cookies: without }))!.session;
      assert.deepEqual(bare.amr, []);
      assert.equal(hasSecondFactor(sessionMethods(bare)), false);
      const cookies = new CookieJar();
      assert.equal(await afterFirstStep(deps, browserWith(cookies), cara, [], { clientId: null }), 'second-factor');
      clock.advance(31_000);
      const step = await completeSecondFactor(deps, browserWith(cookies), totpAt(secret, clock.now()), { clientId: null });
      assert.equal(step.kind, 'signed-in');
      const session = (await signedIn(deps, { cookies }))!.session;
      assert.deepEqual(session.amr, ['otp'], 'no password was checked here, so the code makes no two factors');
      assert.equal(hasSecondFactor(sessionMethods(session)), false);
    });

    it("keeps an upstream provider's methods across the code step", async () => {
      const cookies = new CookieJar();
      assert.equal(await afterFirstStep(deps, browserWith(cookies), cara, ['hwk', 'mfa'], { clientId: null }), 'second-factor');
      clock.advance(31_000);
      assert.equal((await completeSecondFactor(deps, browserWith(cookies), totpAt(secret, clock.now()), { clientId: null })).kind, 'signed-in');
      assert.deepEqual((await signedIn(deps, { cookies }))?.session.amr, ['hwk', 'otp', 'mfa']);
    });
  });
});
