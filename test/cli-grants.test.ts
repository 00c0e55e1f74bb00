import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { GRANT_AUTHORIZATION_CODE, GRANT_DEVICE_CODE } from '../src/core/protocol.ts';
import { runTessera as tessera } from './helpers/cli.ts';
import { openStore } from '../src/store/open.ts';

describe('the tessera command: refresh-token clients and grants', () => {
  let dir: string;
  let env: Record<string, string>;
  let database: string;

  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-cli-grants-'));
    database = join(dir, 'tessera.db');
    env = { TESSERA_DATABASE: database };
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('registers a device client for refresh tokens with --grant refresh_token', async () => {
    const result = await tessera(['client', 'add', '--name', 'TV', '--grant', 'device_code', '--grant', 'refresh_token', '--json'], env);
    assert.equal(result.code, 0, result.stderr);
    assert.deepEqual((JSON.parse(result.stdout) as { grant_types: string[] }).grant_types, [GRANT_DEVICE_CODE, 'refresh_token']);
  });

  it('refuses refresh_token as the only grant', async () => {
    const result = await tessera(['client', 'add', '--name', 'Nothing', '--grant', 'refresh_token'], env);
    assert.equal(result.code, 2);
    assert.match(result.stderr, /refresh_token needs authorization_code or device_code/);
  });

  it("lists a user's grants and revokes one by its id", async () => {
    const client = JSON.parse((await tessera(['client', 'add', '--name', 'Living Room TV', '--grant', 'device_code', '--grant', 'refresh_token', '--json'], env)).stdout) as { client_id: string };
    assert.equal((await tessera(['user', 'add', '--username', 'ada', '--password-stdin'], env, 'a long enough password\n')).code, 0);
    const store = await openStore(database);
    const now = Date.now();
    try {
      const user = (await store.users.findByUsername('ada'))!;
      for (const [id, kind] of [['grant-device', GRANT_DEVICE_CODE], ['grant-browser', GRANT_AUTHORIZATION_CODE]] as const) {
        await store.grants.create({
          id, userId: user.id, clientId: client.client_id, scope: ['openid', 'profile'], kind, authTime: now, createdAt: now, revokedAt: null,
          device: kind === GRANT_DEVICE_CODE ? { ip: '203.0.113.7', userAgent: 'LivingRoomTV/2.1', requestedAt: now } : null,
        });
      }
      await store.grants.recordUse('grant-device', now, now + 3600_000);
    } finally {
      await store.close();
    }

    const text = await tessera(['grant', 'list', '--username', 'Ada'], env);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /grant-device {2}Living Room TV \(active\)/);
    assert.match(text.stdout, /device sign-in from 203\.0\.113\.7 \(LivingRoomTV\/2\.1\)/);
    assert.match(text.stdout, /grant-browser {2}Living Room TV \(no live tokens\)/);

    const listed = JSON.parse((await tessera(['grant', 'list', '--username', 'ada', '--json'], env)).stdout) as Record<string, unknown>[];
    const device = listed.find((grant) => grant['grant_id'] === 'grant-device')!;
    assert.equal(device['client_name'], 'Living Room TV');
    assert.equal(device['active'], true);
    assert.equal(device['grant_type'], GRANT_DEVICE_CODE);
    assert.deepEqual((device['device'] as Record<string, unknown>)['ip'], '203.0.113.7');

    const revoked = await tessera(['grant', 'revoke', 'grant-device'], env);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, /Revoked grant grant-device/);
    const after = JSON.parse((await tessera(['grant', 'list', '--username', 'ada', '--json'], env)).stdout) as Record<string, unknown>[];
    assert.deepEqual(after.map((grant) => grant['grant_id']), ['grant-browser']);
    const again = await tessera(['grant', 'revoke', 'grant-device'], env);
    assert.equal(again.code, 0);
    assert.match(again.stdout, /already revoked/);
  });

  it('fails clearly for an unknown user or grant, and prints usage for missing arguments', async () => {
    const nobody = await tessera(['grant', 'list', '--username', 'nobody'], env);
    assert.equal(nobody.code, 1);
    assert.match(nobody.stderr, /no user named nobody/);
    const unknown = await tessera(['grant', 'revoke', 'no-such-grant'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no grant with id no-such-grant/);
    for (const args of [['grant', 'list'], ['grant', 'revoke']]) {
      const result = await tessera(args, env);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, /Usage: tessera/);
    }
  });
});
