import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { IdentityProviderRecord } from '../../store/identity-providers.ts';
import type { SecretBox } from '../../tokens/secret-box.ts';
import { flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { closeServer, listenOnFreePort } from '../../../test/helpers/server.ts';
import { beginOidc, emailVerifiedOf, UpstreamFailure } from './oidc.ts';
import { providerSettings, type OidcSettings } from './settings.ts';

const noSecrets: SecretBox = {
  seal: () => {
    throw new Error('not used');
  },
  open: () => {
    throw new Error('not used');
  },
} as unknown as SecretBox;

describe('an upstream OpenID provider that cannot be reached', () => {
  let world: FlowWorld;
  before(async () => {
    world = await flowWorld();
  });
  after(() => world.close());

  it('names the URL it could not reach and why (connection refused), not just "fetch failed"', async () => {
    // A loopback port nobody listens on: taken, then let go.
    const { server, port } = await listenOnFreePort();
    await closeServer(server);
    const provider: IdentityProviderRecord = {
      id: 'down',
      kind: 'oidc',
      name: 'Down',
      position: 0,
      secret: null,
      createdAt: 0,
      updatedAt: 0,
      settings: { issuer: `http://127.0.0.1:${port}`, clientId: 'tessera', scopes: ['openid'] },
    };
    const failure = await beginOidc({ ...world.deps, secrets: noSecrets }, provider, providerSettings(provider) as OidcSettings).then(
      () => assert.fail('began a sign-in through a provider nobody runs'),
      (error: unknown) => error,
    );
    assert.ok(failure instanceof UpstreamFailure, String(failure));
    assert.equal(failure.reason, 'unavailable');
    assert.equal(
      failure.detail,
      `cannot reach http://127.0.0.1:${port}/.well-known/openid-configuration: connection refused: nothing listens there (ECONNREFUSED)`,
    );
  });
});

describe("an upstream provider's email_verified (OIDC Core §5.1)", () => {
  it('counts for the email claim alone: an address read from another claim is verified only when it is that same address', () => {
    const claims = { email: 'ada@example.com', email_verified: true, mail: 'ceo@victim.example', upn: 'ADA@example.com' };
    assert.equal(emailVerifiedOf(claims, 'ada@example.com'), true);
    assert.equal(emailVerifiedOf({ ...claims, email_verified: 'true' }, 'ada@example.com'), true, 'the string some providers send');
    assert.equal(emailVerifiedOf(claims, 'ceo@victim.example'), false, '--claim-mapping email=mail: a claim the person may edit');
    assert.equal(emailVerifiedOf(claims, 'ADA@example.com'), true, 'the same address in another case');
    assert.equal(emailVerifiedOf({ ...claims, email_verified: false }, 'ada@example.com'), false);
    assert.equal(emailVerifiedOf({ mail: 'ada@example.com', email_verified: true }, 'ada@example.com'), false, 'no email claim: nothing verified');
    assert.equal(emailVerifiedOf(claims, null), false);
  });
});
