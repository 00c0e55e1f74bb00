/**
 * Signing in through an upstream provider without HTTP (flows/upstream/sign-in.ts): what
 * `startUpstream` keeps for the round trip (the state in this browser's cookie, the sign-in
 * stored by the state's hash with its PKCE verifier and nonce) and what `finishUpstream`
 * refuses before any request upstream: an answer in another browser or with another state,
 * after the sign-in timeout (the world's clock moved), answered twice, at another provider's
 * callback, the provider's `error`, no code. Each refusal is a `signin.failed` event. A small
 * server on 127.0.0.1 answers as GitHub (and as an OpenID provider, ID tokens included) for
 * the sign-ins that go through. Then settings.ts: the redirect URI, each kind's defaults, the
 * claim mapping. test/upstream-github.test.ts, test/upstream-oidc*.test.ts and
 * test/cli-providers.test.ts run the same through the server's pages and the command.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { hashSecret } from '../../core/crypto.ts';
import type { AuditEvent } from '../../core/events.ts';
import type { IdentityProviderRecord } from '../../store/identity-providers.ts';
import type { ClientRecord } from '../../store/types.ts';
import { FLOW_ISSUER, flowWorld, outcome, type FlowWorld, CookieJar } from '../../../test/helpers/flows.ts';
import { closeServer, listenOnFreePort } from '../../../test/helpers/server.ts';
import { cookieNames } from '../session/cookies.ts';
import type { Browser } from '../session/session.ts';
import { addProvider, type ProviderDeps, type ProviderInput } from '../manage/providers.ts';
import { providerSettings, upstreamRedirectUri } from './settings.ts';
import { finishUpstream, onlyProvider, startUpstream, type UpstreamContinuation, type UpstreamOutcome } from './sign-in.ts';
import { text } from 'node:stream/consumers';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';

const SECRET = 'github client secret';

/**
 * GitHub's token endpoint and API, and an OpenID provider under /oidc (discovery, keys, and a
 * token endpoint whose ID token carries `seen.nonce` and `seen.idToken`'s claims), on 127.0.0.1.
 */
async function fakeUpstream() {
  const seen = { tokenRequests: [] as URLSearchParams[], email: 'octocat@github.test', nonce: '', idToken: {} as Record<string, unknown> };
  const { privateKey, publicKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'upstream-key', alg: 'RS256', use: 'sig' };
  let base = '';
  const json = (response: ServerResponse, body: unknown) => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  const { server, port } = await listenOnFreePort(
    createServer(async (request, response) => {
      const path = new URL(request.url!, 'http://upstream.test').pathname;
      if (path === '/login/oauth/access_token') {
        seen.tokenRequests.push(new URLSearchParams(await text(request)));
        return json(response, { access_token: 'gho_token', token_type: 'bearer' });
      }
      if (path === '/api/user') return json(response, { id: 583231, login: 'octocat', name: 'The Octocat' });
      if (path === '/api/user/emails') return json(response, [{ email: seen.email, primary: true, verified: true }]);
      if (path === '/oidc/jwks') return json(response, { keys: [jwk] });
      if (path === '/oidc/token') {
        await text(request);
        const idToken = await new SignJWT({ nonce: seen.nonce, ...seen.idToken })
          .setProtectedHeader({ alg: 'RS256', kid: jwk.kid })
          .setIssuer(`${base}/oidc`)
          .setAudience('tessera')
          .setIssuedAt()
          .setExpirationTime('5m')
          .sign(privateKey);
        return json(response, { access_token: 'oidc_token', token_type: 'bearer', id_token: idToken });
      }
      if (path === '/oidc/.well-known/openid-configuration')
        return json(response, {
          issuer: `${base}/oidc`,
          authorization_endpoint: `${base}/oidc/authorize`,
          token_endpoint: `${base}/oidc/token`,
          jwks_uri: `${base}/oidc/jwks`,
          response_types_supported: ['code'],
          subject_types_supported: ['public'],
          id_token_signing_alg_values_supported: ['RS256'],
        });
      response.writeHead(404).end();
    }),
  );
  base = `http://127.0.0.1:${port}`;
  return { seen, url: base, close: () => closeServer(server) };
}

