/**
 * The approval page's MAC (flows/authorization-code/approval-form.ts) without HTTP; the same rule
 * through the endpoint (a changed field refused): test/authorization-requests.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { APPROVAL_MAC_FIELD, approvalFormMac, approvalFormMatches } from './approval-form.ts';

const secret = new Uint8Array(32).fill(7);
const fields = { client_id: 'app', scope: 'openid', state: 'xyz' };

describe('the approval form MAC', () => {
  it('is bound to the browser session it was shown to: the same fields posted from another session are refused', () => {
    const mac = approvalFormMac(secret, 'session-a', fields);
    assert.equal(approvalFormMatches(secret, 'session-a', { ...fields, [APPROVAL_MAC_FIELD]: mac }, mac), true);
    assert.equal(approvalFormMatches(secret, 'session-b', { ...fields, [APPROVAL_MAC_FIELD]: mac }, mac), false);
  });
});
