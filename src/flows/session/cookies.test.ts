/**
 * The browser's cookies without a browser: the names Tessera gives them (flows/session/cookies.ts,
 * `__Host-` on an https issuer) and which values are worth looking up; then what a session cookie
 * that was tampered with, copied from another cookie, outlived its session or belongs to a
 * disabled person is worth: nothing. The attributes the HTTP layer gives each cookie are
 * src/http/session.test.ts's.
 * session.test.ts covers beginning and ending sessions; test/authorize-errors.test.ts reads the
 * Set-Cookie header of an http server, and test/sign-in.test.ts the session's life as a
 * browser sees it (sign-out, a planted id, TESSERA_SESSION_TTL, a disabled person).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../config/index.ts';
import { hashSecret } from '../../core/crypto.ts';
import type { UserRecord } from '../../store/types.ts';
import { flowWorld, type FlowWorld, CookieJar } from '../../../test/helpers/flows.ts';
import { setUserDisabled } from '../users.ts';
import { cookieNames, usableCookie, type CookiePort } from './cookies.ts';
import { beginSession, signedIn, type Browser } from './session.ts';

/** Each cookie the flow set, with its lifetime, or cleared (null), in order. */
const written = (cookies: CookieJar) => cookies.writes.map((write) => [write.name, write.maxAgeSeconds]);

const browserWith = (cookies: CookiePort): Browser => ({ cookies, ip: '192.0.2.1', userAgent: 'TestBrowser/1.0', log: { warn: () => {} } });

describe('the names of the cookies (flows/session/cookies.ts)', () => {
  it('prefixes every name with __Host- on an https issuer, so a sibling subdomain cannot plant one (RFC 6265bis §4.1.3.2)', () => {
    for (const issuer of ['https://auth.example.com', 'https://auth.example.com:8443', 'https://10.0.0.5']) {
      const names = cookieNames(loadConfig({ TESSERA_ISSUER: issuer }));
      assert.deepEqual(
        names,
        {
          session: '__Host-tessera_session',
          pending: '__Host-tessera_pending',
          csrf: '__Host-tessera_csrf',
          knownBrowser: '__Host-tessera_browser',
          upstream: '__Host-tessera_upstream',
          signUp: '__Host-tessera_sign_up',
        },
        issuer,
      );
    }
  });

  it('uses the bare names on an http loopback issuer, where a browser refuses a __Host- cookie (it cannot be Secure)', () => {
    for (const issuer of ['http://localhost:8080', 'http://127.0.0.1:9000', 'http://[::1]:8080']) {
      assert.deepEqual(
        cookieNames(loadConfig({ TESSERA_ISSUER: issuer })),
        {
          session: 'tessera_session',
          pending: 'tessera_pending',
          csrf: 'tessera_csrf',
          knownBrowser: 'tessera_browser',
          upstream: 'tessera_upstream',
          signUp: 'tessera_sign_up',
        },
        issuer,
      );
    }
  });

  it('gives each cookie a name of its own, so that no cookie can be read as another', () => {
    const names = Object.values(cookieNames({ issuer: 'https://auth.example.com' }));
    assert.equal(new Set(names).size, names.length);
  });
});

describe('which cookie values are looked up (usableCookie)', () => {
  it('looks up a value of 1 to 128 characters, ours being 43', () => {
    for (const value of ['x', 'a'.repeat(43), 'a'.repeat(128)]) assert.equal(usableCookie(value), true, `${value.length} characters`);
  });

  it('looks up nothing for no cookie, an empty one, or one longer than 128 characters', () => {
    const cases: [string, string | undefined][] = [
      ['no cookie', undefined],
      ['an empty cookie', ''],
      ['129 characters', 'a'.repeat(129)],
      ['a megabyte', 'a'.repeat(1 << 20)],
    ];
    for (const [what, value] of cases) assert.equal(usableCookie(value), false, what);
  });
});

