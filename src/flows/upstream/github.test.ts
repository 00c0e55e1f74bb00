/**
 * Signing in with GitHub without HTTP on Tessera's side (flows/upstream/github.ts): the
 * authorization URL `beginGithub` sends the browser to, and what `finishGithub` makes of
 * GitHub's answers, read from a small server on 127.0.0.1 answering as GitHub's token
 * endpoint and REST API (the provider's `web_url` and `api_url` point at it): the code
 * exchanged with the unsealed client secret and the PKCE verifier, the claims mapped, the
 * verified primary address and no other, the required organisations, and answers that do
 * not hold up. Through `finishUpstream`, an unverified address links to no account.
 * test/upstream-github.test.ts runs the whole sign-in through the server's pages and the
 * `tessera provider` command; sign-in.test.ts beside this file the round trip's checks.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { after, before, beforeEach, describe, it } from 'node:test';
import type { IdentityProviderRecord } from '../../store/identity-providers.ts';
import { FLOW_ISSUER, flowWorld, type FlowWorld, CookieJar } from '../../../test/helpers/flows.ts';
import { closeServer, listenOnFreePort } from '../../../test/helpers/server.ts';
import type { Browser } from '../session/session.ts';
import { addProvider, type ProviderInput } from '../manage/providers.ts';
import type { UpstreamIdentity } from './accounts.ts';
import { beginGithub, finishGithub } from './github.ts';
import { UpstreamFailure } from './oidc.ts';
import { providerSettings, type GithubSettings } from './settings.ts';
import { finishUpstream, startUpstream } from './sign-in.ts';
import { text } from 'node:stream/consumers';

const CLIENT_ID = 'Iv1.0123456789abcdef';
const CLIENT_SECRET = 'github client secret';

type Answer = readonly [status: number, body: unknown];

/** What GitHub says of the person signed in there; each test sets what it needs. */
interface GithubAnswers {
  token: Answer;
  user: Answer;
  emails: Answer;
  /** By organisation login; absent: 404, as GitHub answers for a non-member. */
  memberships: Record<string, Answer>;
}

const OCTOCAT = { id: 583231, login: 'octocat', name: 'The Octocat', avatar_url: 'https://avatars.github.test/u/583231' };
const PRIMARY = { email: 'octocat@github.test', primary: true, verified: true, visibility: 'public' };
const OTHER = { email: 'other@github.test', primary: false, verified: true, visibility: null };

const usual = (): GithubAnswers => ({
  token: [200, { access_token: 'gho_token1', token_type: 'bearer', scope: 'read:user,user:email' }],
  user: [200, OCTOCAT],
  emails: [200, [OTHER, PRIMARY]],
  memberships: {},
});

