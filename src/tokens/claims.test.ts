import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newUserRecord } from '../store/types.ts';
import { matchingTags, parseClaimsLocales, releasedClaims } from './claims.ts';

const ada = newUserRecord({
  id: 'sub-ada',
  username: 'ada',
  passwordHash: '!',
  createdAt: Date.UTC(2026, 0, 1),
  name: 'Ada Lovelace',
  givenName: 'Ada',
  familyName: 'Lovelace',
  email: 'ada@example.com',
  emailVerified: true,
  localizedNames: { ja: { name: 'エイダ・ラブレス', family_name: 'ラブレス' }, 'fr-CA': { name: 'Ada Lovelace (fr)' } },
});

describe('the claims a scope releases (OIDC Core §5.4) and their languages (§5.2)', () => {
  it('releases the names in the languages asked for only with the profile scope, as the plain names', () => {
    const cases: [string[], string[], string[]][] = [
      // [scope, claims_locales, the claims released]
      [['openid', 'profile'], ['ja'], ['family_name', 'family_name#ja', 'given_name', 'name', 'name#ja', 'preferred_username', 'updated_at']],
      [['openid', 'profile'], [], ['family_name', 'given_name', 'name', 'preferred_username', 'updated_at']],
      [['openid'], ['ja'], []],
      [
        ['openid', 'email'],
        ['ja', 'fr'],
        ['email', 'email_verified'],
      ],
      [['openid', 'groups'], ['ja'], ['groups']],
    ];
    for (const [scope, locales, expected] of cases) {
      assert.deepEqual(
        Object.keys(releasedClaims(ada, scope, undefined, [], locales)).sort(),
        expected,
        `${scope.join(' ')} with claims_locales ${locales.join(' ')}`,
      );
    }
  });

  it('keeps to the claims named for the ID token (§5.5), the tagged ones with their plain one', () => {
    assert.deepEqual(releasedClaims(ada, ['openid', 'profile'], ['name'], [], ['ja']), { name: 'Ada Lovelace', 'name#ja': 'エイダ・ラブレス' });
    assert.deepEqual(releasedClaims(ada, ['openid'], ['name'], [], ['ja']), {}, 'named, but its scope not granted');
  });

  it('matches languages by BCP 47 prefix both ways, and reads claims_locales leniently', () => {
    assert.deepEqual(matchingTags(['ja', 'fr-CA', 'de'], ['fr']), ['fr-CA']);
    assert.deepEqual(matchingTags(['ja', 'fr-CA'], ['ja-Kana-JP', 'FR-ca']), ['ja', 'fr-CA']);
    assert.deepEqual(parseClaimsLocales('ja  en-us not_a_tag ja'), ['ja', 'en-US']);
    assert.deepEqual(parseClaimsLocales(null), []);
  });
});