describe('what a session cookie is worth', () => {
  let world: FlowWorld;
  let ada: UserRecord;

  before(async () => {
    world = await flowWorld();
    ada = await world.addUser({ username: 'ada' });
  });
  after(() => world.close());

  /** A browser signed in as `user` with a password now; the cookie value it holds. */
  async function signedInBrowser(user: UserRecord): Promise<{ cookies: CookieJar; value: string }> {
    const cookies = new CookieJar();
    assert.ok(await beginSession(world.deps, browserWith(cookies), user, ['pwd'], { clientId: null }));
    return { cookies, value: cookies.jar.get(cookieNames(world.config).session)! };
  }

  /** A browser that sends `value` as its session cookie. */
  const sending = (value: string, name = cookieNames(world.config).session) => {
    const cookies = new CookieJar();
    cookies.jar.set(name, value);
    return { cookies };
  };

  it('sets the session under the __Host- name on an https issuer, and that name alone signs the browser in', async () => {
    const { cookies, value } = await signedInBrowser(ada);
    assert.deepEqual(written(cookies), [['__Host-tessera_session', world.config.lifetimes.session]]);
    assert.equal((await signedIn(world.deps, { cookies }))?.user.id, ada.id);
    assert.equal(await signedIn(world.deps, sending(value, 'tessera_session')), null, 'the bare name, as a sibling site could plant it, is not read');
  });

  it('signs no one in with a value that was tampered with, copied from another cookie, or is not a value at all', async () => {
    const { value } = await signedInBrowser(ada);
    const session = (await signedIn(world.deps, sending(value)))!.session;
    const flipped = `${value.slice(0, -1)}${value.endsWith('A') ? 'B' : 'A'}`;
    const cases: [string, string][] = [
      ['one character changed', flipped],
      ['cut short', value.slice(0, -1)],
      ['with a character more', `${value}A`],
      ['the hash the store keeps, sent as the value', session.idHash],
      ['the OIDC session id', session.sid],
      ['the value twice over', value.repeat(2)],
      ['empty', ''],
      ['over 128 characters, ending with the right value', `${'A'.repeat(129)}${value}`],
    ];
    for (const [what, sent] of cases) assert.equal(await signedIn(world.deps, sending(sent)), null, what);
    assert.equal((await signedIn(world.deps, sending(value)))?.user.id, ada.id, 'the right value still works');
  });

  it('is worth nothing once the session lifetime (TESSERA_SESSION_TTL) has passed, and the store keeps only its hash', async () => {
    const short = await flowWorld({ TESSERA_SESSION_TTL: '600' });
    try {
      const grace = await short.addUser({ username: 'grace' });
      const cookies = new CookieJar();
      const begun = await beginSession(short.deps, browserWith(cookies), grace, ['pwd'], { clientId: null });
      const value = cookies.jar.get(cookieNames(short.config).session)!;
      assert.deepEqual(written(cookies), [['__Host-tessera_session', 600]], 'the cookie lasts as long as the session');
      assert.deepEqual([begun?.idHash, begun?.expiresAt], [hashSecret(value), short.clock.now() + 600_000]);
      assert.equal(await short.store.sessions.get(value, short.clock.now()), null, 'the value itself is no key of the store');
      short.clock.advance(600_000 - 1);
      assert.equal((await signedIn(short.deps, { cookies }))?.user.id, grace.id, 'a moment before the end');
      short.clock.advance(1);
      assert.equal(await signedIn(short.deps, { cookies }), null, 'at the end');
    } finally {
      await short.close();
    }
  });

  it('signs no one in for a person disabled while signed in, read at every request, and not again once enabled', async () => {
    const person = await world.addUser({ username: 'margaret' });
    const { cookies } = await signedInBrowser(person);
    // The account alone marked disabled in the store: the session is read as no one's.
    await world.store.users.setDisabled(person.id, true);
    assert.equal(await signedIn(world.deps, { cookies }), null);
    await world.store.users.setDisabled(person.id, false);
    assert.equal((await signedIn(world.deps, { cookies }))?.user.id, person.id);
    // Disabled by the operator: the session ends, and enabling the account does not bring it back.
    await setUserDisabled(world.deps, person, true);
    await setUserDisabled(world.deps, person, false);
    assert.equal(await signedIn(world.deps, { cookies }), null);
  });
});