/** GitHub's token endpoint (under the web URL) and REST API (under /api/v3, as on a GitHub Enterprise Server), answering `answers`. */
async function fakeGithub() {
  const state = {
    answers: usual(),
    tokenRequests: [] as URLSearchParams[],
    apiCalls: [] as { path: string; headers: IncomingHttpHeaders }[],
  };
  const json = (response: ServerResponse, [status, body]: Answer) => {
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    response.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
  const { server, port } = await listenOnFreePort(
    createServer(async (request, response) => {
      const url = new URL(request.url!, 'http://github.test');
      if (request.method === 'POST' && url.pathname === '/login/oauth/access_token') {
        state.tokenRequests.push(new URLSearchParams(await text(request)));
        return json(response, state.answers.token);
      }
      state.apiCalls.push({ path: url.pathname, headers: request.headers });
      if (url.pathname === '/api/v3/user') return json(response, state.answers.user);
      if (url.pathname === '/api/v3/user/emails') return json(response, state.answers.emails);
      const org = /^\/api\/v3\/user\/memberships\/orgs\/([^/]+)$/.exec(url.pathname)?.[1];
      if (org !== undefined) return json(response, state.answers.memberships[org] ?? [404, { message: 'Not Found' }]);
      return json(response, [404, { message: 'Not Found' }]);
    }),
  );
  return { state, url: `http://127.0.0.1:${port}`, close: () => closeServer(server) };
}

describe('signing in with GitHub (flows/upstream/github.ts)', () => {
  let world: FlowWorld;
  let github: Awaited<ReturnType<typeof fakeGithub>>;
  let deps: FlowWorld['deps'] & { secrets: FlowWorld['secrets'] };

  before(async () => {
    world = await flowWorld();
    github = await fakeGithub();
    deps = { ...world.deps, secrets: world.secrets };
  });
  after(async () => {
    await github.close();
    await world.close();
  });
  beforeEach(() => {
    github.state.answers = usual();
    github.state.tokenRequests.length = 0;
    github.state.apiCalls.length = 0;
  });

  let added = 0;
  /** A GitHub provider added as `tessera provider add github` adds it, pointed at the local GitHub. */
  async function provider(input: ProviderInput = {}): Promise<IdentityProviderRecord> {
    added += 1;
    return addProvider(
      { ...world.manage, secrets: world.secrets },
      {
        kind: 'github',
        name: `GitHub ${added}`,
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        web_url: github.url,
        api_url: `${github.url}/api/v3`,
        ...input,
      },
    );
  }

  const CHECKS = { state: 'the-state', nonce: 'the-nonce', codeVerifier: 'the-code-verifier-the-code-verifier-0123456789', maxAge: null };
  const callbackOf = (record: IdentityProviderRecord, query = `code=the-code&state=${CHECKS.state}`) =>
    new URL(`${FLOW_ISSUER}/login/upstream/${record.id}/callback?${query}`);
  const finish = (record: IdentityProviderRecord, query?: string) =>
    finishGithub(deps, record, providerSettings(record) as GithubSettings, callbackOf(record, query), CHECKS);
  /** `finish`'s identity, or the reason it was refused. */
  const finished = (record: IdentityProviderRecord, query?: string): Promise<UpstreamIdentity | string> =>
    finish(record, query).catch((error: unknown) => {
      if (error instanceof UpstreamFailure) return error.reason;
      throw error;
    });

  it("sends the browser to GitHub's authorize endpoint with PKCE (S256), the redirect URI from the issuer, no sign-up page, and fetches nothing", async () => {
    const record = await provider();
    const { url, checks } = await beginGithub(deps, record, providerSettings(record) as GithubSettings);
    assert.equal(url.origin + url.pathname, `${github.url}/login/oauth/authorize`);
    const query = Object.fromEntries(url.searchParams);
    assert.deepEqual(query, {
      client_id: CLIENT_ID,
      redirect_uri: `${FLOW_ISSUER}/login/upstream/${record.id}/callback`,
      response_type: 'code',
      scope: 'read:user user:email',
      state: checks.state,
      // RFC 7636 §4.2: code_challenge = BASE64URL(SHA256(code_verifier)).
      code_challenge: createHash('sha256').update(checks.codeVerifier).digest('base64url'),
      code_challenge_method: 'S256',
      allow_signup: 'false',
    });
    // RFC 7636 §4.1: a verifier of 43 to 128 characters; a state and a verifier of their own for each sign-in.
    assert.ok(checks.codeVerifier.length >= 43 && checks.codeVerifier.length <= 128);
    const again = await beginGithub(deps, record, providerSettings(record) as GithubSettings);
    assert.notEqual(again.checks.state, checks.state);
    assert.notEqual(again.checks.codeVerifier, checks.codeVerifier);
    assert.deepEqual([github.state.tokenRequests.length, github.state.apiCalls.length], [0, 0]);
  });

  it('asks for read:org only when the operator requires an organisation', async () => {
    const record = await provider({ allowed_organizations: ['octo-org'] });
    const { url } = await beginGithub(deps, record, providerSettings(record) as GithubSettings);
    assert.equal(url.searchParams.get('scope'), 'read:user user:email read:org');
  });

  it('refuses to begin, as an answer that does not hold up, with a provider that has no client secret', async () => {
    const record = { ...(await provider()), secret: null };
    const failure = await beginGithub(deps, record, providerSettings(record) as GithubSettings).catch((error: unknown) => error);
    assert.ok(failure instanceof UpstreamFailure);
    assert.deepEqual([failure.reason, failure.detail], ['invalid_response', 'the GitHub provider has no client secret']);
  });

  it("exchanges the code with the client secret unsealed and the PKCE verifier, then reads GitHub's API with the token as documented", async () => {
    const record = await provider();
    await finish(record);
    assert.equal(github.state.tokenRequests.length, 1);
    const form = Object.fromEntries(github.state.tokenRequests[0]!);
    assert.deepEqual(form, {
      grant_type: 'authorization_code',
      code: 'the-code',
      redirect_uri: `${FLOW_ISSUER}/login/upstream/${record.id}/callback`,
      code_verifier: CHECKS.codeVerifier,
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
    });
    assert.deepEqual(
      github.state.apiCalls.map((call) => call.path),
      ['/api/v3/user', '/api/v3/user/emails'],
      'the API URL, and no membership asked for when no organisation is required',
    );
    for (const { headers } of github.state.apiCalls) {
      assert.equal(headers.authorization, 'Bearer gho_token1');
      assert.equal(headers.accept, 'application/vnd.github+json');
      assert.equal(headers['x-github-api-version'], '2022-11-28');
    }
  });

  it("maps GitHub's user to the claims: its numeric id as the subject, its login, name and avatar, no groups, no amr", async () => {
    const record = await provider();
    assert.deepEqual(await finish(record), {
      subject: '583231',
      label: 'octocat',
      username: 'octocat',
      email: 'octocat@github.test',
      emailVerified: true,
      name: 'The Octocat',
      givenName: null,
      familyName: null,
      picture: 'https://avatars.github.test/u/583231',
      locale: null,
      zoneinfo: null,
      groups: [],
      amr: [],
      // Nor when: the session takes no new sign-in time from it (flows/upstream/sign-in.ts).
      authTime: null,
    });
    github.state.answers.user = [200, { id: 7, login: 'nameless', name: 42, avatar_url: 42 }];
    const bare = await finish(record);
    assert.deepEqual([bare.subject, bare.label, bare.name, bare.picture], ['7', 'nameless', null, null]);
  });

  it('takes the username from the verified primary address when the claim mapping says so, else from the login', async () => {
    const record = await provider({ claim_mapping: { username: 'email' } });
    assert.equal((await finish(record)).username, 'octocat@github.test');
    github.state.answers.emails = [200, [{ ...PRIMARY, verified: false }, OTHER]];
    assert.equal((await finish(record)).username, 'octocat', 'no verified primary address: the login');
  });

  it('uses the primary address GitHub verified, and no other', async () => {
    const record = await provider();
    const cases: [string, unknown[], string | null][] = [
      ['the primary one among several verified', [OTHER, PRIMARY], PRIMARY.email],
      ['a primary address not verified, beside a verified one', [{ ...PRIMARY, verified: false }, OTHER], null],
      ['only secondary addresses', [OTHER], null],
      ['no address', [], null],
      ['a primary "verified" that is not true', [{ ...PRIMARY, verified: 'true' }], null],
      ['a primary entry without an address', [{ primary: true, verified: true, email: null }], null],
    ];
    for (const [what, emails, expected] of cases) {
      github.state.answers.emails = [200, emails];
      const identity = await finish(record);
      assert.deepEqual([identity.email, identity.emailVerified], [expected, expected !== null], what);
    }
  });

  it('lets in only an active member of one of the required organisations, asking each in turn', async () => {
    const record = await provider({ allowed_organizations: ['octo-org', 'other-org'] });
    const active: Answer = [200, { state: 'active', role: 'member', organization: { login: 'x' } }];
    const cases: [string, Record<string, Answer>, string][] = [
      ['an active member of the first', { 'octo-org': active }, 'ok'],
      ['an active member of the second only', { 'other-org': active }, 'ok'],
      ['a member of neither (404)', {}, 'organization_not_allowed'],
      ['invited, not yet in (pending)', { 'octo-org': [200, { state: 'pending' }] }, 'organization_not_allowed'],
      ['a membership the app may not see (403)', { 'octo-org': [403, { message: 'Forbidden' }] }, 'organization_not_allowed'],
      ['a membership answer without a state', { 'octo-org': [200, { role: 'member' }] }, 'organization_not_allowed'],
      ['GitHub failing (502)', { 'octo-org': [502, 'Bad Gateway'] }, 'unavailable'],
    ];
    for (const [what, memberships, expected] of cases) {
      github.state.answers.memberships = memberships;
      const identity = await finished(record);
      assert.equal(typeof identity === 'string' ? identity : 'ok', expected, what);
    }
    github.state.answers.memberships = { 'octo-org': active, 'other-org': active };
    github.state.apiCalls.length = 0;
    await finish(record);
    assert.deepEqual(github.state.apiCalls.map((call) => call.path).slice(2), ['/api/v3/user/memberships/orgs/octo-org'], 'no more asked once one says active');
    github.state.answers.memberships = {};
    github.state.apiCalls.length = 0;
    const failure = await finish(record).catch((error: unknown) => error);
    assert.ok(failure instanceof UpstreamFailure);
    assert.equal(failure.detail, 'octocat is in none of octo-org, other-org');
    assert.deepEqual(github.state.apiCalls.map((call) => call.path).slice(2), [
      '/api/v3/user/memberships/orgs/octo-org',
      '/api/v3/user/memberships/orgs/other-org',
    ]);
  });

  it('refuses answers from GitHub that do not hold up, and makes no API call after a failed exchange', async () => {
    const record = await provider();
    const cases: [string, Partial<GithubAnswers>, string][] = [
      ['no access token', { token: [200, { token_type: 'bearer' }] }, 'invalid_response'],
      ['GET /user refused', { user: [401, { message: 'Bad credentials' }] }, 'invalid_response'],
      ['GET /user failing, whatever its body', { user: [500, OCTOCAT] }, 'invalid_response'],
      ['a user without a numeric id', { user: [200, { ...OCTOCAT, id: '583231' }] }, 'invalid_response'],
      ['a user without a login', { user: [200, { id: 1 }] }, 'invalid_response'],
      ['GET /user not JSON', { user: [200, '<html>'] }, 'invalid_response'],
      ['GET /user/emails refused', { emails: [403, { message: 'Forbidden' }] }, 'invalid_response'],
      ['GET /user/emails failing, whatever its body', { emails: [500, [PRIMARY]] }, 'invalid_response'],
      ['addresses that are not a list', { emails: [200, { email: PRIMARY.email }] }, 'invalid_response'],
    ];
    for (const [what, answers, expected] of cases) {
      github.state.answers = { ...usual(), ...answers };
      github.state.apiCalls.length = 0;
      assert.equal(await finished(record), expected, what);
      if (what === 'no access token') assert.equal(github.state.apiCalls.length, 0, `${what}: no API call`);
    }
    // GitHub refuses a code (or the client's credentials) with 200 and an error body, no access token.
    github.state.answers = { ...usual(), token: [200, { error: 'bad_verification_code' }] };
    github.state.apiCalls.length = 0;
    const refused = await finish(record).then(
      () => assert.fail('the code refused: no identity'),
      (error: unknown) => error,
    );
    assert.ok(refused instanceof UpstreamFailure);
    assert.deepEqual(
      [refused.reason, refused.detail],
      ['upstream_error', 'bad_verification_code (HTTP 200, no access token)'],
      "GitHub's own reason, for the operator",
    );
    assert.equal(github.state.apiCalls.length, 0, 'the code refused: no API call');
  });

  it("refuses GitHub's error in the callback, and a callback without a code, before any request to GitHub", async () => {
    const record = await provider();
    const cases: [string, string, string][] = [
      ['the person cancelled', `error=access_denied&state=${CHECKS.state}`, 'upstream_error'],
      ['no code', `state=${CHECKS.state}`, 'invalid_response'],
      ['another state than the one sent', 'code=the-code&state=forged', 'invalid_response'],
    ];
    for (const [what, query, expected] of cases) assert.equal(await finished(record, query), expected, what);
    assert.deepEqual([github.state.tokenRequests.length, github.state.apiCalls.length], [0, 0]);
  });

  describe('linking to an account that has the address (through finishUpstream)', () => {
    let n = 0;
    /** A sign-in with GitHub in a browser of its own, from the start to GitHub's answer. */
    async function signIn(record: IdentityProviderRecord) {
      n += 1;
      const cookies = new CookieJar();
      const browser: Browser = { cookies, ip: `192.0.2.${n}`, userAgent: 'TestBrowser/1.0', log: { warn: () => {} } };
      const start = await startUpstream(deps, browser, record.id, { returnTo: '/account', clientId: null });
      assert.equal(start.kind, 'redirect');
      const state = new URL(start.kind === 'redirect' ? start.url : '').searchParams.get('state')!;
      return finishUpstream(deps, browser, record.id, callbackOf(record, `code=c${n}&state=${state}`));
    }

    it('never links an address GitHub did not verify: a new account without it, the existing one untouched', async () => {
      const record = await provider({ allow_linking: true });
      const owner = await world.addUser({ username: 'address-owner', email: 'hubot@github.test', emailVerified: true });
      github.state.answers.user = [200, { id: 480938, login: 'hubot', name: null }];
      github.state.answers.emails = [200, [{ email: 'hubot@github.test', primary: true, verified: false, visibility: null }]];
      const outcome = await signIn(record);
      assert.equal(outcome.kind, 'signed-in');
      const user = outcome.kind === 'signed-in' ? outcome.user : null;
      assert.notEqual(user?.id, owner.id);
      assert.deepEqual([user?.username, user?.email, user?.emailVerified], ['hubot', null, false]);
      assert.deepEqual(await world.store.linkedIdentities.listForUser(owner.id), []);
      assert.equal((await world.store.linkedIdentities.get(record.id, '480938'))?.userId, user?.id);
    });

    it('links the verified primary address to the account that verified it, where the operator allows linking', async () => {
      const record = await provider({ allow_linking: true });
      const owner = await world.addUser({ username: 'octo-owner', email: 'octo@github.test', emailVerified: true });
      github.state.answers.user = [200, { ...OCTOCAT, id: 1001 }];
      github.state.answers.emails = [200, [{ ...PRIMARY, email: 'octo@github.test' }]];
      const outcome = await signIn(record);
      assert.deepEqual([outcome.kind, outcome.kind === 'signed-in' ? outcome.user.id : null], ['signed-in', owner.id]);
      const [linked] = await world.store.events.list({ type: 'identity.linked', userId: owner.id, limit: 5 });
      assert.deepEqual(linked?.detail, { provider: record.id, how: 'email' });
    });
  });
});
