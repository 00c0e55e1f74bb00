import assert from 'node:assert/strict';
import { generateKeyPairSync, X509Certificate } from 'node:crypto';
import { describe, it } from 'node:test';
import { pemCertificate, selfSignedCertificate } from './certificate.ts';

describe('selfSignedCertificate', () => {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });

  it('makes a certificate node:crypto reads, of the key, signed by it', () => {
    const certificate = new X509Certificate(pemCertificate(selfSignedCertificate(privateKey, 'https://id.example.com', 'kid-1')));
    assert.equal(certificate.subject, 'CN=https://id.example.com');
    assert.equal(certificate.issuer, certificate.subject);
    assert.ok(certificate.publicKey.equals(publicKey), 'the certificate holds the signing key');
    assert.ok(certificate.verify(publicKey), 'it is signed by the key itself');
    assert.ok(certificate.checkIssued(certificate));
    assert.equal(new Date(certificate.validTo).getUTCFullYear(), 9999);
  });

  it('is the same for the same key and name, and differs by serial for another kid', () => {
    const a = selfSignedCertificate(privateKey, 'x', 'kid-1');
    assert.deepEqual(a, selfSignedCertificate(privateKey, 'x', 'kid-1'));
    assert.notEqual(new X509Certificate(a).serialNumber, new X509Certificate(selfSignedCertificate(privateKey, 'x', 'kid-2')).serialNumber);
  });

  it('refuses a key that is not RSA', () => {
    assert.throws(() => selfSignedCertificate(generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey, 'x', 'k'));
  });
});
