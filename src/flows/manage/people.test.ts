/**
 * An operator's dealings with people, without HTTP: inviting someone (`inviteUser`, behind
 * `tessera user invite`, POST /admin/invitations and the console's users page), the device
 * requests waiting for a person and denying one by its user code (`listPendingDevices`,
 * `denyDevice`, behind `tessera device` and POST /admin/devices/:user_code/deny), and a
 * person's grants, listed and revoked (`listUserGrants`, `revokeGrant`, behind `tessera
 * grant`, GET /admin/users/:username/grants and DELETE /admin/grants/:grant_id). The person's
 * side of an invitation is src/flows/invitation.test.ts; test/invitations.test.ts,
 * test/admin-api.test.ts and test/cli-grants.test.ts check the command's and the API's answers.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, beforeEach, describe, it } from 'node:test';
import { hashSecret } from '../../core/crypto.ts';
import type { SessionRecord } from '../../store/sessions.ts';
import type { ClientRecord, UserRecord } from '../../store/types.ts';
import { approvedGrant } from '../../../test/store/fixtures.ts';
import { deviceClients, FLOW_ISSUER, flowWorld, liveRefreshToken, outcome, queuedMail, type FlowWorld } from '../../../test/helpers/flows.ts';
import { startDeviceAuthorization } from '../device/authorization.ts';
import { deviceCodeKey } from '../device/device-code.ts';
import { deviceCodeGrant } from '../device/token.ts';
import { decideDeviceRequest } from '../device/verification.ts';
import { refreshTokenGrant } from '../refresh/token.ts';
import type { ManageDeps } from './deps.ts';
import { denyDevice, listPendingDevices, MAX_REASON, pendingDeviceJson } from './devices.ts';
import { grantJson, listUserGrants, revokeGrant } from './grants.ts';
import { DEFAULT_INVITATION_TTL_SECONDS, INVITATION_TTL_RANGE, inviteUser, type InvitationInput } from './invitations.ts';
import { addOrganization } from './organizations.ts';
import { addResource } from './resources.ts';

const DAY = 86_400_000;
const DEVICE = { ip: '192.0.2.10', userAgent: 'Living-room TV' };

describe("an operator's dealings with people", () => {
  let world: FlowWorld;
  let tv: ClientRecord;
  let radio: ClientRecord;
  let notes: ClientRecord;
  let ada: UserRecord;

  before(async () => {
    world = await flowWorld();
    [tv, radio] = await deviceClients(world);
    await addResource(world.manage, {
      identifier: 'https://reports.example.com',
      name: 'Reports',
      scopes: [{ name: 'reports:read', description: 'Read reports' }],
    });
    ({ client: notes } = await world.addClient({
      client_name: 'Notes',
      redirect_uris: ['https://notes.example/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      scope: 'openid profile offline_access reports:read',
    }));
    ada = await world.addUser({ username: 'ada', email: 'ada@example.com' });
  });
  after(() => world.close());
  // Every device request of the test before has expired: each test starts with none pending.
  beforeEach(() => world.clock.advance(DAY));

  describe('inviting someone (inviteUser)', () => {
    let invited = 0;
    /** An invitation's input to a fresh address. */
    const fresh = (input: Partial<InvitationInput> = {}): InvitationInput => {
      invited += 1;
      return { email: `invited${invited}@example.com`, ...input };
    };
    const tokenOf = (url: string) => new URL(url).searchParams.get('token')!;

    it('makes a single-use link from the issuer, live for a week unless told, kept only as the hash of its secret', async () => {
      const now = world.clock.now();
      const made = await inviteUser(world.manage, fresh({ email: '  Grace@Example.com ', role: 'support', clientId: notes.id }));
      assert.equal(made.email, 'Grace@Example.com', 'the address trimmed, its case kept');
      assert.equal(made.expiresAt, now + DEFAULT_INVITATION_TTL_SECONDS * 1000);
      assert.equal(made.mailed, false, 'no mail server: the link is for the operator to hand over');
      const url = new URL(made.url);
      assert.equal(`${url.origin}${url.pathname}`.startsWith(FLOW_ISSUER), true, 'built from the issuer alone');
      const token = tokenOf(made.url);
      assert.ok(token.length >= 43, 'a 256-bit secret');
      const stored = await world.store.invitations.find(hashSecret(token), now);
      assert.deepEqual(
        [stored?.email, stored?.role, stored?.clientId, stored?.organizationId, stored?.expiresAt, stored?.usedAt],
        ['Grace@Example.com', 'support', notes.id, null, made.expiresAt, null],
      );
      assert.equal(await world.store.invitations.find(token, now), null, 'not under the secret itself');
      assert.equal(JSON.stringify(stored).includes(token), false);
      const [event] = await world.store.events.list({ type: 'user.invited', limit: 1 });
      assert.equal(event?.clientId, notes.id);
      assert.deepEqual(event?.detail, { role: 'support', expires_at: new Date(made.expiresAt).toISOString(), by: 'operator' });
      assert.equal(JSON.stringify(event).includes(token), false, 'the audit trail never holds the link');
      assert.equal((await world.store.mail.forEvent(event!.id)).length, 0, 'nothing queued without a mail server');
    });

    it('queues the link in the outbox, in the transaction of its event, when the world has mail', async () => {
      const made = await inviteUser({ ...world.manage, mail: world.mail }, fresh());
      assert.equal(made.mailed, true);
      const [event] = await world.store.events.list({ type: 'user.invited', limit: 1 });
      const messages = await queuedMail(world, [event!]);
      assert.deepEqual(
        messages.map((message) => [message.kind, message.to.address, message.values['link'], message.values['expiresAt']]),
        [['invite', made.email, made.url, made.expiresAt]],
      );
    });

    it('takes a lifetime from an hour to thirty days (INVITATION_TTL_RANGE), in whole seconds', async () => {
      const cases: [string, number, string][] = [
        ['the shortest', INVITATION_TTL_RANGE.min, 'ok'],
        ['a second shorter', INVITATION_TTL_RANGE.min - 1, 'invalid:ttl'],
        ['the longest', INVITATION_TTL_RANGE.max, 'ok'],
        ['a second longer', INVITATION_TTL_RANGE.max + 1, 'invalid:ttl'],
        ['a fraction', INVITATION_TTL_RANGE.min + 0.5, 'invalid:ttl'],
        ['none', 0, 'invalid:ttl'],
      ];
      for (const [what, ttlSeconds, expected] of cases) assert.equal(await outcome(() => inviteUser(world.manage, fresh({ ttlSeconds }))), expected, what);
      const now = world.clock.now();
      const shortest = await inviteUser(world.manage, fresh({ ttlSeconds: INVITATION_TTL_RANGE.min }));
      assert.equal(shortest.expiresAt, now + INVITATION_TTL_RANGE.min * 1000);
    });

    it('refuses an invitation a rule forbids, naming the field, and stores none of them', async () => {
      const organization = await addOrganization(world.manage, { name: 'Analytical Engines' });
      const cases: [string, InvitationInput, string][] = [
        ['no address', { email: '' }, 'invalid:email'],
        ['an address without a domain', fresh({ email: 'grace@' }), 'invalid:email'],
        ['an address on two lines', { email: 'a@example.com\r\nBcc: b@example.com' }, 'invalid:email'],
        ['two addresses', { email: 'a@example.com, b@example.com' }, 'invalid:email'],
        ['a role that is not a console role', fresh({ role: 'owner' }), 'invalid:role'],
        ["an account's address, in other case", { email: 'ADA@example.com' }, 'conflict:email'],
        ['an application that does not exist', fresh({ clientId: 'no-such-client' }), 'invalid:client'],
        ['an organization role without the organization', fresh({ organizationRole: 'admin' }), 'invalid:organization_role'],
        ['an organization that does not exist', fresh({ organization: 'no-such-organization' }), 'not_found'],
        ['an organization role that is none', fresh({ organization: organization.id, organizationRole: 'boss' }), 'invalid:organization_role'],
      ];
      const before = (await world.store.events.list({ type: 'user.invited', limit: 1000 })).length;
      for (const [what, input, expected] of cases) assert.equal(await outcome(() => inviteUser(world.manage, input)), expected, what);
      assert.equal((await world.store.events.list({ type: 'user.invited', limit: 1000 })).length, before, 'nothing recorded');
      assert.equal((await inviteUser(world.manage, fresh({ role: 'none' }))).mailed, false, '"none" is no role');
      const [event] = await world.store.events.list({ type: 'user.invited', limit: 1 });
      assert.equal(event?.detail['role'], null);
    });

    it('lets a caller give only a role it holds every scope of, and invite into an organization only if it manages organizations', async () => {
      const organization = await addOrganization(world.manage, { name: 'Difference Engines' });
      const support: ManageDeps = { ...world.manage, caller: { scopes: ['admin:users'] } };
      const cases: [string, ManageDeps, InvitationInput, string][] = [
        ['a caller managing users, a person without a role', support, fresh(), 'ok'],
        ['the same caller, an admin', support, fresh({ role: 'admin' }), 'forbidden:role'],
        ['the same caller, into an organization', support, fresh({ organization: organization.name }), 'forbidden:organization'],
        [
          'a caller managing users and organizations',
          { ...world.manage, caller: { scopes: ['admin:users', 'admin:orgs'] } },
          fresh({ organization: organization.name }),
          'ok',
        ],
        ['the owner, an admin', world.manage, fresh({ role: 'admin' }), 'ok'],
      ];
      for (const [what, deps, input, expected] of cases) assert.equal(await outcome(() => inviteUser(deps, input)), expected, what);
      const intoOrganization = (await world.store.events.list({ type: 'user.invited', limit: 10 })).filter(
        (event) => event.detail['organization'] === organization.id,
      );
      assert.deepEqual(
        intoOrganization.map((event) => event.detail['organization_role']),
        ['member'],
        'one invitation into it, as a member unless told',
      );
    });
  });

  /** A device request started now: its device code and its user code as the device shows it. */
  async function started(client = tv): Promise<{ deviceCode: string; userCode: string }> {
    const response = await startDeviceAuthorization(world.deps, client, { scope: 'openid profile' }, DEVICE);
    return { deviceCode: response.device_code, userCode: response.user_code };
  }

  function session(user = ada): SessionRecord {
    const now = world.clock.now();
    return {
      idHash: `h-${user.id}`,
      sid: `s-${user.id}`,
      userId: user.id,
      authTime: now,
      createdAt: now,
      expiresAt: now + DAY,
      amr: ['pwd'],
      ip: '192.0.2.20',
      userAgent: null,
    };
  }

  /** The person's own decision on the approval page. */
  async function decide(userCode: string, approve: boolean): Promise<void> {
    const attempt = { input: userCode, ip: '192.0.2.20', browser: 'phone' };
    const result = await decideDeviceRequest(world.deps, attempt, approve ? { approve: true, session: session() } : { approve: false, userId: ada.id });
    assert.equal(result.kind, 'done');
  }

  const poll = (deviceCode: string, client = tv) => deviceCodeGrant.handle(world.deps, client, { device_code: deviceCode }, null);

  describe('device requests waiting for a person (RFC 8628 §3.3)', () => {
    it('lists the pending requests oldest first, with their apps, leaving out the decided and the expired, and never shows a device code', async () => {
      const expiring = await started();
      world.clock.advance(world.config.device.codeLifetime * 1000 - 1000);
      const first = await started();
      const decided = await started();
      await decide(decided.userCode, false);
      world.clock.advance(1000);
      const second = await started(radio);
      const pending = await listPendingDevices(world.manage, 100);
      assert.deepEqual(
        pending.map(({ record, clientName }) => [record.userCode, clientName]),
        [
          [first.userCode.replace('-', ''), 'Living-room TV'],
          [second.userCode.replace('-', ''), 'Kitchen radio'],
        ],
        `${expiring.userCode} has just expired`,
      );
      assert.deepEqual(
        (await listPendingDevices(world.manage, 1)).map(({ record }) => record.userCode),
        [first.userCode.replace('-', '')],
        'at most the limit asked',
      );
      const json = pendingDeviceJson(pending[0]!);
      assert.deepEqual(
        [json['user_code'], json['client_id'], json['client_name'], json['scope'], json['ip'], json['user_agent']],
        [first.userCode, tv.id, 'Living-room TV', 'openid profile', DEVICE.ip, DEVICE.userAgent],
      );
      const shown = JSON.stringify(json);
      assert.equal(shown.includes(first.deviceCode) || shown.includes(deviceCodeKey(first.deviceCode)), false, 'the device code is the device’s alone');
    });

    it('denies a request by its user code as a person types it, records why, and the device’s next poll gets access_denied (RFC 8628 §3.5)', async () => {
      const typings: [string, (code: string) => string][] = [
        ['in lower case', (code) => code.toLowerCase()],
        ['without its dash', (code) => code.replace('-', '')],
        ['with a space for the dash, around spaces', (code) => ` ${code.replace('-', ' ')} `],
      ];
      for (const [how, typed] of typings) {
        const { deviceCode, userCode } = await started();
        assert.equal(await outcome(() => poll(deviceCode)), 'authorization_pending', how);
        const denied = await denyDevice(world.manage, typed(userCode), 'code sent in a phishing e-mail');
        assert.deepEqual([denied.userCode, denied.status, denied.clientId], [userCode.replace('-', ''), 'denied', tv.id], how);
        world.clock.advance(denied.interval * 1000);
        assert.equal(await outcome(() => poll(deviceCode)), 'access_denied', `${how}: "the authorization request was denied"`);
      }
      assert.deepEqual(await listPendingDevices(world.manage, 100), []);
      const [event] = await world.store.events.list({ type: 'device.denied', limit: 1 });
      assert.equal(event?.clientId, tv.id);
      assert.deepEqual(event?.detail, {
        device_ip: DEVICE.ip,
        device_user_agent: DEVICE.userAgent,
        scope: 'openid profile',
        by: 'operator',
        reason: 'code sent in a phishing e-mail',
      });
      const { userCode } = await started();
      await denyDevice(world.manage, userCode);
      const [bare] = await world.store.events.list({ type: 'device.denied', limit: 1 });
      assert.equal('reason' in (bare?.detail ?? {}), false, 'no reason given, none recorded');
    });

    it('refuses what is not a user code, a code of no request, and one decided already or expired', async () => {
      const approved = await started();
      await decide(approved.userCode, true);
      const deniedByPerson = await started();
      await decide(deniedByPerson.userCode, false);
      const deniedByOperator = await started();
      await denyDevice(world.manage, deniedByOperator.userCode);
      const expired = await started();
      const cases: [string, string, string][] = [
        ['nothing', '', 'invalid:user_code'],
        ['a code too short', 'WDJB-MJH', 'invalid:user_code'],
        ['a vowel', 'WAJB-MJHT', 'invalid:user_code'],
        ['a device code', approved.deviceCode, 'invalid:user_code'],
        ['a code no request has', 'BCDF-GHJK', 'not_found'],
        ['approved by the person: revoke its grant instead', approved.userCode, 'conflict'],
        ['denied by the person', deniedByPerson.userCode, 'conflict'],
        ['denied by an operator already', deniedByOperator.userCode.toLowerCase(), 'conflict'],
      ];
      for (const [what, code, expected] of cases) assert.equal(await outcome(() => denyDevice(world.manage, code)), expected, what);
      await assert.rejects(() => denyDevice(world.manage, approved.userCode), /already approved: revoke its grant instead/);
      world.clock.advance(world.config.device.codeLifetime * 1000);
      assert.equal(await outcome(() => denyDevice(world.manage, expired.userCode)), 'not_found', 'expired');
      assert.equal(await outcome(() => poll(approved.deviceCode)), 'expired_token');
    });

    it(`takes a reason of at most ${MAX_REASON} characters on one line, and a refused one leaves the request pending`, async () => {
      const { deviceCode, userCode } = await started();
      const cases: [string, string, string][] = [
        ['one character too long', 'x'.repeat(MAX_REASON + 1), 'invalid:reason'],
        ['two lines', 'phishing\nreported by Ada', 'invalid:reason'],
        ['a tab', 'phishing\treported', 'invalid:reason'],
        ['a NUL', 'phishing\u0000', 'invalid:reason'],
      ];
      for (const [what, reason, expected] of cases) assert.equal(await outcome(() => denyDevice(world.manage, userCode, reason)), expected, what);
      assert.equal(await outcome(() => poll(deviceCode)), 'authorization_pending', 'still waiting for the person');
      await denyDevice(world.manage, userCode, 'x'.repeat(MAX_REASON));
      const [event] = await world.store.events.list({ type: 'device.denied', limit: 1 });
      assert.equal(event?.detail['reason'], 'x'.repeat(MAX_REASON), 'the longest reason taken whole');
    });
  });

  describe("a person's grants", () => {
    /** A grant of `scope` approved now for `user` and `client`, and a live refresh token of it, as the code exchange leaves them. */
    async function granted(scope: string[], user = ada, client = notes): Promise<{ token: string; grantId: string }> {
      const now = world.clock.now();
      const grantId = randomUUID();
      await world.store.grants.create(approvedGrant({ id: grantId, userId: user.id, clientId: client.id, scope }, now));
      const token = await liveRefreshToken(world, { grantId, userId: user.id, clientId: client.id, scope, lifetimeMs: 30 * DAY });
      return { token, grantId };
    }

    const refresh = (token: string) => refreshTokenGrant.handle(world.deps, notes, { refresh_token: token }, null);

    it('lists the grants a person has not had revoked, newest first, with their apps and the APIs they cover', async () => {
      const grace = await world.addUser({ username: 'grace' });
      const older = await granted(['openid', 'profile'], grace, tv);
      world.clock.advance(1000);
      const newer = await granted(['openid', 'reports:read', 'offline_access'], grace);
      const revoked = await granted(['openid'], grace);
      await world.store.grants.revoke(revoked.grantId, world.clock.now());
      await granted(['openid'], ada);
      const listed = await listUserGrants(world.manage, ' Grace ');
      assert.deepEqual(
        listed.map(({ grant, clientName, apis }) => [grant.id, clientName, apis]),
        [
          [
            newer.grantId,
            'Notes',
            [{ name: 'Reports', identifier: 'https://reports.example.com', scopes: [{ name: 'reports:read', description: 'Read reports' }] }],
          ],
          [older.grantId, 'Living-room TV', []],
        ],
      );
      const json = grantJson(listed[0]!, world.clock.now());
      assert.deepEqual(
        [json['grant_id'], json['client_id'], json['client_name'], json['scope'], json['apis'], json['active']],
        [
          newer.grantId,
          notes.id,
          'Notes',
          'openid reports:read offline_access',
          [{ identifier: 'https://reports.example.com', name: 'Reports', scopes: ['reports:read'] }],
          false,
        ],
      );
      await refresh(newer.token);
      assert.equal(grantJson((await listUserGrants(world.manage, 'grace'))[0]!, world.clock.now())['active'], true, 'tokens issued under it work now');
      assert.equal(await outcome(() => listUserGrants(world.manage, 'nobody')), 'not_found');
    });

    it('revokes a grant once: its refresh token stops working, the second revocation answers false, and one event says the operator did', async () => {
      const { token, grantId } = await granted(['openid', 'offline_access']);
      const { refresh_token: rotated } = await refresh(token);
      assert.ok(rotated, 'the refresh token works before');
      assert.equal(await revokeGrant(world.manage, grantId), true);
      assert.notEqual((await world.store.grants.get(grantId))?.revokedAt, null);
      assert.equal(await outcome(() => refresh(rotated)), 'invalid_grant', 'RFC 7009 §2.1: the grant’s refresh tokens are invalidated with it');
      assert.equal(await revokeGrant(world.manage, grantId), false, 'revoked already');
      const events = (await world.store.events.list({ type: 'grant.revoked', limit: 100 })).filter((event) => event.grantId === grantId);
      assert.deepEqual(
        events.map((event) => [event.userId, event.clientId, event.detail['by']]),
        [[ada.id, notes.id, 'operator']],
        'one event, for the revocation that happened',
      );
      assert.equal(
        (await listUserGrants(world.manage, 'ada')).some(({ grant }) => grant.id === grantId),
        false,
        'no longer listed',
      );
      assert.equal(await outcome(() => revokeGrant(world.manage, 'no-such-grant')), 'not_found');
    });
  });
});