describe('signing in through an upstream provider (flows/upstream/sign-in.ts)', () => {
  let world: FlowWorld;
  let upstream: Awaited<ReturnType<typeof fakeUpstream>>;
  let deps: FlowWorld['deps'] & { secrets: FlowWorld['secrets'] };
  let manage: ProviderDeps;
  let github: IdentityProviderRecord;
  let app: ClientRecord;
  let continuation: UpstreamContinuation;
  const UPSTREAM = cookieNames({ issuer: FLOW_ISSUER }).upstream;

  before(async () => {
    world = await flowWorld();
    upstream = await fakeUpstream();
    deps = { ...world.deps, secrets: world.secrets };
    manage = { ...world.manage, secrets: world.secrets };
    github = await provider({ id: 'github' });
    app = (await world.addClient({ client_name: 'Garden Planner', redirect_uris: ['https://garden.example/cb'] })).client;
    continuation = { returnTo: '/authorize?client_id=garden', clientId: app.id };
  });
  after(async () => {
    await upstream.close();
    await world.close();
  });

  let added = 0;
  /** A GitHub provider pointed at the local GitHub, added as `tessera provider add` adds it. */
  function provider(input: ProviderInput = {}): Promise<IdentityProviderRecord> {
    added += 1;
    return addProvider(manage, {
      kind: 'github',
      name: `GitHub ${added}`,
      client_id: 'Iv1.0123456789abcdef',
      client_secret: SECRET,
      web_url: upstream.url,
      api_url: `${upstream.url}/api`,
      ...input,
    });
  }

  let browsers = 0;
  /** A browser of its own: its own cookies and address (what its events are found by). */
  function browser(): Browser & { cookies: CookieJar } {
    browsers += 1;
    return { cookies: new CookieJar(), ip: `192.0.2.${browsers}`, userAgent: 'TestBrowser/1.0', log: { warn: () => {} } };
  }

  /** A sign-in sent to `record` from a browser of its own: the browser, the URL it went to, and its state. */
  async function started(record: IdentityProviderRecord = github) {
    const from = browser();
    const start = await startUpstream(deps, from, record.id, continuation);
    assert.equal(start.kind, 'redirect', JSON.stringify(start));
    const url = new URL(start.kind === 'redirect' ? start.url : '');
    return { browser: from, url, state: url.searchParams.get('state')! };
  }

  /** The callback URL at provider `id` with `query`. */
  const callback = (query: string, id = github.id) => new URL(`${FLOW_ISSUER}/login/upstream/${id}/callback?${query}`);

  /** What a finish came to: the refusal's reason, or signed-in. */
  const kindOf = (finished: UpstreamOutcome) => (finished.kind === 'refused' ? finished.reason : finished.kind);

  /** The `signin.failed` event of the browser at `ip`. */
  async function failureOf(ip: string): Promise<AuditEvent | undefined> {
    return (await world.store.events.list({ type: 'signin.failed', limit: 1000 })).find((event) => event.ip === ip);
  }

  it("sends the browser to the provider with a state only this browser holds, and keeps the sign-in by the state's hash until the timeout", async () => {
    const now = world.clock.now();
    const { browser: from, url, state } = await started();
    const timeout = world.config.upstream.signInTimeout;
    assert.equal(from.cookies.jar.get(UPSTREAM), state, 'RFC 6749 §10.12: the state is bound to the browser that left');
    assert.equal(from.cookies.lifetimes.get(UPSTREAM), timeout);
    assert.equal(url.searchParams.get('redirect_uri'), upstreamRedirectUri(FLOW_ISSUER, github.id));
    assert.equal(await world.store.upstreamLogins.consume(state, now), null, 'the state itself is not what the store keeps');
    const login = await world.store.upstreamLogins.consume(hashSecret(state), now);
    assert.deepEqual(login && { ...login, codeVerifier: createHash('sha256').update(login.codeVerifier).digest('base64url') }, {
      stateHash: hashSecret(state),
      providerId: github.id,
      nonce: login?.nonce,
      // RFC 7636 §4.2: the verifier kept is the one the challenge sent was made from.
      codeVerifier: url.searchParams.get('code_challenge'),
      returnTo: continuation.returnTo,
      clientId: app.id,
      maxAge: null,
      createdAt: now,
      expiresAt: now + timeout * 1000,
    });
    assert.equal(typeof login?.nonce, 'string');
  });

  it("sends an OpenID provider its nonce and the login hint, and keeps the same nonce for the ID token's check", async () => {
    const oidc = await addProvider(manage, { kind: 'oidc', name: 'Corp SSO', issuer: `${upstream.url}/oidc`, client_id: 'tessera' });
    const from = browser();
    const start = await startUpstream(deps, from, oidc.id, continuation, { loginHint: 'ann@corp.example' });
    assert.equal(start.kind, 'redirect', JSON.stringify(start));
    const url = new URL(start.kind === 'redirect' ? start.url : '');
    assert.equal(url.origin + url.pathname, `${upstream.url}/oidc/authorize`);
    assert.deepEqual(
      ['scope', 'response_type', 'login_hint', 'redirect_uri', 'code_challenge_method'].map((name) => url.searchParams.get(name)),
      ['openid profile email', 'code', 'ann@corp.example', `${FLOW_ISSUER}/login/upstream/corp-sso/callback`, 'S256'],
    );
    const state = url.searchParams.get('state')!;
    const login = await world.store.upstreamLogins.consume(hashSecret(state), world.clock.now());
    // OIDC Core §3.1.2.1: the nonce sent is the one the ID token must carry back.
    assert.equal(login?.nonce, url.searchParams.get('nonce'));
    assert.ok(login?.nonce);
  });

  it('refuses to start with a provider that does not exist or cannot be reached: a signin.failed event, nothing kept, no cookie', async () => {
    const { server, port } = await listenOnFreePort();
    await closeServer(server);
    const down = await addProvider(manage, { kind: 'oidc', name: 'Down', issuer: `http://127.0.0.1:${port}`, client_id: 'tessera' });
    const cases: [string, string, string, string | null][] = [
      ['an unknown provider', 'nowhere', 'unknown_provider', null],
      ['a provider nobody runs', down.id, 'unavailable', down.id],
    ];
    for (const [what, id, reason, providerId] of cases) {
      const from = browser();
      const start = await startUpstream(deps, from, id, continuation);
      assert.deepEqual(start, { kind: 'refused', reason, provider: providerId === null ? null : down.name }, what);
      assert.equal(from.cookies.jar.size, 0, `${what}: no cookie`);
      const event = await failureOf(from.ip);
      assert.deepEqual([event?.detail['reason'], event?.detail['provider'], event?.clientId], [reason, providerId, app.id], what);
    }
    assert.match(String((await failureOf(`192.0.2.${browsers}`))?.detail['upstream']), /^cannot reach http:\/\/127\.0\.0\.1:\d+\/\.well-known/);
  });

  it('asks for the password on its own form for a directory (LDAP), sending nothing upstream', async () => {
    const ldap = await addProvider(manage, { kind: 'ldap', name: 'Directory', url: 'ldaps://ldap.example.com', user_search_base: 'ou=people,dc=example' });
    const from = browser();
    assert.deepEqual(await startUpstream(deps, from, ldap.id, continuation), { kind: 'password-form', provider: ldap });
    assert.equal(from.cookies.jar.size, 0);
  });

  it('signs in the person the provider answered for in the browser that left, once, and goes on to where the sign-in was going', async () => {
    const { browser: from, url, state } = await started();
    const requests = upstream.seen.tokenRequests.length;
    const back = callback(`code=the-code&state=${state}`);
    const finished = await finishUpstream(deps, from, github.id, back);
    assert.equal(finished.kind, 'signed-in', JSON.stringify(finished));
    assert.deepEqual(finished.continuation, continuation);
    assert.equal(finished.kind === 'signed-in' ? finished.user.username : null, 'octocat');
    assert.equal(from.cookies.jar.has(UPSTREAM), false, 'the state cookie is spent');
    assert.ok(from.cookies.jar.get(cookieNames(world.config).session), 'a session cookie');
    // RFC 7636 §4.5: the verifier kept for this sign-in went with the code.
    const verifier = upstream.seen.tokenRequests.at(-1)?.get('code_verifier') ?? '';
    assert.equal(createHash('sha256').update(verifier).digest('base64url'), url.searchParams.get('code_challenge'));
    // The same answer again, cookie and all (RFC 6749 §10.5: a code is used once): the sign-in is used up.
    from.cookies.jar.set(UPSTREAM, state);
    const again = await finishUpstream(deps, from, github.id, back);
    assert.deepEqual([kindOf(again), again.continuation], ['expired', null]);
    assert.equal(upstream.seen.tokenRequests.length, requests + 1, 'GitHub was asked once');
  });

  it('refuses an answer that did not start in this browser (RFC 6749 §10.12), before asking the provider, and leaves the sign-in to the browser that did', async () => {
    const other = await started();
    const cases: [string, (state: string) => { cookie: string | undefined; query: string }][] = [
      ['another browser: no cookie', (state) => ({ cookie: undefined, query: `code=x&state=${state}` })],
      ["another sign-in's cookie", (state) => ({ cookie: other.state, query: `code=x&state=${state}` })],
      ['the state changed on the way', (state) => ({ cookie: state, query: `code=x&state=${state.slice(0, -1)}${state.endsWith('A') ? 'B' : 'A'}` })],
      ['no state in the answer', (state) => ({ cookie: state, query: 'code=x' })],
      ['an empty cookie and state', () => ({ cookie: '', query: 'code=x&state=' })],
      ['a cookie too long to be ours, and the same state', () => ({ cookie: 'a'.repeat(129), query: `code=x&state=${'a'.repeat(129)}` })],
    ];
    const requests = upstream.seen.tokenRequests.length;
    for (const [what, answer] of cases) {
      const { browser: genuine, state } = await started();
      const { cookie, query } = answer(state);
      const from = browser();
      if (cookie !== undefined) from.cookies.jar.set(UPSTREAM, cookie);
      const finished = await finishUpstream(deps, from, github.id, callback(query));
      assert.deepEqual(finished, { kind: 'refused', reason: 'state_mismatch', provider: github.name, continuation: null }, what);
      assert.equal(from.cookies.jar.has(UPSTREAM), false, `${what}: the cookie cleared`);
      assert.deepEqual((await failureOf(from.ip))?.detail, { reason: 'state_mismatch', provider: github.id }, what);
      // The forged answer used nothing up: the browser that left still finishes (here, cancelled upstream).
      const real = await finishUpstream(deps, genuine, github.id, callback(`error=access_denied&state=${state}`));
      assert.equal(kindOf(real), 'upstream_error', `${what}: the real sign-in is still there`);
    }
    assert.equal(upstream.seen.tokenRequests.length, requests, 'no code was exchanged');
  });

  it('refuses an answer once the sign-in timeout has passed, and one that comes back a second time', async () => {
    const timeout = world.config.upstream.signInTimeout * 1000;
    const cases: [string, number, string][] = [
      ['a moment before the timeout', timeout - 1, 'upstream_error'],
      ['at the timeout', timeout, 'expired'],
      ['long after', timeout * 10, 'expired'],
    ];
    for (const [what, wait, expected] of cases) {
      const { browser: from, state } = await started();
      world.clock.advance(wait);
      const finished = await finishUpstream(deps, from, github.id, callback(`error=access_denied&state=${state}`));
      assert.equal(kindOf(finished), expected, what);
      if (expected === 'expired') {
        assert.equal(finished.continuation, null, what);
        assert.deepEqual((await failureOf(from.ip))?.detail, { reason: 'expired', provider: github.id }, what);
        continue;
      }
      from.cookies.jar.set(UPSTREAM, state);
      const replayed = await finishUpstream(deps, from, github.id, callback(`error=access_denied&state=${state}`));
      assert.equal(kindOf(replayed), 'expired', `${what}: answered twice`);
    }
  });

  it("refuses an answer brought to another provider's callback: the sign-in belongs to the provider it went to", async () => {
    const elsewhere = await provider();
    const { browser: from, state } = await started(github);
    const finished = await finishUpstream(deps, from, elsewhere.id, callback(`code=x&state=${state}`, elsewhere.id));
    assert.deepEqual([kindOf(finished), finished.continuation], ['expired', null]);
  });

  it('refuses a sign-in whose provider was removed meanwhile', async () => {
    const removable = await provider();
    const { browser: from, state } = await started(removable);
    await world.store.identityProviders.remove(removable.id);
    const finished = await finishUpstream(deps, from, removable.id, callback(`code=x&state=${state}`, removable.id));
    // Its sign-ins under way go with it (IdentityProviderStore.remove): none is left to finish.
    assert.deepEqual([kindOf(finished), finished.continuation], ['expired', null]);
  });

  it("refuses the provider's error and an answer without a code, keeping where the sign-in was going, the provider's word in the event", async () => {
    const cases: [string, string, string, RegExp][] = [
      ['the person cancelled (RFC 6749 §4.1.2.1)', 'error=access_denied&error_description=nope', 'upstream_error', /^access_denied$/],
      ['no code', '', 'invalid_response', /no authorization code/],
    ];
    const requests = upstream.seen.tokenRequests.length;
    for (const [what, query, reason, detail] of cases) {
      const { browser: from, state } = await started();
      const finished = await finishUpstream(deps, from, github.id, callback(`${query}&state=${state}`));
      assert.deepEqual(finished, { kind: 'refused', reason, provider: github.name, continuation }, what);
      const event = await failureOf(from.ip);
      assert.deepEqual([event?.detail['reason'], event?.detail['provider'], event?.clientId], [reason, github.id, app.id], what);
      assert.match(String(event?.detail['upstream']), detail, what);
    }
    assert.equal(upstream.seen.tokenRequests.length, requests, 'no code was exchanged');
  });

  it("does not take an OpenID provider's silence on email_verified for a verified address: the account here with that address is not linked to it", async () => {
    await world.addUser({ username: 'ann', email: 'ann@corp.example', emailVerified: true });
    const corp = await addProvider(manage, { kind: 'oidc', name: 'Corp Linking', issuer: `${upstream.url}/oidc`, client_id: 'tessera', allow_linking: true });
    const cases: [string, Record<string, unknown>, string][] = [
      ['email_verified left out', {}, 'email_taken'],
      ['email_verified false', { email_verified: false }, 'email_taken'],
      ['email_verified "true", as some providers send it', { email_verified: 'true' }, 'signed-in'],
    ];
    for (const [what, claims, expected] of cases) {
      upstream.seen.idToken = { sub: 'ann-upstream', email: 'ann@corp.example', ...claims };
      const { browser: from, url, state } = await started(corp);
      upstream.seen.nonce = url.searchParams.get('nonce')!;
      const finished = await finishUpstream(deps, from, corp.id, callback(`code=x&state=${state}`, corp.id));
      assert.equal(kindOf(finished), expected, what);
      if (expected !== 'signed-in') assert.equal(await world.store.linkedIdentities.get(corp.id, 'ann-upstream'), null, `${what}: nothing linked`);
    }
    assert.equal((await world.store.linkedIdentities.get(corp.id, 'ann-upstream'))?.userId, (await world.store.users.findByUsername('ann'))?.id);
  });

  it('refuses a person outside the allowed domains once the provider has answered, naming them in the event; signs in one inside', async () => {
    const corp = await provider({ allowed_domains: ['corp.example'] });
    const cases: [string, string][] = [
      ['octocat@github.test', 'domain_not_allowed'],
      ['octocat@corp.example', 'signed-in'],
    ];
    for (const [email, expected] of cases) {
      upstream.seen.email = email;
      const { browser: from, state } = await started(corp);
      const finished = await finishUpstream(deps, from, corp.id, callback(`code=x&state=${state}`, corp.id));
      assert.equal(kindOf(finished), expected, email);
      if (expected !== 'signed-in') {
        assert.deepEqual(finished.continuation, continuation);
        const event = await failureOf(from.ip);
        assert.deepEqual([event?.username, event?.detail['reason']], ['octocat', 'domain_not_allowed']);
        assert.equal(await world.store.linkedIdentities.get(corp.id, '583231'), null, 'nothing linked');
      }
    }
    upstream.seen.email = 'octocat@github.test';
  });

  it('asks an OpenID provider for a new sign-in when one is needed (prompt=login, max_age), and keeps the max_age for its answer', async () => {
    const oidc = await addProvider(manage, { kind: 'oidc', name: 'Corp Again', issuer: `${upstream.url}/oidc`, client_id: 'tessera' });
    const cases: [string, number | null, string | null, string | null][] = [
      ['a sign-in made now (prompt=login here, a change on /account)', 0, 'login', '0'],
      ["the authorization request's max_age", 300, null, '300'],
      ['any sign-in the provider vouches for', null, null, null],
    ];
    for (const [what, maxAge, prompt, sent] of cases) {
      const start = await startUpstream(deps, browser(), oidc.id, continuation, { maxAge });
      assert.equal(start.kind, 'redirect', what);
      const url = new URL(start.kind === 'redirect' ? start.url : '');
      assert.deepEqual([url.searchParams.get('prompt'), url.searchParams.get('max_age')], [prompt, sent], what);
      const login = await world.store.upstreamLogins.consume(hashSecret(url.searchParams.get('state')!), world.clock.now());
      assert.equal(login?.maxAge, maxAge, `${what}: kept for the ID token's auth_time`);
    }
    // GitHub's OAuth has neither: nothing is sent, nothing kept to check.
    const { url } = await started();
    assert.deepEqual([url.searchParams.get('prompt'), url.searchParams.get('max_age')], [null, null]);
  });

  it("gives the session the OpenID provider's auth_time, not the time it answered, refuses an answer older than the max_age asked, and dates a new sign-in asked for no earlier than its start", async () => {
    const corp = await addProvider(manage, { kind: 'oidc', name: 'Corp Sessions', issuer: `${upstream.url}/oidc`, client_id: 'tessera' });
    // openid-client reads the ID token's times by the system's clock: this world's follows it here.
    world.clock.set(Date.now());
    const hoursAgo = Math.floor(world.clock.now() / 1000) - 2 * 3600;
    const sessionOf = async (from: Browser & { cookies: CookieJar }) =>
      world.store.sessions.get(hashSecret(from.cookies.jar.get(cookieNames(world.config).session) ?? ''), world.clock.now());
    const signIn = async (idToken: Record<string, unknown>, maxAge: number | null) => {
      upstream.seen.idToken = { sub: 'cy-upstream', email: 'cy@corp.example', ...idToken };
      const from = browser();
      const start = await startUpstream(deps, from, corp.id, continuation, { maxAge });
      const url = new URL(start.kind === 'redirect' ? start.url : '');
      upstream.seen.nonce = url.searchParams.get('nonce')!;
      const finished = await finishUpstream(deps, from, corp.id, callback(`code=x&state=${url.searchParams.get('state')}`, corp.id));
      return { finished, from };
    };
    // The provider's own session signed the person in two hours ago, and said so.
    const silent = await signIn({ auth_time: hoursAgo }, null);
    assert.equal(kindOf(silent.finished), 'signed-in');
    assert.equal((await sessionOf(silent.from))?.authTime, hoursAgo * 1000, 'when the person signed in there');
    // A time to come is not taken on the provider's word: now at the latest.
    const ahead = await signIn({ auth_time: hoursAgo + 4 * 3600 }, null);
    assert.equal((await sessionOf(ahead.from))?.authTime, world.clock.now());

    // Asked for a new sign-in (max_age=0), the same two-hour-old one is refused, as is none
    // dated at all (OIDC Core §3.1.2.1: "When max_age is used, the ID Token returned MUST
    // include an auth_time Claim Value").
    for (const [what, idToken] of [
      ['two hours old', { auth_time: hoursAgo }],
      ['no auth_time', {}],
    ] as const) {
      const refused = await signIn(idToken, 0);
      assert.equal(kindOf(refused.finished), 'invalid_response', what);
      assert.equal(await sessionOf(refused.from), null, `${what}: no session`);
      assert.match(String((await failureOf(refused.from.ip))?.detail['upstream']), /auth_time|authentication/, what);
    }
    // One made now signs in, dated no earlier than its start here: the provider's auth_time is
    // in whole seconds by its own clock, which openid-client lets be behind (its clock
    // tolerance), and a session dated before the start would leave prompt=login (or SAML
    // ForceAuthn) asking again at every round.
    const startedAt = world.clock.now();
    const now = Math.floor(startedAt / 1000);
    for (const [what, authTime] of [
      ['made now', now],
      ["by a provider's clock 3 s behind", now - 3],
    ] as const) {
      const fresh = await signIn({ auth_time: authTime }, 0);
      assert.equal(kindOf(fresh.finished), 'signed-in', what);
      assert.equal((await sessionOf(fresh.from))?.authTime, startedAt, what);
    }
  });

  it('dates a sign-in through a provider that says nothing of when (GitHub) now, in the same session, so that a person with GitHub alone is not asked again at every round', async () => {
    const sessionOf = async (from: Browser & { cookies: CookieJar }) =>
      world.store.sessions.get(hashSecret(from.cookies.jar.get(cookieNames(world.config).session) ?? ''), world.clock.now());
    const signIn = async (from: Browser & { cookies: CookieJar }) => {
      const start = await startUpstream(deps, from, github.id, continuation);
      const state = new URL(start.kind === 'redirect' ? start.url : '').searchParams.get('state');
      assert.equal(kindOf(await finishUpstream(deps, from, github.id, callback(`code=x&state=${state}`))), 'signed-in');
      return sessionOf(from);
    };
    const from = browser();
    const first = await signIn(from);
    assert.equal(first?.authTime, world.clock.now(), 'a first sign-in in this browser');
    world.clock.advance(3600_000);
    // GitHub's session may have answered without a word, but keeping the old time protected
    // nothing (sign out, then in again) and looped a GitHub-only person (docs/identity-providers.md).
    const again = await signIn(from);
    assert.deepEqual([again?.authTime, again?.sid], [world.clock.now(), first?.sid]);
    assert.notEqual(again?.idHash, first?.idHash, 'a new session id all the same');
  });

  it('names the provider the operator made the only way in, and none before', async () => {
    const add = (name: string, only: boolean) => addProvider(manage, { kind: 'oidc', name, issuer: 'https://sso.example.com', client_id: 'tessera', only });
    await add('Not only', false);
    assert.equal(await onlyProvider(world), null);
    const only = await add('The only one', true);
    assert.equal((await onlyProvider(world))?.id, only.id);
  });
});

