/**
 * Signing in with GitHub against a small local server that answers as
 * GitHub's documented OAuth endpoints and REST API do: `/login/oauth/authorize`,
 * `/login/oauth/access_token` (JSON when asked for it, PKCE S256 checked), `GET /user`,
 * `GET /user/emails` and `GET /user/memberships/orgs/{org}`. It refuses what GitHub refuses:
 * a wrong client secret, a code used twice, a verifier that does not match, a missing token.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type ServerResponse } from 'node:http';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { newTotpSecret, timeStep, totpAt } from '../src/flows/second-factor/totp.ts';
import { FormBrowser } from './helpers/browser.ts';
import { runTessera } from './helpers/cli.ts';
import { closeAll, closeServer, listenOnFreePort, startTestServer, type TestServer } from './helpers/server.ts';
import { authorizationAttempt, redeemAttempt } from './helpers/fixtures.ts';
import { text } from 'node:stream/consumers';

interface GithubPerson {
  readonly id: number;
  readonly login: string;
  readonly name: string | null;
  readonly emails: readonly { email: string; primary: boolean; verified: boolean; visibility: string | null }[];
  readonly orgs: readonly string[];
}

const OCTOCAT: GithubPerson = {
  id: 583231,
  login: 'octocat',
  name: 'The Octocat',
  emails: [
    { email: 'octocat@github.test', primary: true, verified: true, visibility: 'public' },
    { email: 'other@github.test', primary: false, verified: true, visibility: null },
  ],
  orgs: ['octo-org'],
};
const HUBOT: GithubPerson = {
  id: 480938,
  login: 'hubot',
  name: null,
  emails: [{ email: 'hubot@github.test', primary: true, verified: false, visibility: null }],
  orgs: [],
};

/** GitHub as its documentation describes it, with one person signed in there at a time. */
async function fakeGithub(clientId: string, clientSecret: string) {
  let signedIn: GithubPerson = OCTOCAT;
  const codes = new Map<string, { person: GithubPerson; challenge: string; redirectUri: string }>();
  const tokens = new Map<string, GithubPerson>();
  const calls: string[] = [];
  const json = (response: ServerResponse, status: number, body: unknown) => {
    response.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    response.end(JSON.stringify(body));
  };
  const { server, port } = await listenOnFreePort(
    createServer(async (request, response) => {
      const url = new URL(request.url!, 'http://github.test');
      calls.push(`${request.method} ${url.pathname}`);
      if (request.method === 'GET' && url.pathname === '/login/oauth/authorize') {
        // The person is signed in at GitHub and has authorized the app: straight back with a code.
        if (url.searchParams.get('client_id') !== clientId) return json(response, 404, { error: 'not found' });
        const code = randomBytes(10).toString('hex');
        codes.set(code, { person: signedIn, challenge: url.searchParams.get('code_challenge') ?? '', redirectUri: url.searchParams.get('redirect_uri')! });
        const back = new URL(url.searchParams.get('redirect_uri')!);
        back.searchParams.set('code', code);
        back.searchParams.set('state', url.searchParams.get('state')!);
        response.writeHead(302, { location: back.href });
        return response.end();
      }
      if (request.method === 'POST' && url.pathname === '/login/oauth/access_token') {
        const form = new URLSearchParams(await text(request));
        const code = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        // GitHub answers these errors with 200 and an error body.
        if (form.get('client_id') !== clientId || form.get('client_secret') !== clientSecret)
          return json(response, 200, { error: 'incorrect_client_credentials' });
        if (!code || form.get('redirect_uri') !== code.redirectUri) return json(response, 200, { error: 'bad_verification_code' });
        const verifier = form.get('code_verifier') ?? '';
        if (createHash('sha256').update(verifier).digest('base64url') !== code.challenge) return json(response, 200, { error: 'bad_verification_code' });
        const token = `gho_${randomBytes(16).toString('hex')}`;
        tokens.set(token, code.person);
        return json(response, 200, { access_token: token, token_type: 'bearer', scope: 'read:user,user:email' });
      }
      const person = tokens.get((request.headers.authorization ?? '').replace(/^Bearer /, ''));
      if (!person) return json(response, 401, { message: 'Requires authentication' });
      if (url.pathname === '/api/user')
        return json(response, 200, { login: person.login, id: person.id, name: person.name, avatar_url: `https://avatars.github.test/u/${person.id}` });
      if (url.pathname === '/api/user/emails') return json(response, 200, person.emails);
      const org = /^\/api\/user\/memberships\/orgs\/([^/]+)$/.exec(url.pathname)?.[1];
      if (org !== undefined)
        return person.orgs.includes(org)
          ? json(response, 200, { state: 'active', role: 'member', organization: { login: org } })
          : json(response, 404, { message: 'Not Found' });
      return json(response, 404, { message: 'Not Found' });
    }),
  );
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    signInAs: (person: GithubPerson) => void (signedIn = person),
    close: () => closeServer(server),
  };
}

