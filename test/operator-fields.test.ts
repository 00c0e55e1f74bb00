/**
 * Issue 42's drift test: every row of a noun's field table (flows/manage/fields/) is in every
 * door — the admin API's request and response schemas in its OpenAPI document, the console's
 * form, the command's options and its help — and a registration with every field set reads
 * back the same through each. A row a door leaves out fails here, by the row's name.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { USAGE } from '../src/cli/main.ts';
import { usageEntries } from '../src/cli/help.ts';
import { optionLabel } from '../src/cli/common.ts';
import { CLIENT_FIELDS } from '../src/flows/manage/fields/clients.ts';
import { cliOptions, formValues, inputOf, postedValues, type Field } from '../src/flows/manage/fields/field.ts';
import { appFormPage } from '../src/ui/console.ts';
import { messages } from '../src/ui/i18n.ts';
import { isMessageKey } from '../src/ui/i18n.ts';
import { runTessera } from './helpers/cli.ts';
import { REDIRECT_URI, startTestServer, type TestServer } from './helpers/server.ts';
import { adminToken } from './helpers/fixtures.ts';

/** A value for each writable client field, each unlike its default, that the rules accept together. */
const EVERY_CLIENT_FIELD: Readonly<Record<string, unknown>> = {
  client_name: 'Every Field',
  token_endpoint_auth_method: 'client_secret_post',
  redirect_uris: [REDIRECT_URI, 'https://app.example/callback'],
  scope: 'openid profile',
  grant_types: ['authorization_code', 'device_code', 'refresh_token'],
  web_origins: [],
  device_networks: ['192.0.2.0/24'],
  jwks: { keys: [{ kty: 'EC', crv: 'P-256', x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU', y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0', kid: 'k1', use: 'sig', alg: 'ES256' }] },
  pkce: 'optional',
  request_object_signing_alg: 'ES256',
  post_logout_redirect_uris: ['https://app.example/signed-out'],
  backchannel_logout_uri: 'https://app.example/backchannel',
  require_phishing_resistant: true,
  first_party: true,
  dpop_bound_access_tokens: true,
  require_pushed_authorization_requests: true,
};

const writable = (field: Field) => field.create || field.update;