describe("a provider's settings (flows/upstream/settings.ts)", () => {
  let world: FlowWorld;
  before(async () => {
    world = await flowWorld();
  });
  after(() => world.close());

  const record = (kind: IdentityProviderRecord['kind'], settings: Record<string, unknown>): IdentityProviderRecord => ({
    id: kind,
    kind,
    name: kind,
    position: 0,
    secret: null,
    createdAt: 0,
    updatedAt: 0,
    settings,
  });

  it('makes the redirect URI the provider is told from the issuer and the provider id', () => {
    const cases: [string, string, string][] = [
      [FLOW_ISSUER, 'corp-sso', `${FLOW_ISSUER}/login/upstream/corp-sso/callback`],
      ['https://example.com/tessera', 'github', 'https://example.com/tessera/login/upstream/github/callback'],
      [FLOW_ISSUER, 'a b/c', `${FLOW_ISSUER}/login/upstream/a%20b%2Fc/callback`],
    ];
    for (const [issuer, id, expected] of cases) assert.equal(upstreamRedirectUri(issuer, id), expected, id);
  });

  it("reads each kind with its defaults, taking only true as on and only text from a list's entries", () => {
    const common = { only: false, allowLinking: false, allowedDomains: [], domains: [], claimMapping: {} };
    const cases: [string, IdentityProviderRecord, Record<string, unknown>][] = [
      [
        'GitHub: github.com and its API',
        record('github', { clientId: 'x' }),
        { ...common, kind: 'github', clientId: 'x', allowedOrganizations: [], webUrl: 'https://github.com', apiUrl: 'https://api.github.com' },
      ],
      [
        'an OpenID provider: no scope, no trust in its mfa',
        record('oidc', { issuer: 'https://sso.example.com' }),
        { ...common, kind: 'oidc', issuer: 'https://sso.example.com', clientId: '', scopes: [], trustUpstreamMfa: false },
      ],
      [
        'a directory: the usual filters, anonymous, no groups',
        record('ldap', { url: 'ldaps://ldap.example.com', bindDn: '', groupSearchBase: 5 }),
        {
          ...common,
          kind: 'ldap',
          url: 'ldaps://ldap.example.com',
          startTls: false,
          bindDn: null,
          userSearchBase: '',
          userFilter: '(uid={username})',
          groupSearchBase: null,
          groupFilter: '(member={dn})',
        },
      ],
      [
        'flags that are not true, lists with other things in them',
        record('github', {
          only: 'true',
          allowLinking: 1,
          allowedDomains: ['corp.example', 7],
          domains: 'corp.example',
          allowedOrganizations: [null, 'octo-org'],
        }),
        {
          ...common,
          kind: 'github',
          clientId: '',
          allowedDomains: ['corp.example'],
          allowedOrganizations: ['octo-org'],
          webUrl: 'https://github.com',
          apiUrl: 'https://api.github.com',
        },
      ],
      [
        'flags set',
        record('oidc', { only: true, allowLinking: true, trustUpstreamMfa: true }),
        { ...common, kind: 'oidc', only: true, allowLinking: true, issuer: '', clientId: '', scopes: [], trustUpstreamMfa: true },
      ],
    ];
    for (const [what, provider, expected] of cases) assert.deepEqual(providerSettings(provider), expected, what);
  });

  it('maps only the claims Tessera fills, each from a named upstream claim; the operator may name no other', async () => {
    assert.deepEqual(providerSettings(record('oidc', { claimMapping: { username: 'login', groups: 'roles', sub: 'id', email: 5 } })).claimMapping, {
      username: 'login',
      groups: 'roles',
    });
    assert.deepEqual(providerSettings(record('oidc', { claimMapping: 'username=login' })).claimMapping, {});
    const manage = { ...world.manage, secrets: world.secrets };
    let n = 0;
    const add = (claim_mapping: Record<string, string>) => {
      n += 1;
      return addProvider(manage, { kind: 'oidc', name: `SSO ${n}`, issuer: 'https://sso.example.com', client_id: 'tessera', claim_mapping });
    };
    const cases: [string, Record<string, string>, string][] = [
      ['a claim Tessera does not fill', { sub: 'id' }, 'invalid:claim_mapping'],
      ['no upstream claim named', { email: '' }, 'invalid:claim_mapping'],
      ['an upstream claim with a space', { email: 'mail address' }, 'invalid:claim_mapping'],
      ['an upstream claim too long', { email: 'm'.repeat(101) }, 'invalid:claim_mapping'],
      ['claims Tessera fills', { username: 'upn', groups: 'roles' }, 'ok'],
    ];
    for (const [what, mapping, expected] of cases) assert.equal(await outcome(() => add(mapping)), expected, what);
    const stored = await world.store.identityProviders.get(`sso-${n}`);
    assert.deepEqual(stored && providerSettings(stored).claimMapping, { username: 'upn', groups: 'roles' });
    const plain = await add({});
    assert.deepEqual(providerSettings(plain).claimMapping, {}, 'none: the standard claims');
  });
});
