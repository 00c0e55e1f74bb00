/**
 * The next step of an authorization request (interaction.ts `nextStep`) without HTTP; through
 * the endpoint: test/par.test.ts, test/request-objects.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GrantRecord, SessionRecord } from '../../store/types.ts';
import { approvedGrant, clientRecord } from '../../../test/store/fixtures.ts';
import { nextStep } from './interaction.ts';
import type { AuthorizationRequest } from './request.ts';

const CALLBACK = 'https://app.example/callback';
const askedAt = Date.UTC(2026, 0, 1);

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

function signedInAt(authTime: number): { readonly session: SessionRecord } {
  return { session: { idHash: 'h', sid: 's', userId: 'ada', authTime, createdAt: authTime, expiresAt: authTime + 86_400_000, ip: null, userAgent: null } };
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
    const within = nextStep(request({ maxAge: 60 }), signedInAt(authTime), remembered, null, authTime + 30_000, askedAt);
    assert.equal(within.kind, 'approve', 'within max_age');
    const outlived = nextStep(request({ maxAge: 60 }), signedInAt(authTime), remembered, null, authTime + 120_000, askedAt);
    assert.equal(outlived.kind, 'sign-in', '"If the elapsed time is greater than this value, the OP MUST attempt to actively re-authenticate"');
  });

  it('is answered by a sign-in made after the request asked, however old, for max_age=0, prompt=login and select_account', () => {
    for (const asking of [{ maxAge: 0 }, { prompt: ['login'] }, { prompt: ['select_account'] }] as const) {
      const what = JSON.stringify(asking);
      assert.equal(
        nextStep(request(asking), signedInAt(askedAt - 1), remembered, null, askedAt + 120_000, askedAt).kind,
        'sign-in',
        `${what}: a sign-in before it asked`,
      );
      assert.equal(
        nextStep(request(asking), signedInAt(askedAt), remembered, null, askedAt + 120_000, askedAt).kind,
        'approve',
        `${what}: at the time it asked`,
      );
      assert.equal(nextStep(request(asking), signedInAt(askedAt + 1000), remembered, null, askedAt + 120_000, null).kind, 'sign-in', `${what}: never asked`);
    }
  });
});
