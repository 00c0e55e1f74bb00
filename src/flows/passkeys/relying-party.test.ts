/**
 * The WebAuthn relying party Tessera is (flows/passkeys/relying-party.ts, WebAuthn Level 3):
 * the RP ID and origin derived from the issuer (a port, https, a loopback issuer), no
 * passkeys where the host is an IP address, the challenges a ceremony stores (single use,
 * bound to the browser that asked and to its purpose, for TESSERA_WEBAUTHN_TIMEOUT) and the
 * response shape it accepts. passkeys.test.ts runs whole ceremonies with a software
 * authenticator; test/passkeys.test.ts and test/passkeys-browser.test.ts through the pages.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../config/index.ts';
import { hashSecret, randomToken } from '../../core/crypto.ts';
import { flowWorld, type FlowWorld } from '../../../test/helpers/flows.ts';
import { consumeChallenge, parseResponse, passkeysAvailable, relyingParty, storeChallenge } from './relying-party.ts';

/** A clientDataJSON (§5.8.1) as a browser encodes it, carrying `challenge`. */
const clientData = (challenge: unknown) =>
  Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge, origin: 'https://auth.example.com' })).toString('base64url');

describe('the relying party (WebAuthn Level 3 §5.1.3)', () => {
  it("takes the issuer's host as the RP ID and its origin as the one origin, with the port in the origin alone", () => {
    const cases: [string, string, string][] = [
      ['https://auth.example.com', 'auth.example.com', 'https://auth.example.com'],
      ['https://auth.example.com:8443', 'auth.example.com', 'https://auth.example.com:8443'],
      ['https://AUTH.Example.com:443/', 'auth.example.com', 'https://auth.example.com'],
      ['http://localhost:8080', 'localhost', 'http://localhost:8080'],
      ['http://localhost:3000', 'localhost', 'http://localhost:3000'],
    ];
    for (const [issuer, id, origin] of cases) {
      const rp = relyingParty(loadConfig({ TESSERA_ISSUER: issuer }));
      assert.deepEqual([rp.id, rp.origin], [id, origin], issuer);
    }
  });

  it('is named as the site is (TESSERA_SITE_NAME), the name an authenticator shows beside the passkey', () => {
    assert.equal(relyingParty(loadConfig({ TESSERA_ISSUER: 'https://auth.example.com', TESSERA_SITE_NAME: 'Example Login' })).name, 'Example Login');
    assert.equal(relyingParty(loadConfig({ TESSERA_ISSUER: 'https://auth.example.com' })).name, 'Tessera');
  });

  it('offers passkeys on a domain name, localhost included', () => {
    for (const issuer of ['https://auth.example.com', 'https://auth.example.com:8443', 'http://localhost:8080', 'https://127.0.0.1.example.com']) {
      assert.equal(passkeysAvailable(issuer), true, issuer);
    }
  });

  it('offers none on an IP address, which cannot be an RP ID ("a valid domain string"), however it is written', () => {
    for (const issuer of ['http://127.0.0.1:8080', 'http://127.1:8080', 'http://[::1]:8080', 'https://10.0.0.5', 'https://[2001:db8::1]:8443']) {
      assert.equal(passkeysAvailable(issuer), false, issuer);
    }
  });
});