describe("signing in with GitHub (a local server answering as GitHub's API)", () => {
  let server: TestServer;
  let github: Awaited<ReturnType<typeof fakeGithub>>;
  let env: Record<string, string>;

  before(async () => {
    server = await startTestServer({ env: { TESSERA_SITE_NAME: 'Acme' } });
    env = { TESSERA_DATABASE: server.config.database, TESSERA_ISSUER: server.url };
    github = await fakeGithub('Iv1.0123456789abcdef', 'github client secret');
    const added = await runTessera(
      [
        'provider',
        'add',
        'github',
        '--name',
        'GitHub',
        '--client-id',
        'Iv1.0123456789abcdef',
        '--client-secret-stdin',
        '--web-url',
        github.url,
        '--api-url',
        `${github.url}/api`,
      ],
      env,
      'github client secret\n',
    );
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, new RegExp(`Register this redirect URI with the provider: ${server.url}/login/upstream/github/callback`));
  });
  after(() => closeAll(server, github));

  /** From Acme's button to GitHub and back: the page the callback answers. */
  async function signInWithGithub(visitor: FormBrowser) {
    const start = await visitor.request('/login/upstream/github?return_to=%2Faccount');
    assert.equal(start.status, 303, start.html.slice(0, 300));
    const authorize = new URL(start.location!);
    assert.equal(authorize.origin + authorize.pathname, `${github.url}/login/oauth/authorize`);
    assert.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
    const atGithub = await visitor.request(authorize.href);
    assert.equal(atGithub.status, 302);
    return visitor.request(atGithub.location!);
  }

  it("signs in with the GitHub account: the user, their verified primary address, the link by GitHub's id", async () => {
    const visitor = new FormBrowser(server.url);
    const back = await signInWithGithub(visitor);
    assert.equal(back.status, 200, back.html.slice(0, 500));
    assert.match(back.html, /<meta http-equiv="refresh" content="0;url=\/account">/);
    const account = await visitor.request('/account');
    assert.equal(account.status, 200);
    assert.match(account.html, /GitHub: octocat, linked /);
    const user = await server.store.users.findByUsername('octocat');
    assert.equal(user?.name, 'The Octocat');
    assert.equal(user?.email, 'octocat@github.test');
    assert.equal(user?.emailVerified, true);
    assert.equal(user?.picture, 'https://avatars.github.test/u/583231');
    assert.deepEqual(
      (await server.store.linkedIdentities.listForUser(user!.id)).map((link) => [link.providerId, link.subject]),
      [['github', '583231']],
    );
    // GitHub says nothing of how the person signed in there: the session claims nothing
    // (no `pwd`: no password was checked here), so ID tokens carry no amr.
    assert.deepEqual(
      (await server.store.sessions.listForUser(user!.id, Date.now())).map((session) => session.amr),
      [[]],
    );
    const app = await server.addClient({ name: 'Garden Planner' });
    const config = await oidc.discovery(new URL(server.url), app.clientId, undefined, oidc.ClientSecretBasic(app.clientSecret), {
      execute: [oidc.allowInsecureRequests],
    });
    const attempt = await authorizationAttempt(config, { scope: 'openid' });
    const approved = await visitor.authorize(attempt.url.href, null);
    const tokens = await redeemAttempt(config, attempt, new URL(approved.location!));
    assert.equal(tokens.claims()?.sub, user!.id);
    assert.equal('amr' in tokens.claims()!, false, 'no amr claim rather than an empty one (OIDC Core §2: optional)');
    // The token was used for GitHub's API, as documented, and nowhere else.
    assert.deepEqual(
      github.calls.filter((call) => call.includes('/api/')),
      ['GET /api/user', 'GET /api/user/emails'],
    );
  });

  it('adds a one-time code after GitHub as the code alone: one factor Tessera saw, not two', async () => {
    github.signInAs(OCTOCAT);
    const octocat = (await server.store.users.findByUsername('octocat'))!;
    const secret = newTotpSecret();
    const now = Date.now();
    assert.equal(await server.store.totp.begin(octocat.id, secret, now), true);
    assert.ok(await server.store.totp.confirm(octocat.id, timeStep(now) - 2, now));
    try {
      const visitor = new FormBrowser(server.url);
      const asked = await signInWithGithub(visitor);
      assert.equal(asked.status, 200, asked.html.slice(0, 300));
      assert.match(asked.html, /<label for="code">/);
      const done = await visitor.submit(asked, '/login/second-factor', { code: totpAt(secret, Date.now()) });
      assert.equal(done.status, 303, done.html.slice(0, 300));
      const sessions = await server.store.sessions.listForUser(octocat.id, Date.now());
      assert.deepEqual(sessions[0]?.amr, ['otp'], 'the newest session');
    } finally {
      await server.store.totp.remove(octocat.id);
    }
  });

  it('makes no verified address out of an unverified one', async () => {
    github.signInAs(HUBOT);
    const back = await signInWithGithub(new FormBrowser(server.url));
    assert.equal(back.status, 200);
    const user = await server.store.users.findByUsername('hubot');
    assert.equal(user?.email, null);
    assert.equal(user?.emailVerified, false);
  });

  it('refuses a GitHub user outside the required organisation, with a signin.failed event', async () => {
    assert.equal((await runTessera(['provider', 'update', 'github', '--allowed-organization', 'octo-org'], env)).code, 0);
    github.signInAs(HUBOT);
    const refused = await signInWithGithub(new FormBrowser(server.url));
    assert.equal(refused.status, 403);
    assert.match(refused.html, /Your GitHub account is not a member of an organisation Acme accepts\./);
    const [event] = (await server.store.events.list({ type: 'signin.failed', limit: 5 })).filter(
      (candidate) => candidate.detail['reason'] === 'organization_not_allowed',
    );
    assert.equal(event?.detail['provider'], 'github');
    assert.match(String(event?.detail['upstream']), /hubot is in none of octo-org/);
    github.signInAs(OCTOCAT);
    const member = await signInWithGithub(new FormBrowser(server.url));
    assert.equal(member.status, 200, 'an active member signs in');
    assert.ok(github.calls.includes('GET /api/user/memberships/orgs/octo-org'));
  });

  it('shows a button per provider on the sign-in page, in the order the operator set', async () => {
    const added = await runTessera(
      ['provider', 'add', 'oidc', '--name', 'Corp SSO', '--issuer', 'https://sso.example.com', '--client-id', 'x', '--position', '0'],
      env,
    );
    assert.equal(added.code, 0, added.stderr);
    try {
      const page = await new FormBrowser(server.url).request('/login');
      const buttons = [...page.html.matchAll(/<a class="button" href="([^"]+)">Continue with ([^<]+)<\/a>/g)].map((match) => [
        match[2],
        match[1]!.split('?')[0],
      ]);
      assert.deepEqual(buttons, [
        ['Corp SSO', '/login/upstream/corp-sso'],
        ['GitHub', '/login/upstream/github'],
      ]);
      assert.equal((await runTessera(['provider', 'update', 'corp-sso', '--position', '9'], env)).code, 0);
      const after = await new FormBrowser(server.url).request('/login');
      assert.deepEqual(
        [...after.html.matchAll(/>Continue with ([^<]+)</g)].map((match) => match[1]),
        ['GitHub', 'Corp SSO'],
      );
    } finally {
      await runTessera(['provider', 'remove', 'corp-sso'], env);
    }
  });

  it('refuses when GitHub refuses the code exchange (a client secret changed there)', async () => {
    const changed = await runTessera(['provider', 'update', 'github', '--client-secret-stdin'], env, 'an old secret\n');
    assert.equal(changed.code, 0, changed.stderr);
    try {
      const refused = await signInWithGithub(new FormBrowser(server.url));
      assert.ok(refused.status === 401 || refused.status === 502, String(refused.status));
      assert.match(refused.html, /You are not signed in/);
      assert.doesNotMatch(refused.html, /incorrect_client_credentials|at .*\.ts/);
    } finally {
      await runTessera(['provider', 'update', 'github', '--client-secret-stdin'], env, 'github client secret\n');
    }
  });
});
