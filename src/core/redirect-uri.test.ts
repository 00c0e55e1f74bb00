import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redirectUriProblem, redirectUriRegistered } from './redirect-uri.ts';

describe('redirect URI registration', () => {
  for (const uri of ['https://app.example/cb', 'http://127.0.0.1/cb', 'http://127.0.0.1:8080/cb', 'http://[::1]/cb']) {
    it(`accepts ${uri}`, () => assert.equal(redirectUriProblem(uri, { publicClient: false }), null));
  }
  for (const uri of [
    'http://app.example/cb',
    'http://localhost.example/cb',
    'http://127.0.0.1.nip.io/cb',
    'https://app.example/cb#frag',
    'javascript:alert(1)',
    'data:text/html,x',
    'relative/cb',
    'https://user:pw@app.example/cb',
    'myapp:/cb',
  ]) {
    it(`refuses ${uri}`, () => assert.notEqual(redirectUriProblem(uri, { publicClient: true }), null));
  }
  it('refuses a redirect URI ending in a bare # (an empty fragment, RFC 6749 §3.1.2)', () => {
    assert.match(redirectUriProblem('https://app.example/cb#', { publicClient: false }) ?? '', /fragment/);
    assert.match(redirectUriProblem('http://127.0.0.1:8080/cb#', { publicClient: true }) ?? '', /fragment/);
  });
  it('accepts a reverse-domain private-use scheme for a public client only (RFC 8252 §7.1)', () => {
    assert.equal(redirectUriProblem('com.example.app:/oauth2redirect', { publicClient: true }), null);
    assert.match(redirectUriProblem('com.example.app:/oauth2redirect', { publicClient: false }) ?? '', /--public/);
  });
  it('accepts http://localhost for a public client only (RFC 8252 §7.3, §8.3)', () => {
    assert.equal(redirectUriProblem('http://localhost/cb', { publicClient: true }), null);
    assert.equal(redirectUriProblem('http://localhost:8080/cb', { publicClient: true }), null);
    assert.match(redirectUriProblem('http://localhost:3000/cb', { publicClient: false }) ?? '', /public native apps/);
    assert.notEqual(redirectUriProblem('https://localhost/cb#x', { publicClient: true }), null);
  });
  it('accepts http://localhost for a confidential client where the issuer is on loopback too', () => {
    assert.equal(redirectUriProblem('http://localhost:8080/login/upstream/team-id/callback', { publicClient: false, issuerOnLoopback: true }), null);
    assert.match(redirectUriProblem('http://localhost:8080/cb', { publicClient: false, issuerOnLoopback: false }) ?? '', /issuer that is itself on loopback/);
    assert.match(redirectUriProblem('http://app.example/cb', { publicClient: false, issuerOnLoopback: true }) ?? '', /loopback address/);
  });
});

describe('redirect URI matching', () => {
  it('matches exactly, without normalisation', () => {
    assert.equal(redirectUriRegistered(['https://app.example/cb'], 'https://app.example/cb'), true);
    assert.equal(redirectUriRegistered(['https://app.example/cb'], 'https://app.example/cb/'), false);
    assert.equal(redirectUriRegistered(['https://app.example/cb'], 'https://APP.example/cb'), false);
    assert.equal(redirectUriRegistered(['https://app.example/cb'], 'https://app.example:443/cb'), false);
    assert.equal(redirectUriRegistered(['https://app.example/cb'], 'https://app.example/cb?x=1'), false);
  });

  it('lets the port of a loopback redirect URI vary, and nothing else (RFC 8252 §7.3)', () => {
    assert.equal(redirectUriRegistered(['http://127.0.0.1/cb'], 'http://127.0.0.1:51234/cb'), true);
    assert.equal(redirectUriRegistered(['http://127.0.0.1:8000/cb'], 'http://127.0.0.1:51234/cb'), true);
    assert.equal(redirectUriRegistered(['http://[::1]/cb'], 'http://[::1]:51234/cb'), true);
    assert.equal(redirectUriRegistered(['http://127.0.0.1/cb'], 'http://127.0.0.1:51234/other'), false);
    assert.equal(redirectUriRegistered(['http://127.0.0.1/cb'], 'http://localhost:51234/cb'), false);
    assert.equal(redirectUriRegistered(['http://127.0.0.1/cb'], 'https://127.0.0.1:51234/cb'), false);
    assert.equal(redirectUriRegistered(['https://app.example/cb'], 'https://app.example:8443/cb'), false);
  });

  it('lets the port of a registered localhost redirect URI vary too, and only on localhost', () => {
    assert.equal(redirectUriRegistered(['http://localhost/cb'], 'http://localhost:51234/cb'), true);
    assert.equal(redirectUriRegistered(['http://localhost:8000/cb'], 'http://localhost:51234/cb'), true);
    assert.equal(redirectUriRegistered(['http://localhost/cb'], 'http://127.0.0.1:51234/cb'), false);
    assert.equal(redirectUriRegistered(['http://localhost/cb'], 'http://localhost.example:51234/cb'), false);
    assert.equal(redirectUriRegistered(['http://localhost/cb'], 'http://localhost:51234/other'), false);
    assert.equal(redirectUriRegistered(['http://localhost/cb'], 'https://localhost:51234/cb'), false);
  });
});