describe('ceremony challenges (§13.4.3)', () => {
  let world: FlowWorld;
  let ada: string;
  const BROWSER = 'csrf-hash-of-the-browser';

  before(async () => {
    world = await flowWorld();
    ada = (await world.addUser({ username: 'ada' })).id;
  });
  after(() => world.close());

  it('stores a challenge by a hash bound to the browser, not the challenge, and gives it back once, with whose and what for', async () => {
    const challenge = randomToken(32);
    await storeChallenge(world.deps, challenge, 'register', ada, BROWSER);
    const now = world.clock.now();
    // Neither the challenge nor its hash alone finds it: only with the browser that asked.
    assert.equal(await world.store.webauthnChallenges.consume(challenge, 'register', now), null);
    assert.equal(await world.store.webauthnChallenges.consume(hashSecret(challenge), 'register', now), null);
    const answered = await consumeChallenge(world.deps, clientData(challenge), 'register', BROWSER);
    assert.equal(answered?.challenge, challenge);
    assert.deepEqual(
      [answered?.record.purpose, answered?.record.userId, answered?.record.createdAt, answered?.record.expiresAt],
      ['register', ada, now, now + world.config.secondFactor.ceremonyTimeout * 1000],
    );
    assert.equal(await consumeChallenge(world.deps, clientData(challenge), 'register', BROWSER), null, 'answered twice');
  });

  it('knows no challenge answered from another browser or for another ceremony', async () => {
    const elsewhere = randomToken(32);
    await storeChallenge(world.deps, elsewhere, 'authenticate', null, BROWSER);
    assert.equal(await consumeChallenge(world.deps, clientData(elsewhere), 'authenticate', 'another-browser'), null);
    const registering = randomToken(32);
    await storeChallenge(world.deps, registering, 'register', ada, BROWSER);
    assert.equal(await consumeChallenge(world.deps, clientData(registering), 'authenticate', BROWSER), null, 'a registration answered as a sign-in');
    // Neither refusal spent the challenge of the browser and ceremony that asked.
    assert.ok(await consumeChallenge(world.deps, clientData(elsewhere), 'authenticate', BROWSER));
    assert.ok(await consumeChallenge(world.deps, clientData(registering), 'register', BROWSER));
  });

  it('can be answered until TESSERA_WEBAUTHN_TIMEOUT after it was given, and not at that moment', async () => {
    const short = await flowWorld({ TESSERA_WEBAUTHN_TIMEOUT: '60' });
    try {
      const [inTime, late] = [randomToken(32), randomToken(32)];
      await storeChallenge(short.deps, inTime, 'authenticate', null, BROWSER);
      await storeChallenge(short.deps, late, 'authenticate', null, BROWSER);
      short.clock.advance(60_000 - 1);
      assert.ok(await consumeChallenge(short.deps, clientData(inTime), 'authenticate', BROWSER), 'a moment before');
      short.clock.advance(1);
      assert.equal(await consumeChallenge(short.deps, clientData(late), 'authenticate', BROWSER), null, 'at the end');
    } finally {
      await short.close();
    }
  });

  it('reads the challenge from clientDataJSON (§5.8.1) and refuses one that carries none it can look up', async () => {
    // Stored as they are, so that only the reading of clientDataJSON refuses them.
    const long = 'c'.repeat(513);
    for (const stored of [long, '42', '']) await storeChallenge(world.deps, stored, 'authenticate', null, BROWSER);
    const cases: [string, string][] = [
      ['not base64url JSON', 'not json at all'],
      ['JSON with no challenge', Buffer.from('{"type":"webauthn.get"}').toString('base64url')],
      ['a challenge that is a number, even one given as text', clientData(42)],
      ['an empty challenge, even one given', clientData('')],
      ['a challenge over 512 characters, even one stored', clientData(long)],
      ['a challenge never given', clientData(randomToken(32))],
    ];
    for (const [what, json] of cases) assert.equal(await consumeChallenge(world.deps, json, 'authenticate', BROWSER), null, what);
    const longest = 'c'.repeat(512);
    await storeChallenge(world.deps, longest, 'authenticate', null, BROWSER);
    assert.equal((await consumeChallenge(world.deps, clientData(longest), 'authenticate', BROWSER))?.challenge, longest, '512 characters');
  });
});

describe('the response the browser posts', () => {
  const credentialId = 'AbC-_09';
  const response = { clientDataJSON: clientData('x'), authenticatorData: 'AAAA', signature: 'AAAA' };

  it('reads a credential id (base64url) and its clientDataJSON, keeping the whole for the verification', () => {
    const posted = { id: credentialId, rawId: credentialId, type: 'public-key', response };
    assert.deepEqual(parseResponse(JSON.stringify(posted)), { id: credentialId, clientDataJSON: response.clientDataJSON, value: posted });
    assert.equal(parseResponse(JSON.stringify({ id: 'A'.repeat(1366), response }))?.id.length, 1366);
  });

  it('refuses what is not a response of that shape', () => {
    const cases: [string, string][] = [
      ['not JSON', '{'],
      ['an array', JSON.stringify([{ id: credentialId, response }])],
      ['null', 'null'],
      ['a string', JSON.stringify('response')],
      ['no id', JSON.stringify({ response })],
      ['an id that is a number', JSON.stringify({ id: 7, response })],
      ['an empty id', JSON.stringify({ id: '', response })],
      ['an id in base64, not base64url', JSON.stringify({ id: 'ab+/cd==', response })],
      ['an id over 1366 characters', JSON.stringify({ id: 'A'.repeat(1367), response })],
      ['no response', JSON.stringify({ id: credentialId })],
      ['a response that is null', JSON.stringify({ id: credentialId, response: null })],
      ['no clientDataJSON', JSON.stringify({ id: credentialId, response: { signature: 'AAAA' } })],
      ['a clientDataJSON that is not a string', JSON.stringify({ id: credentialId, response: { clientDataJSON: { challenge: 'x' } } })],
    ];
    for (const [what, raw] of cases) assert.equal(parseResponse(raw), null, what);
  });
});
