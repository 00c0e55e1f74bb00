import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { matchingTags } from '../tokens/claims.ts';
import { checkProfile, mergeLocalizedNames } from './profile.ts';

describe('checkProfile (OIDC Core §5.1)', () => {
  it('keeps valid claims, trimmed, and clears one given as empty', () => {
    assert.deepEqual(
      checkProfile({
        givenName: ' Ada ',
        familyName: 'Lovelace',
        locale: 'en-GB',
        zoneinfo: 'Europe/London',
        picture: 'https://example.com/a.png',
        email: '',
        emailVerified: true,
      }),
      {
        ok: true,
        changes: {
          givenName: 'Ada',
          familyName: 'Lovelace',
          locale: 'en-GB',
          zoneinfo: 'Europe/London',
          picture: 'https://example.com/a.png',
          email: null,
          emailVerified: true,
        },
      },
    );
    assert.deepEqual(checkProfile({}), { ok: true, changes: {} });
  });

  it('keeps the rest of §5.1 as it says each is: birthdates, E.164 numbers with an extension, http(s) pages, a structured address', () => {
    assert.deepEqual(
      checkProfile({
        birthdate: '0000-02-29',
        phoneNumber: '+1 (604) 555-1234;ext=5678',
        phoneNumberVerified: true,
        website: 'http://ada.example',
        gender: 'nonbinary',
        address: { formatted: ' 12 St James’s Square \r\n\n London ', locality: ' London ', region: '' },
      }),
      {
        ok: true,
        changes: {
          birthdate: '0000-02-29',
          phoneNumber: '+1 (604) 555-1234;ext=5678',
          phoneNumberVerified: true,
          website: 'http://ada.example',
          gender: 'nonbinary',
          address: { formatted: '12 St James’s Square\nLondon', locality: 'London' },
        },
      },
    );
    assert.deepEqual(checkProfile({ birthdate: '1815' }), { ok: true, changes: { birthdate: '1815' } });
    assert.deepEqual(checkProfile({ address: { region: ' ' } }), { ok: true, changes: { address: null } }, 'an address with nothing in it is none');
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
      [{ website: 'ftp://ada.example' }, 'website'],
      [{ profile: 'example.com/ada' }, 'profile'],
      [{ birthdate: '10/12/1815' }, 'birthdate'],
      [{ birthdate: '1815-02-30' }, 'birthdate'],
      [{ birthdate: '1815-13-01' }, 'birthdate'],
      [{ phoneNumber: '020 7946 0958' }, 'phone_number'],
      [{ phoneNumber: '+44 (20) call me' }, 'phone_number'],
      [{ phoneNumber: '+1 234' }, 'phone_number'],
      [{ nickname: 'Ada\u202E' }, 'nickname'],
      [{ address: { locality: 'London\nEngland' } }, 'address.locality'],
      [{ address: { planet: 'Earth' } as never }, 'address'],
      [{ address: { postal_code: 'x'.repeat(21) } }, 'address.postal_code'],
    ] as const) {
      const result = checkProfile(changes);
      assert.equal(result.ok, false, JSON.stringify(changes));
      assert.equal(result.ok ? null : result.claim, claim);
    }
  });
});

describe('mergeLocalizedNames (OIDC Core §5.2)', () => {
  const kept = { 'ja-Kana-JP': { name: 'ヤマダ タロウ', family_name: 'ヤマダ' } };

  it('lays names over those kept, one tag per language in canonical case, removing those given null or ""', () => {
    assert.deepEqual(mergeLocalizedNames(kept, { 'JA-kana-jp': { family_name: '' }, 'zh-hans': { name: ' 山田太郎 ' } }), {
      ok: true,
      names: { 'ja-Kana-JP': { name: 'ヤマダ タロウ' }, 'zh-Hans': { name: '山田太郎' } },
    });
    assert.deepEqual(mergeLocalizedNames(kept, { 'ja-Kana-JP': null }), { ok: true, names: {} });
    assert.deepEqual(mergeLocalizedNames(kept, { 'ja-Kana-JP': { name: null, family_name: null } }), { ok: true, names: {} });
  });

  it('refuses a malformed tag, a claim it cannot keep per language, and a name too long', () => {
    for (const given of [{ ja_JP: { name: 'x' } }, { '': { name: 'x' } }, { ja: { nickname: 'x' } }, { ja: { name: 'x'.repeat(201) } }]) {
      assert.equal(mergeLocalizedNames(kept, given as never).ok, false, JSON.stringify(given).slice(0, 60));
    }
  });
});

describe('matchingTags', () => {
  it('matches a requested language by BCP 47 prefix either way, case aside', () => {
    const tags = ['ja-Kana-JP', 'ja-Hani-JP', 'zh-Hans', 'de'];
    assert.deepEqual(matchingTags(tags, ['ja']), ['ja-Kana-JP', 'ja-Hani-JP']);
    assert.deepEqual(matchingTags(tags, ['JA-KANA-JP']), ['ja-Kana-JP']);
    assert.deepEqual(matchingTags(tags, ['de-AT', 'zh']), ['zh-Hans', 'de']);
    assert.deepEqual(matchingTags(tags, ['jav', 'fr']), []);
    assert.deepEqual(matchingTags(tags, []), []);
  });
});
