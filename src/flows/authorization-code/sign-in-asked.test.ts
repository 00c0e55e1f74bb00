/**
 * When a request asked for a sign-in (flows/authorization-code/sign-in-asked.ts) without HTTP;
 * through the endpoint (a pushed prompt=login or max_age=0, a request object's): test/par.test.ts,
 * test/request-objects.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { SIGN_IN_ASKED_FIELD, signInAsked, signInAskedAt } from './sign-in-asked.ts';

const secret = new Uint8Array(32).fill(7);
const fields = { client_id: 'app', request_uri: 'urn:ietf:params:oauth:request_uri:abc' };
const at = Date.UTC(2026, 0, 1);

describe('when a request asked for a sign-in', () => {
  it('is read back for the browser and the request it was made for, and in place of an earlier one', () => {
    const returned = signInAsked(secret, 'browser-a', fields, at);
    assert.equal(signInAskedAt(secret, 'browser-a', returned), at);
    assert.equal(signInAskedAt(secret, 'browser-a', signInAsked(secret, 'browser-a', returned, at + 1000)), at + 1000);
  });

  it('is nothing in another browser, for another request, moved back, or never asked', () => {
    const returned = signInAsked(secret, 'browser-a', fields, at);
    const stamp = String(returned[SIGN_IN_ASKED_FIELD]);
    assert.equal(signInAskedAt(secret, 'browser-b', returned), null);
    assert.equal(signInAskedAt(secret, 'browser-a', { ...returned, request_uri: 'urn:ietf:params:oauth:request_uri:other' }), null);
    assert.equal(signInAskedAt(secret, 'browser-a', { ...returned, [SIGN_IN_ASKED_FIELD]: stamp.replace(/^\d+/, String(at - 60_000)) }), null);
    assert.equal(signInAskedAt(secret, 'browser-a', fields), null);
  });
});
