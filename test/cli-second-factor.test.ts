import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openStore } from '../src/store/open.ts';
import { scratchDatabase } from './helpers/scratch.ts';
import { runTessera as tessera } from './helpers/cli.ts';

describe('the tessera command: passkey-only clients and second factors', () => {
  const scratch = scratchDatabase('tessera-cli-2fa-');
  const { env } = scratch;

  it('registers a client whose approvals need a passkey sign-in with --require-phishing-resistant', async () => {
    const result = await tessera(['client', 'add', '--name', 'Living Room TV', '--grant', 'device_code', '--require-phishing-resistant', '--json'], env);
    assert.equal(result.code, 0, result.stderr);
    const registered = JSON.parse(result.stdout) as { client_id: string; require_phishing_resistant: boolean };
    assert.equal(registered.require_phishing_resistant, true);
    const plain = JSON.parse((await tessera(['client', 'add', '--name', 'Printer', '--grant', 'device_code', '--json'], env)).stdout) as {
      require_phishing_resistant?: boolean;
    };
    assert.equal(plain.require_phishing_resistant, undefined, 'only said when set');
    const store = await openStore(scratch.database);
    try {
      assert.equal((await store.clients.get(registered.client_id))?.requirePhishingResistant, true);
    } finally {
      await store.close();
    }
    const list = await tessera(['client', 'list'], env);
    assert.match(list.stdout, /Living Room TV\n(?: {2}[^\n]*\n)* {2}approvals: passkey sign-ins only\n/);
    assert.doesNotMatch(list.stdout, /Printer\n(?: {2}[^\n]*\n)* {2}approvals/);
  });

  it('turns the requirement on and off with client update --[no-]require-phishing-resistant, keeping it through other changes', async () => {
    const added = JSON.parse((await tessera(['client', 'add', '--name', 'Kiosk', '--grant', 'device_code', '--json'], env)).stdout) as { client_id: string };
    const on = await tessera(['client', 'update', added.client_id, '--require-phishing-resistant', '--json'], env);
    assert.equal(on.code, 0, on.stderr);
    assert.equal((JSON.parse(on.stdout) as { require_phishing_resistant: boolean }).require_phishing_resistant, true);
    const renamed = await tessera(['client', 'update', added.client_id, '--name', 'Lobby kiosk', '--json'], env);
    assert.equal((JSON.parse(renamed.stdout) as { require_phishing_resistant: boolean }).require_phishing_resistant, true, 'kept through another change');
    const off = await tessera(['client', 'update', added.client_id, '--no-require-phishing-resistant', '--json'], env);
    assert.equal(off.code, 0, off.stderr);
    assert.equal((JSON.parse(off.stdout) as { require_phishing_resistant?: boolean }).require_phishing_resistant, undefined);
    const store = await openStore(scratch.database);
    try {
      assert.equal((await store.clients.get(added.client_id))?.requirePhishingResistant, undefined);
    } finally {
      await store.close();
    }
  });

  it("removes a user's passkeys, one-time codes and recovery codes with user reset-second-factor, and leaves others' alone", async () => {
    assert.equal((await tessera(['user', 'add', '--username', 'grace', '--password-stdin'], env, 'a long enough password\n')).code, 0);
    assert.equal((await tessera(['user', 'add', '--username', 'alan', '--password-stdin'], env, 'a long enough password\n')).code, 0);
    let store = await openStore(scratch.database);
    const now = Date.now();
    const passkey = (id: string, userId: string, name = 'Phone') => ({
      id,
      userId,
      name,
      publicKey: 'pQE',
      counter: 0,
      transports: [],
      deviceType: 'multiDevice' as const,
      backedUp: true,
      createdAt: now,
      lastUsedAt: null,
    });
    let grace: string;
    let alan: string;
    try {
      grace = (await store.users.findByUsername('grace'))!.id;
      alan = (await store.users.findByUsername('alan'))!.id;
      await store.passkeys.create(passkey('cred-1', grace));
      await store.passkeys.create({ ...passkey('cred-2', grace, 'YubiKey'), deviceType: 'singleDevice', backedUp: false });
      await store.passkeys.recordUse('cred-2', { counter: 5, backedUp: false }, now + 1000);
      await store.passkeys.create(passkey('cred-3', alan));
      await store.totp.begin(grace, 'SECRET', now);
      await store.totp.confirm(grace, 1, now);
      await store.recoveryCodes.replace(grace, ['a', 'b'], now);
    } finally {
      await store.close();
    }
    const shown = await tessera(['user', 'show', 'grace'], env);
    assert.equal(shown.code, 0, shown.stderr);
    const at = (ms: number) => new Date(ms).toISOString();
    assert.ok(
      shown.stdout.endsWith(`  passkeys: 2
    Phone (synced): added ${at(now)}, last used never
    YubiKey (this device only): added ${at(now)}, last used ${at(now + 1000)}
  one-time codes: on, 2 of 10 recovery codes left
  linked identities: none
`),
      shown.stdout,
    );
    const json = JSON.parse((await tessera(['user', 'show', 'grace', '--json'], env)).stdout) as {
      passkeys: unknown[];
      one_time_codes: boolean;
      recovery_codes_left: number;
    };
    assert.deepEqual(json.passkeys, [
      { id: 'cred-1', name: 'Phone', synced: true, created_at: at(now), last_used_at: null },
      { id: 'cred-2', name: 'YubiKey', synced: false, created_at: at(now), last_used_at: at(now + 1000) },
    ]);
    assert.equal(json.one_time_codes, true);
    assert.equal(json.recovery_codes_left, 2);

    const result = await tessera(['user', 'reset-second-factor', 'Grace'], env);
    assert.equal(result.code, 0, result.stderr);
    assert.equal(
      result.stdout,
      'Removed 2 passkeys, one-time codes and recovery codes of grace. They sign in with their password until they set up a new one.\n',
    );
    store = await openStore(scratch.database);
    try {
      assert.deepEqual(await store.passkeys.listForUser(grace), []);
      assert.equal(await store.totp.get(grace), null);
      assert.equal(await store.recoveryCodes.countUnused(grace), 0);
      assert.equal((await store.passkeys.listForUser(alan)).length, 1);
    } finally {
      await store.close();
    }
    assert.match((await tessera(['user', 'reset-second-factor', 'grace'], env)).stdout, /Removed 0 passkeys of grace/);
    assert.match((await tessera(['user', 'show', 'grace'], env)).stdout, /\n {2}passkeys: none\n {2}one-time codes: off\n {2}linked identities: none\n$/);
    // Each reset is an audit event, the operator's.
    const events = JSON.parse((await tessera(['events', '--type', 'second_factor.reset', '--json'], env)).stdout) as {
      user_id: string;
      username: string;
      detail: Record<string, unknown>;
    }[];
    assert.deepEqual(
      events.map((event) => [event.username, event.detail]),
      [
        ['grace', { passkeys_removed: 0, totp_removed: false, by: 'operator' }],
        ['grace', { passkeys_removed: 2, totp_removed: true, by: 'operator' }],
      ],
    );
    assert.ok(events.every((event) => event.user_id === grace));
  });

  it('refuses reset-second-factor for an unknown user (exit 1) or without a username (exit 2)', async () => {
    const unknown = await tessera(['user', 'reset-second-factor', 'nobody'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no user named nobody/);
    const missing = await tessera(['user', 'reset-second-factor'], env);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /expected 1 argument/);
  });
});