describe('the client field table in every door', () => {
  let server: TestServer;
  let token: string;

  before(async () => {
    server = await startTestServer();
    ({ token } = await adminToken(server, 'admin:clients', 'CI'));
  });
  after(() => server.close());

  const api = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const response = await fetch(`${server.url}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, headers: response.headers, body: (await response.json()) as Record<string, unknown> };
  };

  it('has the table cover every field the test sets, and each writable field a value here', () => {
    // jwks_uri is the other way to give jwks (one or the other): it has a case of its own below.
    const writableNames = CLIENT_FIELDS.filter(writable).filter((field) => field.create && field.name !== 'jwks_uri').map((field) => field.name);
    assert.deepEqual(Object.keys(EVERY_CLIENT_FIELD).sort(), writableNames.sort());
  });

  it('puts every row in the OpenAPI document: the requests of the operations that take it, and every answer', async () => {
    const document = (await api('GET', '/openapi.json')).body as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: { properties: Record<string, unknown> } }> }; responses: Record<string, { content?: Record<string, { schema: { properties?: Record<string, unknown> } }> }> }>> };
    const create = document.paths['/clients']!['post']!;
    const update = document.paths['/clients/{client_id}']!['patch']!;
    const read = document.paths['/clients/{client_id}']!['get']!;
    const body = (operation: typeof create) => Object.keys(operation.requestBody!.content['application/json']!.schema.properties);
    const answer = (operation: typeof create, status: string) => Object.keys(operation.responses[status]!.content!['application/json']!.schema.properties ?? {});
    for (const field of CLIENT_FIELDS) {
      assert.equal(body(create).includes(field.name), field.create, `POST /clients body: ${field.name}`);
      assert.equal(body(update).includes(field.name), field.update, `PATCH /clients body: ${field.name}`);
      assert.ok(answer(read, '200').includes(field.name), `GET /clients/{client_id} answer: ${field.name}`);
      assert.ok(answer(create, '201').includes(field.name), `POST /clients answer: ${field.name}`);
    }
  });

  it("puts every row with a control in the console's form, with a label in every language", () => {
    const ui = { site: server.config.site, t: messages('en'), here: '/console/apps/new' };
    const values = formValues(CLIENT_FIELDS, EVERY_CLIENT_FIELD);
    const page = appFormPage({ ui, csrf: 'x', operator: { name: 'Ada', role: 'admin' }, section: 'apps', paths: { dashboard: '/c', users: '/c/u', apps: '/c/a', apis: '/c/p', events: '/c/e', keys: '/c/k' } } as never, { title: 'New', action: '/c/a', submit: 'Save', values, edit: null });
    for (const field of CLIENT_FIELDS) {
      if (field.form === null) continue;
      assert.match(page, new RegExp(`name="${field.name}"`), `the form has ${field.name}`);
      assert.ok(isMessageKey(field.form.label), `${field.name}'s label ${field.form.label} is a message`);
    }
    // What the form shows is what it posts: the values read back through a post are the registration's.
    const posted: Record<string, string | string[]> = {};
    for (const [name, value] of Object.entries(values)) if (value !== false) posted[name] = value === true ? 'on' : (value as string | string[]);
    const input = inputOf(CLIENT_FIELDS, postedValues(CLIENT_FIELDS, posted), Object.keys(values));
    for (const field of CLIENT_FIELDS.filter((row) => row.form !== null)) {
      // An empty nullable value is posted as null: cleared.
      assert.deepEqual(input[field.name], EVERY_CLIENT_FIELD[field.name] ?? null, `${field.name} through the form`);
    }
  });

  it("gives every row an option of the command's, named in its help and in its refusals", () => {
    const entries = usageEntries(USAGE);
    for (const operation of ['create', 'update'] as const) {
      const command = operation === 'create' ? 'client add' : 'client update';
      const help = entries.find((entry) => entry.name === command)!.text;
      for (const option of Object.keys(cliOptions(CLIENT_FIELDS, operation).options)) {
        const named = option.startsWith('no-') ? new RegExp(`--${option}\\b|--\\[no-\\]${option.slice(3)}\\b`) : new RegExp(`--(?:\\[no-\\])?${option}\\b`);
        assert.match(help, named, `${command} --help names --${option}`);
      }
    }
    for (const field of CLIENT_FIELDS) if (field.cli !== null) assert.equal(optionLabel(field.name), `--${field.cli.option}`, `a refusal about ${field.name} names its option`);
  });

  it('reads back a registration with every field the same through the command, the admin API and the console', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-fields-'));
    try {
      const jwksFile = join(dir, 'jwks.json');
      writeFileSync(jwksFile, JSON.stringify(EVERY_CLIENT_FIELD['jwks']));
      const e = EVERY_CLIENT_FIELD as Readonly<Record<string, string & string[]>>;
      const args = [
        'client', 'add', '--name', e['client_name'], '--auth-method', e['token_endpoint_auth_method'], ...e['redirect_uris'].flatMap((uri) => ['--redirect-uri', uri]), '--scope', e['scope'],
        ...e['grant_types'].flatMap((grant) => ['--grant', grant]), ...e['device_networks'].flatMap((cidr) => ['--device-network', cidr]), '--jwks-file', jwksFile, '--pkce', e['pkce'],
        '--request-object-signing-alg', e['request_object_signing_alg'], ...e['post_logout_redirect_uris'].flatMap((uri) => ['--post-logout-redirect-uri', uri]),
        '--backchannel-logout-uri', e['backchannel_logout_uri'], '--require-phishing-resistant', '--first-party', '--require-dpop', '--require-par', '--json',
      ];
      const added = await runTessera(args, { TESSERA_DATABASE: server.config.database });
      assert.equal(added.code, 0, added.stderr);
      const fromCli = JSON.parse(added.stdout) as Record<string, unknown>;
      const fromApi = await api('POST', '/clients', EVERY_CLIENT_FIELD);
      assert.equal(fromApi.status, 201, JSON.stringify(fromApi.body));
      const comparable = (registration: Record<string, unknown>): Record<string, unknown> => {
        const { client_id: _id, client_secret: _secret, created_at: _at, ...rest } = registration;
        return { ...rest, grant_types: (rest['grant_types'] as string[]).map((grant) => grant.replace('urn:ietf:params:oauth:grant-type:device_code', 'device_code')) };
      };
      assert.deepEqual(comparable(fromCli), comparable(fromApi.body), 'the command and the admin API register alike');
      for (const field of CLIENT_FIELDS.filter((row) => row.create)) {
        const value = comparable(fromApi.body)[field.name];
        const expected = EVERY_CLIENT_FIELD[field.name];
        if (Array.isArray(expected) && expected.length === 0) continue;
        assert.deepEqual(value, expected, `${field.name} as registered`);
      }
      const read = await api('GET', `/clients/${fromApi.body['client_id'] as string}`);
      assert.deepEqual(comparable(read.body), comparable({ ...fromApi.body }), 'read back as written');
      assert.deepEqual(formValues(CLIENT_FIELDS, read.body), formValues(CLIENT_FIELDS, EVERY_CLIENT_FIELD), 'the console form shows what was registered');

      // Every option of an update, through the command, reads back in the admin API.
      const id = fromCli['client_id'] as string;
      const changed = await runTessera(['client', 'update', id, '--no-request-object-signing-alg', '--no-first-party', '--remove-device-network', '192.0.2.0/24', '--add-device-network', '198.51.100.0/24', '--pkce', 'required', '--json'], { TESSERA_DATABASE: server.config.database });
      assert.equal(changed.code, 0, changed.stderr);
      const after = (await api('GET', `/clients/${id}`)).body;
      assert.deepEqual([after['request_object_signing_alg'], after['first_party'], after['device_networks'], after['pkce']], [undefined, undefined, ['198.51.100.0/24'], 'required']);
      const etag = (await api('GET', `/clients/${id}`)).headers.get('etag')!;
      const patched = await api('PATCH', `/clients/${id}`, { request_object_signing_alg: 'RS256', jwks_uri: 'https://app.example/jwks.json', pkce: 'optional-without-nonce' }, { 'if-match': etag });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.deepEqual([patched.body['request_object_signing_alg'], patched.body['pkce'], patched.body['jwks_uri']], ['RS256', 'optional-without-nonce', 'https://app.example/jwks.json'], 'fields the admin API once refused as unknown');
      const shown = await runTessera(['client', 'show', id, '--json'], { TESSERA_DATABASE: server.config.database });
      assert.equal((JSON.parse(shown.stdout) as Record<string, unknown>)['jwks_uri'], 'https://app.example/jwks.json', 'the command reads what the API wrote');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
