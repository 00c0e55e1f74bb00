import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkProfile } from './profile.ts';

describe('checkProfile (OIDC Core §5.1)', () => {
  it('keeps valid claims, trimmed, and clears one given as empty', () => {
    assert.deepEqual(checkProfile({ givenName: ' Ada ', familyName: 'Lovelace', locale: 'en-GB', zoneinfo: 'Europe/London', picture: 'https://example.com/a.png', email: '', emailVerified: true }), {
      ok: true,
      changes: { givenName: 'Ada', familyName: 'Lovelace', locale: 'en-GB', zoneinfo: 'Europe/London', picture: 'https://example.com/a.png', email: null, emailVerified: true },
    });
    assert.deepEqual(checkProfile({}), { ok: true, changes: {} });
  });

  it('refuses a claim that is not what §5.1 says it is, naming it', () => {
    for (const [changes, claim] of [
      [{ locale: 'English (UK)' }, 'locale'],
      [{ zoneinfo: 'Mars/Olympus' }, 'zoneinfo'],
      [{ zoneinfo: 'CET+1' }, 'zoneinfo'],
      [{ picture: 'javascript:alert(1)' }, 'picture'],
      [{ picture: 'https://user:pass@example.com/a.png' }, 'picture'],
      [{ email: 'not an address' }, 'email'],
      [{ givenName: 'x'.repeat(201) }, 'given_name'],
    ] as const) {
      const result = checkProfile(changes);
      assert.equal(result.ok, false, JSON.stringify(changes));
      assert.equal(result.ok ? null : result.claim, claim);
    }
  });
});
