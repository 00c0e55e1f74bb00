/**
 * From a proved first step to a signed-in browser (flows/session/sign-in.ts), over the flow
 * world (an https issuer, so every cookie has its __Host- name): what the store holds while a
 * sign-in waits for its one-time code, each answer a typed code gets (RFC 6238) and what it
 * leaves behind, two right codes at once, a passkey sign-in that asks for no code, and a
 * session that gains a code without signing in again (OIDC `auth_time`, RFC 8176 `amr`).
 * session.test.ts covers the rest (a person without codes signed in at once, a right code,
 * a sign-in that waited too long, the methods kept across the code step); the pages are
 * driven by test/second-factor.test.ts, test/passkeys.test.ts and test/sign-in.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { AuthMethod } from '../../core/auth-methods.ts';
import { hashSecret } from '../../core/crypto.ts';
import type { AuditEvent } from '../../core/events.ts';
import type { UserRecord } from '../../store/types.ts';
import { flowWorld, type FlowWorld, CookieJar } from '../../../test/helpers/flows.ts';
import { beginTotpEnrolment, confirmTotpEnrolment } from '../second-factor/codes.ts';
import { totpAt } from '../second-factor/totp.ts';
import { enrolmentLimits } from '../sign-in.ts';
import { setUserDisabled, setUserPassword } from '../users.ts';
import { cookieNames, type CookiePort } from './cookies.ts';
import { beginSession, endEverywhere, signedIn, type Browser } from './session.ts';
import { afterFirstStep, afterPasskey, completeSecondFactor, gainOneTimeCode } from './sign-in.ts';

/** Each cookie the flow set, with its lifetime, or cleared (null), in order. */
const written = (cookies: CookieJar) => cookies.writes.map((write) => [write.name, write.maxAgeSeconds]);

const IP = '192.0.2.10';
const browserWith = (cookies: CookiePort): Browser => ({ cookies, ip: IP, userAgent: 'TestBrowser/1.0', log: { warn: () => {} } });
const NO_APP = { clientId: null };

