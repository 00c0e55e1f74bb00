/**
 * Two Tessera processes on one PostgreSQL database push each SET to a Shared Signals receiver
 * once (RFC 8935), as they send each webhook message once: both run the SSF dispatcher and
 * race for every delivery; the claim (one conditional UPDATE) gives each to one of them.
 * Events are stored by the `tessera` command, a third process.
 *
 * Runs against the PostgreSQL of `test/helpers/postgres.ts`, in a schema of its own.
 */
import assert from 'node:assert/strict';
import { after, before, it } from 'node:test';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { SSF_EVENTS } from '../src/core/ssf.ts';
import { runTessera as tessera } from './helpers/cli.ts';
import { instancesOnPostgres } from './helpers/instances.ts';
import { describePostgres } from './helpers/postgres.ts';
import { Receiver } from './helpers/receiver.ts';
import { closeAll } from './helpers/server.ts';
import { until } from './helpers/wait.ts';

describePostgres('Shared Signals from two Tessera processes on one PostgreSQL database', () => {
  const instances = instancesOnPostgres({ TESSERA_WEBHOOK_RETRY_DELAY_MS: '100', TESSERA_ALLOW_PRIVATE_NETWORK_URLS: 'true' });
  const env = instances.env;
  // Slow enough that both instances are often busy at once.
  const receiver = new Receiver({ status: 202, path: '/caep', delayMs: 5 });
  const received = receiver.received;

  before(() => receiver.start());
  after(() => closeAll(instances, receiver));

  it('pushes each SET once, whichever instance sends it, in the order of the events', async () => {
    const [first] = await instances.serve();
    const issuer = first.url;
    const added = await tessera(['client', 'add', '--name', 'Receiver', '--grant', 'client_credentials', '--scope', 'ssf:manage', '--json'], {
      ...env,
      TESSERA_ISSUER: issuer,
    });
    assert.equal(added.code, 0, added.stderr);
    const { client_id: id, client_secret: secret } = JSON.parse(added.stdout) as { client_id: string; client_secret: string };
    const tokenResponse = await fetch(`${issuer}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'ssf:manage' }),
    });
    const { access_token: token } = (await tokenResponse.json()) as { access_token: string };
    const created = await fetch(`${issuer}/ssf/streams`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        delivery: { method: 'urn:ietf:rfc:8935', endpoint_url: receiver.url },
        events_requested: [SSF_EVENTS.ACCOUNT_DISABLED],
      }),
    });
    assert.equal(created.status, 201, await created.clone().text());

    const names = Array.from({ length: 4 }, (_, i) => `person${i}`);
    for (const name of names) {
      const made = await tessera(['user', 'add', '--username', name, '--password-stdin'], { ...env, TESSERA_ISSUER: issuer }, 'correct horse battery staple\n');
      assert.equal(made.code, 0, made.stderr);
      const disabled = await tessera(['user', 'disable', name], { ...env, TESSERA_ISSUER: issuer });
      assert.equal(disabled.code, 0, disabled.stderr);
    }
    await until('every SET to arrive', () => received.length >= names.length, 20_000);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const keys = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`));
    const sets = await Promise.all(received.map(async (set) => (await jwtVerify(set.body, keys, { issuer, audience: id, typ: 'secevent+jwt' })).payload));
    const jtis = sets.map((set) => set.jti);
    assert.equal(new Set(jtis).size, names.length, 'one SET an event');
    assert.equal(jtis.length, names.length, 'and each once');
    const users = JSON.parse((await tessera(['user', 'list', '--json'], { ...env, TESSERA_ISSUER: issuer })).stdout) as { sub: string; username: string }[];
    const byId = new Map(users.map((user) => [user.sub, user.username]));
    assert.deepEqual(
      sets.map((set) => byId.get((set['sub_id'] as { sub: string }).sub)),
      names,
      'in the order they were disabled',
    );
  });
});
