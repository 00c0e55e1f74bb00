import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import type { OAuthError } from '../../core/errors.ts';
import { NO_ADMIN } from '../manage/authority.ts';
import type { ManageDeps } from '../manage/deps.ts';
import { register, registrationOwner, replaceRegistration, type RegistrationPolicy } from './register.ts';

const NATIVE = 'com.example.notes:/callback';

describe('dynamic client registration (RFC 7591, RFC 7592)', () => {
  let world: FlowWorld;
  /** As the registration endpoint calls the operations: an app registering itself holds no admin scope. */
  let app: ManageDeps;

  before(async () => {
    world = await flowWorld({ TESSERA_REGISTRATION: 'token' });
    app = { ...world.manage, caller: NO_ADMIN };
  });
  after(() => world.close());

  it('never lets an app give itself an admin scope, whatever grant, policy or authentication it registers with', async () => {
    const cases: [Record<string, unknown>, RegistrationPolicy][] = [
      // The one the admin scopes are for: a confidential client of the client_credentials grant.
      [{ client_name: 'Robot', grant_types: ['client_credentials'], scope: 'admin:clients' }, 'token'],
      [
        { client_name: 'Robot', grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_post', scope: 'admin:users admin:keys' },
        'token',
      ],
      [{ client_name: 'Robot', grant_types: ['client_credentials'], scope: 'admin:events:read' }, 'token'],
      [{ client_name: 'Notes', redirect_uris: [NATIVE], scope: 'openid admin:clients' }, 'token'],
      [{ client_name: 'Notes', redirect_uris: [NATIVE], scope: 'openid admin:clients' }, 'open'],
    ];
    const before = (await world.store.clients.list()).length;
    for (const [body, policy] of cases) {
      assert.equal(await outcome(() => register(app, body, policy)), 'invalid_client_metadata', `${policy}: ${JSON.stringify(body)}`);
    }
    assert.equal((await world.store.clients.list()).length, before, 'no client was made');
  });

  it("holds a registration's lists to the client table's bounds, naming the field in RFC 7591's error, on registration and replacement", async () => {
    const uris = (count: number) => Array.from({ length: count }, (_, i) => `com.example.notes${i}:/callback`);
    const cases: [string, Record<string, unknown>, string][] = [
      ['51 redirect URIs', { redirect_uris: uris(51) }, 'invalid_redirect_uri'],
      ['a redirect URI of 2,049 characters', { redirect_uris: [`com.example.notes:/${'a'.repeat(2030)}`] }, 'invalid_redirect_uri'],
      ['51 post-logout redirect URIs', { redirect_uris: [NATIVE], post_logout_redirect_uris: uris(51) }, 'invalid_redirect_uri'],
      ['51 device networks', { redirect_uris: [NATIVE], device_networks: Array.from({ length: 51 }, (_, i) => `10.0.${i}.0/24`) }, 'invalid_client_metadata'],
      ['a device network of 65 characters', { redirect_uris: [NATIVE], device_networks: [`${'1'.repeat(62)}/24`] }, 'invalid_client_metadata'],
    ];
    const made = await register(app, { client_name: 'Notes', redirect_uris: [NATIVE], token_endpoint_auth_method: 'none' }, 'token');
    const owner = await registrationOwner(app, made.client.id, made.registrationAccessToken);
    const token = made.registrationAccessToken!;
    const before = (await world.store.clients.list()).length;
    for (const [what, lists, expected] of cases) {
      const body = { client_name: 'Notes', token_endpoint_auth_method: 'none', ...lists };
      assert.equal(await outcome(() => register(app, body, 'token')), expected, `registering with ${what}`);
      assert.equal(
        await outcome(() => replaceRegistration(app, owner, token, { ...body, client_id: made.client.id }, 'token')),
        expected,
        `replacing with ${what}`,
      );
    }
    assert.equal((await world.store.clients.list()).length, before, 'no client was made');
    assert.deepEqual((await world.store.clients.get(made.client.id))?.redirectUris, [NATIVE], 'nor the registration changed');
    // Open registration parses each redirect URI: past the bound it is refused before that.
    await assert.rejects(
      register(app, { client_name: 'Notes', token_endpoint_auth_method: 'none', redirect_uris: uris(50).concat('https://web.example/callback') }, 'open'),
      (error: OAuthError) => error.code === 'invalid_redirect_uri' && /at most 50/.test(error.description),
    );
    // At the bound, both go through.
    const fifty = await register(app, { client_name: 'Fifty', token_endpoint_auth_method: 'none', redirect_uris: uris(50) }, 'token');
    assert.equal(fifty.client.redirectUris.length, 50);
    await replaceRegistration(app, owner, token, { client_id: made.client.id, client_name: 'Notes', redirect_uris: uris(50) }, 'token');
    assert.equal((await world.store.clients.get(made.client.id))?.redirectUris.length, 50);
  });

  it('replaces a registration only for the client_id it names, which must be its own (RFC 7592 §2.2)', async () => {
    const first = await register(app, { client_name: 'Notes', redirect_uris: [NATIVE], token_endpoint_auth_method: 'none' }, 'token');
    const other = await register(app, { client_name: 'Other', redirect_uris: ['com.example.other:/callback'], token_endpoint_auth_method: 'none' }, 'token');
    const owner = await registrationOwner(app, first.client.id, first.registrationAccessToken);
    const replacement = { client_name: 'Notes 2', redirect_uris: [NATIVE] };
    const cases: [string, Record<string, unknown>, string][] = [
      ['without client_id', replacement, 'invalid_request'],
      ["with another client's", { ...replacement, client_id: other.client.id }, 'invalid_request'],
      ['with a client_id of another type', { ...replacement, client_id: [first.client.id] }, 'invalid_request'],
      ['with the client_id empty', { ...replacement, client_id: '' }, 'invalid_request'],
    ];
    for (const [what, body, expected] of cases) {
      assert.equal(await outcome(() => replaceRegistration(app, owner, first.registrationAccessToken!, body, 'token')), expected, what);
      assert.equal((await world.store.clients.get(first.client.id))?.name, 'Notes', `${what}: nothing changed`);
      assert.equal((await world.store.clients.get(other.client.id))?.name, 'Other', `${what}: nor the other client`);
    }
    const replaced = await replaceRegistration(app, owner, first.registrationAccessToken!, { ...replacement, client_id: first.client.id }, 'token');
    assert.equal(replaced.client.name, 'Notes 2');
    assert.notEqual(replaced.registrationAccessToken, first.registrationAccessToken, 'the token is rotated');
    assert.equal(await outcome(() => registrationOwner(app, first.client.id, first.registrationAccessToken)), 'invalid_token', 'the old token is spent');
  });

  it('refuses an update made with a token another update has rotated, and writes nothing of it (RFC 7592 §2.2)', async () => {
    const made = await register(app, { client_name: 'Notes', redirect_uris: [NATIVE], token_endpoint_auth_method: 'none' }, 'token');
    const id = made.client.id;
    const token = made.registrationAccessToken!;
    // B checks the token while it is still current; A's update then commits and rotates it.
    const checkedByB = await registrationOwner(app, id, token);
    const a = await replaceRegistration(app, checkedByB, token, { client_id: id, client_name: 'From A', redirect_uris: [NATIVE] }, 'token');
    // B reads the client after A's commit, so its version check alone would let it through.
    const readByB = (await world.store.clients.get(id))!;
    assert.equal(
      await outcome(() => replaceRegistration(app, readByB, token, { client_id: id, client_name: 'From B', redirect_uris: [NATIVE] }, 'token')),
      'invalid_token',
    );
    assert.equal((await world.store.clients.get(id))?.name, 'From A', 'the acknowledged update stands: the refused one wrote nothing');
    assert.equal((await registrationOwner(app, id, a.registrationAccessToken)).id, id, "A's new token still manages the registration");
  });
});
