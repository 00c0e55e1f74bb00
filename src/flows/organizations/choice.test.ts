import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Membership, OrganizationRecord } from '../../store/types.ts';
import { organizationChoice, organizationPolicy, organizationsToChoose } from './choice.ts';

const organization = (id: string, policy: Partial<OrganizationRecord> = {}): OrganizationRecord => ({
  id,
  name: `Org ${id}`,
  domain: null,
  domainVerified: false,
  providerId: null,
  requirePasskey: false,
  requireSecondFactor: false,
  createdAt: 0,
  updatedAt: 0,
  ...policy,
});
const member = (id: string, policy: Partial<OrganizationRecord> = {}): Membership => ({ organization: organization(id, policy), role: 'member' });
const SCOPE = ['openid', 'organization'];

describe('the organization of an approval', () => {
  it('is none without the organization scope, or without a membership', () => {
    assert.deepEqual(organizationChoice([member('a')], ['openid'], 'a', undefined), { kind: 'none' });
    assert.deepEqual(organizationChoice([], SCOPE, null, undefined), { kind: 'none' });
  });

  it('is the only membership, with nothing to choose', () => {
    assert.deepEqual(organizationChoice([member('a')], SCOPE, null, undefined), { kind: 'chosen', organizationId: 'a' });
  });

  it('asks a member of several to choose, and takes a choice only among their own', () => {
    const both = [member('a'), member('b')];
    const choose = {
      kind: 'choose',
      organizations: [
        { id: 'a', name: 'Org a' },
        { id: 'b', name: 'Org b' },
      ],
    };
    assert.deepEqual(organizationChoice(both, SCOPE, null, undefined), choose);
    assert.deepEqual(organizationChoice(both, SCOPE, 'b', undefined), { kind: 'chosen', organizationId: 'b' });
    assert.deepEqual(organizationChoice(both, SCOPE, 'elsewhere', undefined), choose, 'an organization they are not in is no choice');
    assert.deepEqual(organizationChoice([member('a')], SCOPE, 'elsewhere', undefined), { kind: 'choose', organizations: [{ id: 'a', name: 'Org a' }] });
  });

  it('keeps the remembered choice while they are still a member', () => {
    assert.deepEqual(organizationChoice([member('a'), member('b')], SCOPE, null, 'b'), { kind: 'chosen', organizationId: 'b' });
    assert.equal(organizationChoice([member('a'), member('c')], SCOPE, null, 'b').kind, 'choose', 'no longer in b: asked again');
  });

  it('offers a choice on the approval page only to a member of several, when the scope asks', () => {
    assert.deepEqual(organizationsToChoose([member('a'), member('b')], SCOPE), [
      { id: 'a', name: 'Org a' },
      { id: 'b', name: 'Org b' },
    ]);
    assert.deepEqual(organizationsToChoose([member('a')], SCOPE), [], 'one membership is that one');
    assert.deepEqual(organizationsToChoose([member('a'), member('b')], ['openid']), []);
  });

  it("holds a person to the strictest of their organizations' policies", () => {
    assert.deepEqual(organizationPolicy([member('a'), member('b', { requireSecondFactor: true })]), { requirePasskey: false, requireSecondFactor: true });
    assert.deepEqual(organizationPolicy([member('a', { requirePasskey: true })]), { requirePasskey: true, requireSecondFactor: false });
    assert.deepEqual(organizationPolicy([]), { requirePasskey: false, requireSecondFactor: false });
  });
});
