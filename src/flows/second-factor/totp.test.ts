import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { base32Decode, base32Encode, hotp, matchTotp, otpauthUri, timeStep, totpAt } from './totp.ts';

// RFC 6238 Appendix B: the SHA-1 seed is the ASCII "12345678901234567890"; the table's
// 8-digit values end in these 6 digits.
const SEED = base32Encode(Buffer.from('12345678901234567890', 'ascii'));

describe('TOTP (RFC 6238)', () => {
  it('computes the RFC 6238 Appendix B SHA-1 test vectors', () => {
    const vectors: [number, string][] = [
      [59, '94287082'],
      [1111111109, '07081804'],
      [1111111111, '14050471'],
      [1234567890, '89005924'],
      [2000000000, '69279037'],
      [20000000000, '65353130'],
    ];
    for (const [seconds, expected] of vectors) assert.equal(totpAt(SEED, seconds * 1000), expected.slice(2), `T = ${seconds}`);
  });

  it('computes the RFC 4226 Appendix D HOTP values', () => {
    const expected = ['755224', '287082', '359152', '969429', '338314', '254676', '287922', '162583', '399871', '520489'];
    for (const [counter, code] of expected.entries()) assert.equal(hotp(SEED, counter), code);
  });

  it('accepts the codes of one step either side and no further, and nothing that is not six digits', () => {
    const now = 1_700_000_000_000;
    const step = timeStep(now);
    assert.equal(matchTotp(SEED, hotp(SEED, step), now), step);
    assert.equal(matchTotp(SEED, hotp(SEED, step - 1), now), step - 1);
    assert.equal(matchTotp(SEED, hotp(SEED, step + 1), now), step + 1);
    assert.equal(matchTotp(SEED, hotp(SEED, step - 2), now), null);
    assert.equal(matchTotp(SEED, hotp(SEED, step + 2), now), null);
    assert.equal(matchTotp(SEED, '12345', now), null);
    assert.equal(matchTotp(SEED, 'abcdef', now), null);
    assert.equal(matchTotp(SEED, `${hotp(SEED, step).slice(0, 3)} ${hotp(SEED, step).slice(3)}`, now), step, 'a space as apps show it');
  });

  it('round-trips base32 (RFC 4648 §10)', () => {
    assert.equal(base32Encode(Buffer.from('foobar')), 'MZXW6YTBOI');
    assert.equal(base32Decode('MZXW6YTBOI').toString(), 'foobar');
    assert.equal(base32Decode('mzxw 6ytb oi').toString(), 'foobar');
  });

  it('names the site in the otpauth URI, as the app will list it, with no colon before the account', () => {
    const uri = new URL(otpauthUri('Acme: Accounts', 'login.example.com', 'ada@example.com', SEED));
    assert.equal(`${uri.protocol}//${uri.host}`, 'otpauth://totp');
    assert.equal(decodeURIComponent(uri.pathname), '/Acme Accounts (login.example.com):ada@example.com');
    assert.equal(uri.searchParams.get('issuer'), 'Acme Accounts (login.example.com)');
    assert.equal(uri.searchParams.get('secret'), SEED);
  });
});