describe('signing a browser in after the first step (flows/session/sign-in.ts)', () => {
  let world: FlowWorld;
  let session: string;
  let pending: string;

  before(async () => {
    world = await flowWorld();
    ({ session, pending } = cookieNames(world.config));
  });
  after(() => world.close());
  // Every test starts a TOTP step (30 s) later than the one before: a code is used once per step.
  beforeEach(() => world.clock.advance(31_000));

  /** A new person with one-time codes on: their TOTP secret and recovery codes. */
  async function withCodes(username: string): Promise<{ user: UserRecord; secret: string; recovery: readonly string[] }> {
    const user = await world.addUser({ username });
    const started = await beginTotpEnrolment(world.deps, user.id);
    assert.equal(started.kind, 'started');
    const secret = started.kind === 'started' ? started.secret : '';
    const confirmed = await confirmTotpEnrolment(world.deps, user, totpAt(secret, world.clock.now()), enrolmentLimits(user.id));
    assert.equal(confirmed.kind, 'confirmed');
    world.clock.advance(31_000);
    return { user, secret, recovery: confirmed.kind === 'confirmed' ? confirmed.recoveryCodes : [] };
  }

  /** A browser whose sign-in as `user` waits for its code (`amr` the first step proved). */
  async function waiting(user: UserRecord, amr: readonly AuthMethod[] = ['pwd']): Promise<CookieJar> {
    const cookies = new CookieJar();
    assert.equal(await afterFirstStep(world.deps, browserWith(cookies), user, amr, NO_APP), 'second-factor');
    return cookies;
  }

  const code = (secret: string) => totpAt(secret, world.clock.now());
  const wrong = (secret: string) => (code(secret) === '000000' ? '111111' : '000000');

  /** The events recorded at `since` or later. */
  async function eventsSince(since: number): Promise<AuditEvent[]> {
    return (await world.store.events.list({ limit: 1000 })).filter((event) => event.at >= since);
  }

  it('keeps a sign-in that needs a code waiting, by the hash of its cookie alone, with what the first step proved, and signs no one in yet', async () => {
    const { user } = await withCodes('cara');
    const since = world.clock.now();
    const cookies = await waiting(user, ['pwd']);
    const timeout = world.config.secondFactor.pendingSignInTimeout;
    assert.deepEqual(written(cookies), [['__Host-tessera_pending', timeout]], 'no session cookie, only the waiting one');
    const value = cookies.jar.get(pending)!;
    assert.deepEqual(await world.store.pendingSignIns.get(hashSecret(value), world.clock.now()), {
      idHash: hashSecret(value),
      userId: user.id,
      amr: ['pwd'],
      createdAt: since,
      expiresAt: since + timeout * 1000,
    });
    assert.equal(await world.store.pendingSignIns.get(value, world.clock.now()), null, 'the value itself is kept nowhere');
    assert.equal(await signedIn(world.deps, { cookies }), null);
    assert.deepEqual(await world.store.sessions.listForUser(user.id, world.clock.now()), []);
    assert.deepEqual(await eventsSince(since), [], 'no signin.succeeded before the code');
  });

  it('signs a person in with a passkey at once, asking no code even with codes on, and records how (RFC 8176 amr)', async () => {
    const { user } = await withCodes('dora');
    const since = world.clock.now();
    const cookies = new CookieJar();
    await afterPasskey(world.deps, browserWith(cookies), user, ['hwk', 'mfa'], { clientId: 'app-1' });
    assert.deepEqual(written(cookies), [[session, world.config.lifetimes.session]]);
    const found = await signedIn(world.deps, { cookies });
    assert.deepEqual([found?.user.id, found?.session.amr, found?.session.authTime], [user.id, ['hwk', 'mfa'], since]);
    assert.deepEqual(
      (await eventsSince(since)).map((event) => [event.type, event.userId, event.clientId, event.detail['amr'], event.ip]),
      [['signin.succeeded', user.id, 'app-1', 'hwk mfa', IP]],
    );
  });

  it('answers "expired" without checking the code when no sign-in waits in this browser, clearing the cookie and signing no one in', async () => {
    const { user, secret } = await withCodes('erin');
    const sessionValue = async () => {
      const other = new CookieJar();
      await beginSession(world.deps, browserWith(other), user, ['pwd'], NO_APP);
      return other.jar.get(session)!;
    };
    const cases: [string, () => Promise<CookieJar>][] = [
      ['no waiting cookie', async () => new CookieJar()],
      [
        'a waiting cookie with one character changed',
        async () => {
          const cookies = await waiting(user);
          const value = cookies.jar.get(pending)!;
          cookies.jar.set(pending, `${value.slice(0, -1)}${value.endsWith('A') ? 'B' : 'A'}`);
          return cookies;
        },
      ],
      [
        'a waiting cookie over 128 characters',
        async () => {
          const cookies = await waiting(user);
          cookies.jar.set(pending, `${cookies.jar.get(pending)!}${'A'.repeat(100)}`);
          return cookies;
        },
      ],
      [
        'the hash the store keeps, sent as the value',
        async () => {
          const cookies = await waiting(user);
          cookies.jar.set(pending, hashSecret(cookies.jar.get(pending)!));
          return cookies;
        },
      ],
      [
        'a session cookie sent as the waiting one',
        async () => {
          const cookies = new CookieJar();
          cookies.jar.set(pending, await sessionValue());
          return cookies;
        },
      ],
      [
        'the person disabled since the password',
        async () => {
          const cookies = await waiting(user);
          await world.store.users.setDisabled(user.id, true);
          return cookies;
        },
      ],
    ];
    for (const [what, prepare] of cases) {
      await world.store.users.setDisabled(user.id, false);
      const cookies = await prepare();
      cookies.writes.length = 0;
      world.clock.advance(1000);
      const since = world.clock.now();
      const step = await completeSecondFactor(world.deps, browserWith(cookies), code(secret), NO_APP);
      assert.deepEqual(step, { kind: 'expired' }, what);
      assert.deepEqual(written(cookies), [[pending, null]], `${what}: the waiting cookie cleared, no session cookie`);
      assert.deepEqual(await eventsSince(since), [], `${what}: the code was not checked, and no one signed in`);
    }
    await world.store.users.setDisabled(user.id, false);
    // None of these used the code up: it still signs the person in.
    assert.equal((await completeSecondFactor(world.deps, browserWith(await waiting(user)), code(secret), NO_APP)).kind, 'signed-in');
  });

  it('ends a sign-in waiting for its code when the person is disabled: enabled again, the code typed in that browser signs no one in', async () => {
    const { user, secret } = await withCodes('elsa');
    const cookies = await waiting(user);
    await setUserDisabled(world.deps, user, true);
    await setUserDisabled(world.deps, { ...user, disabled: true }, false);
    assert.deepEqual(await completeSecondFactor(world.deps, browserWith(cookies), code(secret), NO_APP), { kind: 'expired' });
    assert.equal(await signedIn(world.deps, { cookies }), null);
    assert.equal(
      (await completeSecondFactor(world.deps, browserWith(await waiting(user)), code(secret), NO_APP)).kind,
      'signed-in',
      'a new sign-in goes through',
    );
  });

  it('ends a sign-in waiting for its code when the password is changed or the person signs out everywhere', async () => {
    for (const [what, end] of [
      ['a new password', (user: UserRecord) => setUserPassword(world.deps, user, { hash: '!' })],
      ['"Sign out everywhere"', (user: UserRecord) => endEverywhere(world.deps, browserWith(new CookieJar()), user)],
    ] as const) {
      const { user, secret } = await withCodes(`gwen-${what.length}`);
      const cookies = await waiting(user);
      await end(user);
      assert.deepEqual(await completeSecondFactor(world.deps, browserWith(cookies), code(secret), NO_APP), { kind: 'expired' }, what);
      assert.equal(await signedIn(world.deps, { cookies }), null, what);
    }
  });

  it('refuses a wrong code, recording it with the browser it came from, and keeps the sign-in waiting for the right one', async () => {
    const { user, secret } = await withCodes('fay');
    const cookies = await waiting(user);
    cookies.writes.length = 0;
    const since = world.clock.now();
    assert.deepEqual(await completeSecondFactor(world.deps, browserWith(cookies), wrong(secret), NO_APP), { kind: 'wrong-code' });
    assert.deepEqual(written(cookies), [], 'the waiting cookie stays');
    assert.equal(await signedIn(world.deps, { cookies }), null);
    assert.deepEqual(
      (await eventsSince(since)).map((event) => [event.type, event.userId, event.detail['reason'], event.detail['during'], event.ip, event.userAgent]),
      [['second_factor.failed', user.id, 'wrong_code', 'sign_in', IP, 'TestBrowser/1.0']],
    );
    assert.equal((await completeSecondFactor(world.deps, browserWith(cookies), code(secret), NO_APP)).kind, 'signed-in');
  });

  it('refuses a code already used in its time step (RFC 6238 §5.2), naming the person, and keeps the sign-in waiting for the next one', async () => {
    const { user, secret } = await withCodes('gwen');
    const used = code(secret);
    assert.equal((await completeSecondFactor(world.deps, browserWith(await waiting(user)), used, NO_APP)).kind, 'signed-in');
    const cookies = await waiting(user);
    assert.deepEqual(await completeSecondFactor(world.deps, browserWith(cookies), used, NO_APP), { kind: 'replayed', userId: user.id });
    assert.equal(await signedIn(world.deps, { cookies }), null);
    assert.ok(cookies.jar.has(pending));
    world.clock.advance(30_000);
    assert.equal((await completeSecondFactor(world.deps, browserWith(cookies), code(secret), NO_APP)).kind, 'signed-in');
  });

  it("locks the code step after the sign-in limits' wrong codes for the username, even for a right code, naming the person", async () => {
    const { user, secret } = await withCodes('hana');
    const cookies = await waiting(user);
    const answers: string[] = [];
    for (let i = 0; i < 20 && answers.at(-1) !== 'locked'; i++) {
      answers.push((await completeSecondFactor(world.deps, browserWith(cookies), wrong(secret), NO_APP)).kind);
    }
    assert.equal(answers.at(-1), 'locked', answers.join(' '));
    assert.ok(answers.slice(0, -1).every((kind) => kind === 'wrong-code'));
    assert.deepEqual(await completeSecondFactor(world.deps, browserWith(cookies), code(secret), NO_APP), { kind: 'locked', userId: user.id });
    assert.equal(await signedIn(world.deps, { cookies }), null);
  });

  it('signs in once of two right codes sent at once for one waiting sign-in: the other finds it completed', async () => {
    const { user, secret, recovery } = await withCodes('iris');
    const cookies = await waiting(user);
    const value = cookies.jar.get(pending)!;
    const since = world.clock.now();
    const steps = await Promise.all([
      completeSecondFactor(world.deps, browserWith(cookies), code(secret), NO_APP),
      completeSecondFactor(world.deps, browserWith(cookies), recovery[0]!, NO_APP),
    ]);
    assert.deepEqual(steps.map((step) => step.kind).sort(), ['completed-already', 'signed-in']);
    assert.equal((await world.store.sessions.listForUser(user.id, world.clock.now())).length, 1, 'one session');
    assert.equal((await eventsSince(since)).filter((event) => event.type === 'signin.succeeded').length, 1);
    assert.equal(await world.store.pendingSignIns.get(hashSecret(value), world.clock.now()), null, 'the waiting sign-in is used up');
    assert.equal((await signedIn(world.deps, { cookies }))?.user.id, user.id);
  });

  it('turns a password session into two factors when codes are turned on: same OIDC session and auth_time, a new cookie, no new sign-in recorded', async () => {
    const user = await world.addUser({ username: 'jade' });
    const cookies = new CookieJar();
    const before = (await beginSession(world.deps, browserWith(cookies), user, ['pwd'], NO_APP))!;
    const oldValue = cookies.jar.get(session)!;
    world.clock.advance(600_000);
    const since = world.clock.now();
    cookies.writes.length = 0;
    await gainOneTimeCode(world.deps, browserWith(cookies), before, user);
    assert.deepEqual(written(cookies), [[session, world.config.lifetimes.session]]);
    assert.notEqual(cookies.jar.get(session), oldValue);
    const now = (await signedIn(world.deps, { cookies }))!.session;
    assert.deepEqual([now.sid, now.authTime, now.amr], [before.sid, before.authTime, ['pwd', 'otp', 'mfa']]);
    assert.equal(await world.store.sessions.get(hashSecret(oldValue), world.clock.now()), null, 'the old cookie is worth nothing');
    assert.deepEqual(await eventsSince(since), [], 'neither a sign-in nor a logout');
  });

  it('adds the code and no second factor to a passkey that only tested presence, and changes nothing for a session that proved a code already', async () => {
    const user = await world.addUser({ username: 'kim' });
    const presence = new CookieJar();
    const held = (await beginSession(world.deps, browserWith(presence), user, ['hwk', 'user'], NO_APP))!;
    await gainOneTimeCode(world.deps, browserWith(presence), held, user);
    assert.deepEqual((await signedIn(world.deps, { cookies: presence }))?.session.amr, ['hwk', 'user', 'otp'], 'two things held: one kind of factor');

    for (const amr of [['pwd', 'otp', 'mfa'], ['otp']] as AuthMethod[][]) {
      const cookies = new CookieJar();
      const proved = (await beginSession(world.deps, browserWith(cookies), user, amr, NO_APP))!;
      cookies.writes.length = 0;
      await gainOneTimeCode(world.deps, browserWith(cookies), proved, user);
      assert.deepEqual(written(cookies), [], `${amr.join(' ')}: no new cookie`);
      assert.equal((await signedIn(world.deps, { cookies }))?.session.idHash, proved.idHash, `${amr.join(' ')}: the same session`);
    }
  });
});
