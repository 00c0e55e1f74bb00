import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
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
});
