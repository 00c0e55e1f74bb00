import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashSecret } from '../../core/crypto.ts';
import { deviceCodeKey, newDeviceCode } from './device-code.ts';
import { networkOf } from '../../core/networks.ts';
import { sameNetwork } from './proximity.ts';
import { formatUserCode, generateUserCode, normalizeUserCode, USER_CODE_ALPHABET } from './user-code.ts';

describe('user codes (RFC 8628 §6.1)', () => {
  it('generates 8 characters from the 20 consonants only', () => {
    for (let i = 0; i < 500; i++) assert.match(generateUserCode(), /^[BCDFGHJKLMNPQRSTVWXZ]{8}$/);
    assert.equal(USER_CODE_ALPHABET.length, 20);
    assert.doesNotMatch(USER_CODE_ALPHABET, /[AEIOUY01]/);
  });

  it('shows a code as XXXX-XXXX', () => {
    assert.equal(formatUserCode('WDJBMJHT'), 'WDJB-MJHT');
  });

  it('accepts any case, dashes and spaces, and gives the stored form', () => {
    for (const input of ['WDJB-MJHT', 'wdjb-mjht', 'wdjbmjht', ' WDJB MJHT ', 'W-D-J-B-M-J-H-T', 'wdjb\tmjht']) {
      assert.equal(normalizeUserCode(input), 'WDJBMJHT', input);
    }
  });

  it('refuses what cannot be a code: wrong length, vowels, digits, other characters', () => {
    for (const input of ['', 'WDJB-MJH', 'WDJB-MJHTX', 'WDJB-MJH0', 'WAJB-MJHT', 'WDJB_MJHT', 'ＷDJB-MJHT', 'W'.repeat(100)]) {
      assert.equal(normalizeUserCode(input), null, input);
    }
  });
});

describe('device codes (RFC 8628 §3.2)', () => {
  const NOW = Date.UTC(2026, 10, 29, 8, 0, 0);

  it('begins each with the millisecond it was made, in nine base-36 characters, then 256 random bits', () => {
    const code = newDeviceCode(NOW);
    assert.match(code, /^[0-9a-z]{9}[A-Za-z0-9_-]{43}$/);
    assert.equal(Number.parseInt(code.slice(0, 9), 36), NOW);
    assert.notEqual(newDeviceCode(NOW).slice(9), code.slice(9));
  });

  it('keys a code by its time and its hash, so that later codes sort after earlier ones, whatever their random part', () => {
    const codes = [NOW, NOW + 1, NOW + 1000, NOW + 86_400_000].map((at) => newDeviceCode(at));
    const keys = codes.map(deviceCodeKey);
    assert.deepEqual(keys.toSorted(), keys);
    for (const [i, code] of codes.entries()) assert.equal(keys[i], `${code.slice(0, 9)}${hashSecret(code)}`);
  });

  it('keys anything else by its bare hash: a code of the earlier form is found, a forged prefix gains nothing', () => {
    for (const code of ['A'.repeat(43), `${'Z'.repeat(9)}${'a'.repeat(43)}`, `${newDeviceCode(NOW)}x`, '', 'not a code']) {
      assert.equal(deviceCodeKey(code), hashSecret(code), code);
    }
  });
});

describe('the proximity check', () => {
  it('puts IPv4 addresses in their /24, and IPv4-mapped IPv6 with them', () => {
    assert.equal(networkOf('203.0.113.77'), '203.0.113.0/24');
    assert.equal(networkOf('::ffff:203.0.113.9'), '203.0.113.0/24');
    assert.ok(sameNetwork('203.0.113.77', '::ffff:203.0.113.9'));
    assert.ok(!sameNetwork('203.0.113.77', '203.0.114.77'));
  });

  it('puts IPv6 addresses in their /64, whatever their spelling', () => {
    assert.equal(networkOf('2001:db8:a:b::1'), '2001:db8:a:b::/64');
    assert.ok(sameNetwork('2001:db8:a:b::1', '2001:0DB8:000a:000b:ffff:1:2:3'));
    assert.ok(!sameNetwork('2001:db8:a:b::1', '2001:db8:a:c::1'));
    assert.equal(networkOf('::1'), '0:0:0:0::/64');
    assert.equal(networkOf('fe80::1%eth0'), 'fe80:0:0:0::/64');
  });

  it('never calls something that is not an address the same network', () => {
    assert.equal(networkOf('unknown'), null);
    assert.ok(!sameNetwork('unknown', 'unknown'));
  });
});
