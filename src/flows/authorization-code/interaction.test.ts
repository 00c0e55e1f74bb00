/**
 * The next step of an authorization request (interaction.ts `nextStep`) without HTTP; through
 * the endpoint: test/par.test.ts, test/request-objects.test.ts, test/authorization-requests.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GrantRecord, SessionRecord } from '../../store/types.ts';
import { approvedGrant, clientRecord } from '../../../test/store/fixtures.ts';
import { nextStep } from './interaction.ts';
import type { AuthorizationRequest } from './request.ts';
import type { SignInAsked } from './sign-in-asked.ts';

const CALLBACK = 'https://app.example/callback';
const askedAt = Date.UTC(2026, 0, 1);
/** The request asked for a sign-in at `askedAt`, for the person `hintedSub` names when given (sign-in-asked.ts). */
const asked = (hintedSub: string | null = null): SignInAsked => ({ at: askedAt, hintedSub });

function request(overrides: Partial<AuthorizationRequest>): AuthorizationRequest {
  return {
    client: clientRecord({ id: 'app', redirectUris: [CALLBACK] }),
    redirectUri: CALLBACK,
    scope: ['openid'],
    resources: [],
    access: { openid: [], apis: [] },
    state: null,
    responseMode: 'query',
    nonce: null,
    codeChallenge: 'challenge',
    prompt: [],
    maxAge: null,
    dpopJkt: null,
    ...overrides,
  };
}

function signedInAt(authTime: number, userId = 'ada'): { readonly session: SessionRecord } {
  return { session: { idHash: 'h', sid: 's', userId, authTime, createdAt: authTime, expiresAt: authTime + 86_400_000, ip: null, userAgent: null } };
}

/** Ada's remembered approval of the request's scope: without a sign-in to ask for, a code follows at once. */
const remembered: GrantRecord = {
  ...approvedGrant({ id: 'grant', userId: 'ada', clientId: 'app' }, askedAt),
  remembered: true,
  renewedAt: null,
  lastUsedAt: null,
  activeUntil: null,
};

describe('the next step of an authorization request (OIDC Core §3.1.2.1 prompt and max_age)', () => {
  it('asks again for a sign-in made after the request asked once it is older than a positive max_age', () => {
    const authTime = askedAt + 1000;
    const within = nextStep(request({ maxAge: 60 }), signedInAt(authTime), remembered, null, authTime + 30_000, asked());
    assert.equal(within.kind, 'approve', 'within max_age');
    const outlived = nextStep(request({ maxAge: 60 }), signedInAt(authTime), remembered, null, authTime + 120_000, asked());
    assert.equal(outlived.kind, 'sign-in', '"If the elapsed time is greater than this value, the OP MUST attempt to actively re-authenticate"');
  });

  it('is answered by a sign-in made after the request asked, however old, for max_age=0, prompt=login and select_account', () => {
    for (const asking of [{ maxAge: 0 }, { prompt: ['login'] }, { prompt: ['select_account'] }] as const) {
      const what = JSON.stringify(asking);
      assert.equal(
        nextStep(request(asking), signedInAt(askedAt - 1), remembered, null, askedAt + 120_000, asked()).kind,
        'sign-in',
        `${what}: a sign-in before it asked`,
      );
      assert.equal(
        nextStep(request(asking), signedInAt(askedAt), remembered, null, askedAt + 120_000, asked()).kind,
        'approve',
        `${what}: at the time it asked`,
      );
      assert.equal(nextStep(request(asking), signedInAt(askedAt + 1000), remembered, null, askedAt + 120_000, null).kind, 'sign-in', `${what}: never asked`);
    }
  });

  describe('id_token_hint (OIDC Core §3.1.2.1: "If the End-User identified by the ID Token is logged in or is logged in by the request ... a positive response; otherwise, it SHOULD return an error, such as login_required")', () => {
    const now = askedAt + 60_000;
    const hinted = request({ hintedSub: 'ada' });

    it('asks a signed-out browser, or one signed in as someone else before the request asked, to sign in', () => {
      assert.equal(nextStep(hinted, null, null, null, now, null).kind, 'sign-in', 'signed out');
      assert.equal(nextStep(hinted, null, null, null, now, asked('ada')).kind, 'sign-in', 'signed out, back from the sign-in page without signing in');
      assert.equal(nextStep(hinted, signedInAt(askedAt - 1, 'bob'), null, null, now, null).kind, 'sign-in', 'Bob, not yet asked');
      assert.equal(nextStep(hinted, signedInAt(askedAt - 1, 'bob'), null, null, now, asked('ada')).kind, 'sign-in', 'Bob, signed in before it asked');
    });

    it('ends with login_required when the sign-in made since the request asked is still not the person the hint names, whether the request or the stamp carries the hint', () => {
      for (const [what, carrying, signInAsked] of [
        ['the request', hinted, asked('ada')],
        ['a request object or pushed request, the stamp naming no one', hinted, asked()],
        ['the stamp, for a request that left its hint out', request({}), asked('ada')],
      ] as const) {
        const step = nextStep(carrying, signedInAt(askedAt, 'bob'), null, null, now, signInAsked);
        assert.deepEqual(step, { kind: 'error', error: 'login_required', description: 'the user who signed in is not the one id_token_hint names' }, what);
        // The person the hint names, signed in since: their remembered approval answers.
        assert.equal(nextStep(carrying, signedInAt(askedAt, 'ada'), remembered, null, now, signInAsked).kind, 'approve', `${what}: Ada`);
      }
    });

    it('answers prompt=none as before: login_required for someone else, however recent their sign-in', () => {
      const none = request({ hintedSub: 'ada', prompt: ['none'] });
      const refused = nextStep(none, signedInAt(askedAt, 'bob'), null, null, now, null);
      assert.deepEqual(refused, { kind: 'error', error: 'login_required', description: 'the user signed in is not the one id_token_hint names' });
      assert.equal(nextStep(none, signedInAt(askedAt, 'ada'), remembered, null, now, null).kind, 'approve');
    });
  });
});
