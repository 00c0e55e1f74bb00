/**
 * When a request asked for a sign-in (flows/authorization-code/sign-in-asked.ts) without HTTP;
 * through the endpoint (a pushed prompt=login or max_age=0, a request object's): test/par.test.ts,
 * test/request-objects.test.ts; the person id_token_hint names: test/authorization-requests.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readSignInAsked, SIGN_IN_ASKED_FIELD, SIGN_IN_HINTED_FIELD, signInAsked } from './sign-in-asked.ts';

const secret = new Uint8Array(32).fill(7);
const fields = { client_id: 'app', request_uri: 'urn:ietf:params:oauth:request_uri:abc' };
const at = Date.UTC(2026, 0, 1);

describe('when a request asked for a sign-in', () => {
  it('is read back for the browser and the request it was made for, and in place of an earlier one', () => {
    const returned = signInAsked(secret, 'browser-a', fields, at);
    assert.deepEqual(readSignInAsked(secret, 'browser-a', returned), { at, hintedSub: null });
    assert.deepEqual(readSignInAsked(secret, 'browser-a', signInAsked(secret, 'browser-a', returned, at + 1000)), { at: at + 1000, hintedSub: null });
  });

  it('is nothing in another browser, for another request, moved back, or never asked', () => {
    const returned = signInAsked(secret, 'browser-a', fields, at);
    const stamp = String(returned[SIGN_IN_ASKED_FIELD]);
    assert.equal(readSignInAsked(secret, 'browser-b', returned), null);
    assert.equal(readSignInAsked(secret, 'browser-a', { ...returned, request_uri: 'urn:ietf:params:oauth:request_uri:other' }), null);
    assert.equal(readSignInAsked(secret, 'browser-a', { ...returned, [SIGN_IN_ASKED_FIELD]: stamp.replace(/^\d+/, String(at - 60_000)) }), null);
    assert.equal(readSignInAsked(secret, 'browser-a', fields), null);
  });

  describe('the person id_token_hint names (OIDC Core §3.1.2.1), carried under the same MAC', () => {
    it('is read back beside the time, and goes on to the next stamp', () => {
      const returned = signInAsked(secret, 'browser-a', fields, at, 'ada');
      assert.equal(returned[SIGN_IN_HINTED_FIELD], 'ada');
      assert.deepEqual(readSignInAsked(secret, 'browser-a', returned), { at, hintedSub: 'ada' });
      assert.deepEqual(readSignInAsked(secret, 'browser-a', signInAsked(secret, 'browser-a', returned, at + 1000, 'ada')), { at: at + 1000, hintedSub: 'ada' });
    });

    it("is never the request's own: a field of that name the client sent is dropped before the MAC is made", () => {
      const sent = { ...fields, [SIGN_IN_HINTED_FIELD]: 'eve' };
      const unhinted = signInAsked(secret, 'browser-a', sent, at);
      assert.equal(SIGN_IN_HINTED_FIELD in unhinted, false, 'not carried on, so not under the MAC');
      assert.deepEqual(readSignInAsked(secret, 'browser-a', unhinted), { at, hintedSub: null });
      // Put back after the stamp, it breaks the MAC: the whole stamp is nothing.
      assert.equal(readSignInAsked(secret, 'browser-a', { ...unhinted, [SIGN_IN_HINTED_FIELD]: 'eve' }), null);
      const hinted = signInAsked(secret, 'browser-a', sent, at, 'ada');
      assert.deepEqual(readSignInAsked(secret, 'browser-a', hinted), { at, hintedSub: 'ada' }, 'the hint checked by the request, not the one sent');
    });

    it('is nothing, and the time with it, once changed, added or taken away after the stamp, or without a stamp', () => {
      const returned = signInAsked(secret, 'browser-a', fields, at, 'ada');
      const { [SIGN_IN_HINTED_FIELD]: _ada, ...taken } = returned;
      assert.equal(readSignInAsked(secret, 'browser-a', { ...returned, [SIGN_IN_HINTED_FIELD]: 'bob' }), null, 'changed');
      assert.equal(readSignInAsked(secret, 'browser-a', taken), null, 'taken away');
      assert.equal(readSignInAsked(secret, 'browser-a', { ...signInAsked(secret, 'browser-a', fields, at), [SIGN_IN_HINTED_FIELD]: 'bob' }), null, 'added');
      assert.equal(readSignInAsked(secret, 'browser-b', returned), null, 'in another browser');
      const { [SIGN_IN_ASKED_FIELD]: _stamp, ...unstamped } = returned;
      assert.equal(readSignInAsked(secret, 'browser-a', unstamped), null, 'without a stamp');
    });
  });
});
