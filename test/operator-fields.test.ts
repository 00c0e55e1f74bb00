/**
 * The drift test: every row of a noun's field table (flows/manage/fields/) is in every
 * door — the admin API's request and response schemas in its OpenAPI document, the console's
 * form, the command's options and its help — and a registration with every field set reads
 * back the same through each. A row a door leaves out fails here, by the row's name.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as oidc from 'openid-client';
import { USAGE } from '../src/cli/main.ts';
import { usageEntries } from '../src/cli/help.ts';
import { optionLabel } from '../src/cli/common.ts';
import { CLIENT_FIELDS } from '../src/flows/manage/fields/clients.ts';
import { cliOptions, formKeys, formValues, inputOf, postedValues, type Field, type FieldTable } from '../src/flows/manage/fields/field.ts';
import { USER_FIELDS } from '../src/flows/manage/fields/users.ts';
import { RESOURCE_FIELDS } from '../src/flows/manage/fields/resources.ts';
import { PROVIDER_FIELDS } from '../src/flows/manage/fields/providers.ts';
import { WEBHOOK_FIELDS } from '../src/flows/manage/fields/webhooks.ts';
import { SAML_SP_FIELDS } from '../src/flows/manage/fields/saml-service-providers.ts';
import { pemCertificate, selfSignedCertificate } from '../src/tokens/certificate.ts';
import { samlSpFormPage } from '../src/ui/console-saml.ts';
import { SCIM_TOKEN_FIELDS } from '../src/flows/manage/fields/scim-tokens.ts';
import { ORGANIZATION_FIELDS, ORGANIZATION_MEMBER_FIELDS } from '../src/flows/manage/fields/organizations.ts';
import { organizationFormPage, organizationPage } from '../src/ui/console-organizations.ts';
import { TRUSTED_ISSUER_FIELDS } from '../src/flows/manage/fields/trusted-issuers.ts';
import { ADMIN_SCOPES } from '../src/core/scopes.ts';
import { createClient } from '../src/flows/manage/clients.ts';
import { addResource } from '../src/flows/manage/resources.ts';
import { apiFormPage, appFormPage, userFormPage } from '../src/ui/console.ts';
import { providerFormPage } from '../src/ui/console-providers.ts';
import { webhookFormPage } from '../src/ui/console-webhooks.ts';
import { scimTokenFormPage } from '../src/ui/console-scim.ts';
import { trustedIssuerFormPage } from '../src/ui/console-trust.ts';
import { messages } from '../src/ui/i18n.ts';
import { isMessageKey } from '../src/ui/i18n.ts';
import { runTessera } from './helpers/cli.ts';
import { manageDeps } from './helpers/manage.ts';
import { REDIRECT_URI, startTestServer, type TestServer } from './helpers/server.ts';

/** A value for each writable client field, each unlike its default, that the rules accept together. */
const EVERY_CLIENT_FIELD: Readonly<Record<string, unknown>> = {
  client_name: 'Every Field',
  token_endpoint_auth_method: 'client_secret_post',
  redirect_uris: [REDIRECT_URI, 'https://app.example/callback'],
  scope: 'openid profile',
  grant_types: ['authorization_code', 'device_code', 'refresh_token', 'token-exchange'],
  token_exchange_audiences: ['https://downstream.example/api'],
  web_origins: [],
  device_networks: ['192.0.2.0/24'],
  jwks: {
    keys: [
      {
        kty: 'EC',
        crv: 'P-256',
        x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
        y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
        kid: 'k1',
        use: 'sig',
        alg: 'ES256',
      },
    ],
  },
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

/** An admin API operation as its OpenAPI document has it. */
interface OpenApiOperation {
  requestBody?: { content: Record<string, { schema: { properties: Record<string, { writeOnly?: boolean; readOnly?: boolean }> } }> };
  responses: Record<string, { content?: Record<string, { schema: { properties?: Record<string, unknown> } }> }>;
}
type OpenApiDocument = { paths: Record<string, Record<string, OpenApiOperation>> };

const requestFields = (operation: OpenApiOperation) => Object.keys(operation.requestBody!.content['application/json']!.schema.properties);
const answerFields = (operation: OpenApiOperation, status: string) =>
  Object.keys(operation.responses[status]!.content!['application/json']!.schema.properties ?? {});

/** Every row of `table` in the OpenAPI document: in the request of each operation that takes it, in every answer (POST, GET, PATCH) unless write-only. */
function assertOpenApiHas(document: OpenApiDocument, table: FieldTable, paths: { readonly collection: string; readonly item: string }): void {
  const create = document.paths[paths.collection]!['post']!;
  // A noun none of whose fields changes (a webhook) has no PATCH.
  const update = document.paths[paths.item]!['patch'];
  assert.equal(
    update !== undefined,
    table.some((field) => field.update),
    `PATCH ${paths.item} exists when a field changes`,
  );
  const read = document.paths[paths.item]!['get']!;
  for (const field of table) {
    assert.equal(requestFields(create).includes(field.name), field.create, `POST ${paths.collection} body: ${field.name}`);
    if (update !== undefined) assert.equal(requestFields(update).includes(field.name), field.update, `PATCH ${paths.item} body: ${field.name}`);
    if (field.writeOnly) {
      assert.equal(create.requestBody!.content['application/json']!.schema.properties[field.name]?.writeOnly, true, `${field.name} is write-only`);
      assert.ok(!answerFields(read, '200').includes(field.name), `GET ${paths.item} never answers ${field.name}`);
      continue;
    }
    assert.ok(answerFields(read, '200').includes(field.name), `GET ${paths.item} answer: ${field.name}`);
    assert.ok(answerFields(create, '201').includes(field.name), `POST ${paths.collection} answer: ${field.name}`);
    if (update !== undefined) assert.ok(answerFields(update, '200').includes(field.name), `PATCH ${paths.item} answer: ${field.name}`);
  }
}

/** Every option of the table's command for `operation` named in its help (for a noun of `kind`, those that apply). */
function assertHelpNames(table: FieldTable, command: string, operation: 'create' | 'update', kind?: string): void {
  const help = usageEntries(USAGE).find((entry) => entry.name === command)!.text;
  for (const option of Object.keys(cliOptions(table, operation, kind).options)) {
    const named = option.startsWith('no-') ? new RegExp(`--${option}\\b|--\\[no-\\]${option.slice(3)}\\b`) : new RegExp(`--(?:\\[no-\\])?${option}\\b`);
    assert.match(help, named, `${command} --help names --${option}`);
  }
}

/** The table's writable rows are the fields `every` sets, and `elsewhere` (fields a case of their own sets). */
function assertCovers(table: FieldTable, every: Readonly<Record<string, unknown>>, elsewhere: readonly string[] = []): void {
  assert.deepEqual(
    [...Object.keys(every), ...elsewhere].sort(),
    table
      .filter(writable)
      .map((field) => field.name)
      .sort(),
  );
}

/** Each row with a control is in `page` by its name, its label a message of every language. */
function assertFormHas(table: FieldTable, page: string): void {
  for (const field of table) {
    if (field.form === null) continue;
    assert.ok(isMessageKey(field.form.label), `${field.name}'s label ${field.form.label} is a message`);
    assert.match(page, new RegExp(`name="${field.name}"`), `the form has ${field.name}`);
  }
}

/**
 * What the form shows is what it posts: `values` (the form's) posted as a browser posts them,
 * a ticked box as "on" and an unticked one not at all, read back as `every`. `rows`: those
 * compared (each with a control by default); `names`: the form's names posted (those of
 * `values` by default); `absent`: what a row `every` leaves out reads back as.
 */
function assertFormPostsBack(
  table: FieldTable,
  values: Readonly<Record<string, unknown>>,
  every: Readonly<Record<string, unknown>>,
  options: { readonly rows?: readonly Field[]; readonly names?: readonly string[]; readonly absent?: null } = {},
): void {
  const posted: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(values)) if (value !== false) posted[name] = value === true ? 'on' : (value as string | string[]);
  const input = inputOf(table, postedValues(table, posted), options.names ?? Object.keys(values));
  for (const field of options.rows ?? table.filter((row) => row.form !== null))
    assert.deepEqual(input[field.name], field.name in every ? every[field.name] : options.absent, `${field.name} through the form`);
}

/** A refusal about a row the command takes names the row's option. */
function assertRefusalsName(table: FieldTable): void {
  for (const field of table)
    if (field.cli !== null) assert.equal(optionLabel(field.name), `--${field.cli.option}`, `a refusal about ${field.name} names its option`);
}

let server: TestServer;
let token: string;

before(async () => {
  server = await startTestServer();
  const { client, secret } = await createClient(manageDeps(server), { client_name: 'CI', grant_types: ['client_credentials'], scope: ADMIN_SCOPES.join(' ') });
  // The API EVERY_CLIENT_FIELD's token exchange is for.
  await addResource(manageDeps(server), {
    identifier: 'https://downstream.example/api',
    name: 'Downstream',
    scopes: [{ name: 'downstream:read', description: 'Read' }],
  });
  const config = await oidc.discovery(new URL(server.url), client.id, undefined, oidc.ClientSecretBasic(secret!), { execute: [oidc.allowInsecureRequests] });
  token = (await oidc.clientCredentialsGrant(config, { resource: `${server.config.issuer}/admin` })).access_token;
});
after(() => server.close());

/** The admin API, with a token holding every admin scope. */
async function api(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Headers; body: Record<string, unknown> }> {
  const response = await fetch(`${server.url}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, headers: response.headers, body: response.status === 204 ? {} : ((await response.json()) as Record<string, unknown>) };
}

/** A console frame to render a page with, outside a request. */
const consoleFrame = (here: string) =>
  ({
    ui: { site: server.config.site, t: messages('en'), here },
    csrf: 'x',
    operator: { name: 'Ada', role: 'admin' },
    section: 'apis',
    paths: { dashboard: '/c', users: '/c/u', apps: '/c/a', apis: '/c/p', providers: '/c/i', events: '/c/e', keys: '/c/k' },
  }) as never;

describe('the client field table in every door', () => {
  it('has the table cover every field the test sets, and each writable field a value here', () => {
    // jwks_uri is the other way to give jwks (one or the other): it has a case of its own below.
    // client_id is chosen only to match an identity provider's (docs/agents.md): test/id-jag.test.ts.
    const writableNames = CLIENT_FIELDS.filter(writable)
      .filter((field) => field.create && field.name !== 'jwks_uri' && field.name !== 'client_id')
      .map((field) => field.name);
    assert.deepEqual(Object.keys(EVERY_CLIENT_FIELD).sort(), writableNames.sort());
  });

  it('puts every row in the OpenAPI document: the requests of the operations that take it, and every answer', async () => {
    const document = (await api('GET', '/openapi.json')).body as unknown as OpenApiDocument;
    assertOpenApiHas(document, CLIENT_FIELDS, { collection: '/clients', item: '/clients/{client_id}' });
  });

  it("puts every row with a control in the console's form, with a label in every language", () => {
    const ui = { site: server.config.site, t: messages('en'), here: '/console/apps/new' };
    const values = formValues(CLIENT_FIELDS, EVERY_CLIENT_FIELD);
    const page = appFormPage(
      {
        ui,
        csrf: 'x',
        operator: { name: 'Ada', role: 'admin' },
        section: 'apps',
        paths: { dashboard: '/c', users: '/c/u', apps: '/c/a', apis: '/c/p', events: '/c/e', keys: '/c/k' },
      } as never,
      { title: 'New', action: '/c/a', submit: 'Save', values, edit: null },
    );
    assertFormHas(CLIENT_FIELDS, page);
    // An empty nullable value is posted as null: cleared.
    assertFormPostsBack(CLIENT_FIELDS, values, EVERY_CLIENT_FIELD, { absent: null });
  });

  it("gives every row an option of the command's, named in its help and in its refusals", () => {
    assertHelpNames(CLIENT_FIELDS, 'client add', 'create');
    assertHelpNames(CLIENT_FIELDS, 'client update', 'update');
    assertRefusalsName(CLIENT_FIELDS);
  });

  it('reads back a registration with every field the same through the command, the admin API and the console', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-fields-'));
    try {
      const jwksFile = join(dir, 'jwks.json');
      writeFileSync(jwksFile, JSON.stringify(EVERY_CLIENT_FIELD['jwks']));
      const e = EVERY_CLIENT_FIELD as { readonly [field: string]: string & string[] } & Readonly<
        Record<
          | 'client_name'
          | 'token_endpoint_auth_method'
          | 'redirect_uris'
          | 'scope'
          | 'grant_types'
          | 'device_networks'
          | 'token_exchange_audiences'
          | 'pkce'
          | 'request_object_signing_alg'
          | 'post_logout_redirect_uris'
          | 'backchannel_logout_uri',
          string & string[]
        >
      >;
      const args = [
        'client',
        'add',
        '--name',
        e['client_name'],
        '--auth-method',
        e['token_endpoint_auth_method'],
        ...e['redirect_uris'].flatMap((uri) => ['--redirect-uri', uri]),
        '--scope',
        e['scope'],
        ...e['grant_types'].flatMap((grant) => ['--grant', grant]),
        ...e['device_networks'].flatMap((cidr) => ['--device-network', cidr]),
        ...e['token_exchange_audiences'].flatMap((uri) => ['--exchange-audience', uri]),
        '--jwks-file',
        jwksFile,
        '--pkce',
        e['pkce'],
        '--request-object-signing-alg',
        e['request_object_signing_alg'],
        ...e['post_logout_redirect_uris'].flatMap((uri) => ['--post-logout-redirect-uri', uri]),
        '--backchannel-logout-uri',
        e['backchannel_logout_uri'],
        '--require-phishing-resistant',
        '--first-party',
        '--require-dpop',
        '--require-par',
        '--json',
      ];
      const added = await runTessera(args, { TESSERA_DATABASE: server.config.database });
      assert.equal(added.code, 0, added.stderr);
      const fromCli = JSON.parse(added.stdout) as Record<string, unknown>;
      const fromApi = await api('POST', '/clients', EVERY_CLIENT_FIELD);
      assert.equal(fromApi.status, 201, JSON.stringify(fromApi.body));
      const comparable = (registration: Record<string, unknown>): Record<string, unknown> => {
        const { client_id: _id, client_secret: _secret, created_at: _at, ...rest } = registration;
        return {
          ...rest,
          grant_types: (rest['grant_types'] as string[]).map((grant) =>
            grant
              .replace('urn:ietf:params:oauth:grant-type:device_code', 'device_code')
              .replace('urn:ietf:params:oauth:grant-type:token-exchange', 'token-exchange'),
          ),
        };
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
      const changed = await runTessera(
        [
          'client',
          'update',
          id,
          '--no-request-object-signing-alg',
          '--no-first-party',
          '--remove-device-network',
          '192.0.2.0/24',
          '--add-device-network',
          '198.51.100.0/24',
          '--pkce',
          'required',
          '--json',
        ],
        { TESSERA_DATABASE: server.config.database },
      );
      assert.equal(changed.code, 0, changed.stderr);
      const after = (await api('GET', `/clients/${id}`)).body;
      assert.deepEqual(
        [after['request_object_signing_alg'], after['first_party'], after['device_networks'], after['pkce']],
        [undefined, undefined, ['198.51.100.0/24'], 'required'],
      );
      const etag = (await api('GET', `/clients/${id}`)).headers.get('etag')!;
      const patched = await api(
        'PATCH',
        `/clients/${id}`,
        { request_object_signing_alg: 'RS256', jwks_uri: 'https://app.example/jwks.json', pkce: 'optional-without-nonce' },
        { 'if-match': etag },
      );
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.deepEqual(
        [patched.body['request_object_signing_alg'], patched.body['pkce'], patched.body['jwks_uri']],
        ['RS256', 'optional-without-nonce', 'https://app.example/jwks.json'],
        'fields the admin API once refused as unknown',
      );
      const shown = await runTessera(['client', 'show', id, '--json'], { TESSERA_DATABASE: server.config.database });
      assert.equal((JSON.parse(shown.stdout) as Record<string, unknown>)['jwks_uri'], 'https://app.example/jwks.json', 'the command reads what the API wrote');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A value for each writable API field, each unlike its default, that the rules accept together. */
const EVERY_RESOURCE_FIELD: Readonly<Record<string, unknown>> = {
  identifier: 'https://every.example/api',
  name: 'Every Field',
  scopes: [
    { name: 'every:read', description: 'See everything' },
    { name: 'every:write', description: 'Change everything' },
  ],
  access_token_ttl: 600,
  signing_alg: 'ES256',
  introspection_secret: true,
};

describe('the API (resource) field table in every door', () => {
  it('has the table cover every field the test sets', () => {
    assertCovers(RESOURCE_FIELDS, EVERY_RESOURCE_FIELD);
  });

  it('puts every row in the OpenAPI document: the requests of the operations that take it, and every answer but the write-only', async () => {
    assertOpenApiHas((await api('GET', '/openapi.json')).body as unknown as OpenApiDocument, RESOURCE_FIELDS, {
      collection: '/resources',
      item: '/resources/{identifier}',
    });
  });

  it("puts every row with a control in the console's form, and reads back what it shows", () => {
    const values = formValues(RESOURCE_FIELDS, EVERY_RESOURCE_FIELD);
    const page = apiFormPage(consoleFrame('/console/apis/new'), { title: 'New', action: '/c/p', submit: 'Register', values, edit: null, cancel: '/c/p' });
    const editPage = apiFormPage(consoleFrame('/console/apis/x'), {
      title: 'Edit',
      action: '/c/p/x',
      submit: 'Save',
      values,
      edit: { original: 'x', identifier: 'x' },
      cancel: '/c/p',
    });
    for (const field of RESOURCE_FIELDS) {
      if (field.form === null) continue;
      assert.ok(isMessageKey(field.form.label), `${field.name}'s label ${field.form.label} is a message`);
      assert.equal(new RegExp(`name="${field.name}"`).test(page), field.create, `the registration form has ${field.name}`);
      assert.equal(new RegExp(`name="${field.name}"`).test(editPage), field.update, `the edit form has ${field.name}`);
    }
    const posted: Record<string, string> = {};
    for (const [name, value] of Object.entries(values)) if (value !== false) posted[name] = value === true ? 'on' : String(value);
    const input = inputOf(RESOURCE_FIELDS, postedValues(RESOURCE_FIELDS, posted), Object.keys(values));
    for (const field of RESOURCE_FIELDS.filter((row) => row.form !== null))
      assert.deepEqual(input[field.name], EVERY_RESOURCE_FIELD[field.name], `${field.name} through the form`);
  });

  it("gives every row an option of the command's, named in its help and in its refusals", () => {
    assertHelpNames(RESOURCE_FIELDS, 'resource add', 'create');
    assertHelpNames(RESOURCE_FIELDS, 'resource update', 'update');
    assertRefusalsName(RESOURCE_FIELDS);
  });

  it('reads back an API with every field the same through the command and the admin API, and each change of an update', async () => {
    const e = EVERY_RESOURCE_FIELD as {
      identifier: string;
      name: string;
      scopes: { name: string; description: string }[];
      access_token_ttl: number;
      signing_alg: string;
    };
    const { introspection_secret: _asked, ...registered } = EVERY_RESOURCE_FIELD;
    const expected = { ...registered, introspection: true };
    const withoutSecret = ({ introspection_secret: _, ...rest }: Record<string, unknown>) => rest;
    const added = await runTessera(
      [
        'resource',
        'add',
        '--identifier',
        e['identifier'],
        '--name',
        e['name'],
        ...e['scopes'].flatMap((scope) => ['--scope', `${scope.name}=${scope.description}`]),
        '--access-token-ttl',
        String(e['access_token_ttl']),
        '--signing-alg',
        e['signing_alg'],
        '--introspection-secret',
        '--json',
      ],
      { TESSERA_DATABASE: server.config.database },
    );
    assert.equal(added.code, 0, added.stderr);
    assert.match(String((JSON.parse(added.stdout) as Record<string, unknown>)['introspection_secret']), /^[\w-]{43}$/, 'the secret, once');
    const path = `/resources/${encodeURIComponent(e['identifier'])}`;
    assert.deepEqual((await api('GET', path)).body, expected, 'the command registers every field');
    assert.equal((await api('DELETE', path)).status, 204);

    const fromApi = await api('POST', '/resources', EVERY_RESOURCE_FIELD);
    assert.equal(fromApi.status, 201, JSON.stringify(fromApi.body));
    assert.match(String(fromApi.body['introspection_secret']), /^[\w-]{43}$/);
    assert.deepEqual(withoutSecret(fromApi.body), expected, 'the admin API registers every field');
    assert.deepEqual(
      formValues(RESOURCE_FIELDS, (await api('GET', path)).body),
      { ...formValues(RESOURCE_FIELDS, EVERY_RESOURCE_FIELD), introspection_secret: false },
      'the console form shows what was registered',
    );

    const changed = await runTessera(
      [
        'resource',
        'update',
        e['identifier'],
        '--name',
        'Renamed',
        '--scope',
        'every:read=See it all',
        '--default-access-token-ttl',
        '--signing-alg',
        'RS256',
        '--json',
      ],
      { TESSERA_DATABASE: server.config.database },
    );
    assert.equal(changed.code, 0, changed.stderr);
    const read = (await api('GET', path)).body;
    assert.deepEqual(
      [read['name'], read['scopes'], read['access_token_ttl'], read['signing_alg']],
      ['Renamed', [{ name: 'every:read', description: 'See it all' }], null, 'RS256'],
    );
    const patched = await api('PATCH', path, { name: 'Every Field', scopes: EVERY_RESOURCE_FIELD['scopes'], access_token_ttl: 600, signing_alg: 'ES256' });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual(patched.body, expected, 'the admin API changes every field an update takes');
  });
});

/** A value for each writable provider field of each kind, each unlike its default, that the rules accept together. */
const EVERY_PROVIDER_FIELD: Readonly<Record<string, Readonly<Record<string, unknown>>>> = Object.fromEntries(
  Object.entries({
    oidc: { issuer: 'https://id.example.com', client_id: 'every-client', client_secret: 'oidc secret', scopes: ['openid', 'email'], trust_upstream_mfa: true },
    github: {
      client_id: 'every-app',
      client_secret: 'github secret',
      allowed_organizations: ['octo-org'],
      web_url: 'https://github.example.com',
      api_url: 'https://github.example.com/api/v3',
    },
    ldap: {
      url: 'ldap://ldap.example.com',
      start_tls: true,
      bind_dn: 'cn=tessera,dc=example,dc=com',
      bind_password: 'bind secret',
      user_search_base: 'ou=people,dc=example,dc=com',
      user_filter: '(mail={username})',
      group_search_base: 'ou=groups,dc=example,dc=com',
      group_filter: '(uniqueMember={dn})',
    },
  }).map(([kind, own]) => [
    kind,
    {
      kind,
      id: `every-${kind}`,
      name: `Every ${kind}`,
      position: 7,
      ...own,
      allowed_domains: ['example.com'],
      domains: ['example.org'],
      claim_mapping: { username: 'preferred_username' },
      only: true,
      allow_linking: true,
    },
  ]),
);

/** The command's arguments and standard input that give `values`, option by option as the table says. */
function argumentsOf(table: FieldTable, operation: 'create' | 'update', values: Readonly<Record<string, unknown>>): { args: string[]; stdin: string } {
  const args: string[] = [];
  let stdin = '';
  for (const field of table) {
    const value = values[field.name];
    if (field.cli === null || !field[operation] || value === undefined) continue;
    const option = `--${field.cli.option}`;
    if (field.cli.stdin) {
      args.push(option);
      stdin = `${String(value)}\n`;
    } else if (value === true) args.push(option);
    else if (Array.isArray(value)) args.push(...value.flatMap((item: unknown) => [option, String(item)]));
    else if (typeof value === 'object' && value !== null) args.push(...Object.entries(value).flatMap(([key, item]) => [option, `${key}=${String(item)}`]));
    else args.push(option, String(value));
  }
  return { args, stdin };
}

describe('the provider field table in every door', () => {
  const kinds = Object.keys(EVERY_PROVIDER_FIELD);
  /** What an answer has of a provider given `values`: each field but the secrets, which it says are set. */
  const answerOf = (values: Readonly<Record<string, unknown>>) => {
    const { client_secret: clientSecret, bind_password: bindPassword, ...rest } = values;
    return { ...rest, ...(clientSecret === undefined ? {} : { client_secret_set: true }), ...(bindPassword === undefined ? {} : { bind_password_set: true }) };
  };
  const comparable = (answer: Record<string, unknown>) => {
    const { created_at: _created, updated_at: _updated, redirect_uri: _redirect, ...rest } = answer;
    return rest;
  };

  it('has the table cover every field the test sets, for each kind', () => {
    for (const kind of kinds) {
      const applying = PROVIDER_FIELDS.filter((field) => writable(field) && (!('kinds' in field) || (field.kinds as readonly string[]).includes(kind)));
      assert.deepEqual(Object.keys(EVERY_PROVIDER_FIELD[kind]!).sort(), applying.map((field) => field.name).sort(), kind);
    }
  });

  it('puts every row in the OpenAPI document: the requests of the operations that take it, and every answer but the secrets', async () => {
    assertOpenApiHas((await api('GET', '/openapi.json')).body as unknown as OpenApiDocument, PROVIDER_FIELDS, {
      collection: '/providers',
      item: '/providers/{id}',
    });
  });

  it("gives every row an option of the command's for each kind it applies to, named in that kind's help and in its refusals", () => {
    const add = usageEntries(USAGE).filter((entry) => entry.name === 'provider add');
    for (const kind of kinds) {
      // A kind's own options on its line; those of every kind on the line after them all.
      const own = add.find((entry) => entry.text.startsWith(`  provider add ${kind} `))!.text;
      const every = add.map((entry) => entry.text).join('\n');
      for (const [option, { field }] of Object.entries(cliOptions(PROVIDER_FIELDS, 'create', kind).bindings)) {
        assert.match(field.kinds === undefined ? every : own, new RegExp(`--${option}\\b`), `provider add ${kind} --help names --${option}`);
      }
    }
    assertHelpNames(PROVIDER_FIELDS, 'provider update', 'update');
    assertRefusalsName(PROVIDER_FIELDS);
  });

  it("puts every row with a control in the console's form of each kind it applies to, and reads back what it shows but the secrets", () => {
    for (const kind of kinds) {
      const every = EVERY_PROVIDER_FIELD[kind]!;
      const values = formValues(PROVIDER_FIELDS, every);
      const view = { title: 'Provider', action: '/c/i', submit: 'Add', kind, values, cancel: '/c/i' };
      const page = providerFormPage(consoleFrame('/console/providers/new'), { ...view, edit: null });
      const editPage = providerFormPage(consoleFrame('/console/providers/x'), { ...view, edit: { original: 'x', facts: [] } });
      for (const field of PROVIDER_FIELDS) {
        if (field.form === null) continue;
        assert.ok(isMessageKey(field.form.label), `${field.name}'s label ${field.form.label} is a message`);
        const applies = !('kinds' in field) || (field.kinds as readonly string[]).includes(kind);
        assert.equal(new RegExp(`name="${field.name}"`).test(page), applies && field.create, `the ${kind} form has ${field.name}`);
        assert.equal(new RegExp(`name="${field.name}"`).test(editPage), applies && field.update, `the ${kind} edit form has ${field.name}`);
      }
      assert.doesNotMatch(editPage, /type="password"[^>]* value="[^"]/, 'a secret is never filled in');
      const posted: Record<string, string | string[]> = {};
      for (const [name, value] of Object.entries(values)) if (value !== false && value !== '') posted[name] = value === true ? 'on' : (value as string);
      const input = inputOf(PROVIDER_FIELDS, postedValues(PROVIDER_FIELDS, posted), Object.keys(every));
      for (const field of PROVIDER_FIELDS.filter((row) => row.form !== null && every[row.name] !== undefined)) {
        // A secret is not shown, so not posted back: left empty, the stored one stays.
        assert.deepEqual(input[field.name], field.form?.control === 'secret' ? undefined : every[field.name], `${kind} ${field.name} through the form`);
      }
    }
  });

  for (const kind of ['oidc', 'github', 'ldap']) {
    it(`reads back ${kind === 'ldap' ? 'a directory' : `a provider of kind ${kind}`} with every field the same through the command and the admin API, its secret never`, async (t) => {
      const every = EVERY_PROVIDER_FIELD[kind]!;
      const { kind: _kind, ...options } = every;
      const { args, stdin } = argumentsOf(PROVIDER_FIELDS, 'create', options);
      const added = await runTessera(['provider', 'add', kind, ...args, '--json'], { TESSERA_DATABASE: server.config.database }, stdin);
      assert.equal(added.code, 0, added.stderr);
      assert.deepEqual(comparable(JSON.parse(added.stdout) as Record<string, unknown>), answerOf(every), 'the command adds every field');
      const path = `/providers/${String(every['id'])}`;
      t.after(() => api('DELETE', path));
      assert.deepEqual(comparable((await api('GET', path)).body), answerOf(every), 'the admin API reads what the command wrote');
      assert.equal((await api('DELETE', path)).status, 204);

      const fromApi = await api('POST', '/providers', every);
      assert.equal(fromApi.status, 201, JSON.stringify(fromApi.body));
      assert.deepEqual(comparable(fromApi.body), answerOf(every), 'the admin API adds every field');
      assert.ok(!JSON.stringify(fromApi.body).includes(' secret'), 'never a secret in an answer');

      // Every option of an update through the command, then every field back through the admin API.
      const { id: _id, only: _only, ...changes } = options;
      const renamed = { ...changes, name: `Renamed ${kind}`, position: 3 };
      const update = argumentsOf(PROVIDER_FIELDS, 'update', renamed);
      const changed = await runTessera(
        ['provider', 'update', String(every['id']), ...update.args, '--no-only', '--json'],
        { TESSERA_DATABASE: server.config.database },
        update.stdin,
      );
      assert.equal(changed.code, 0, changed.stderr);
      const after = (await api('GET', path)).body;
      assert.deepEqual([after['name'], after['position'], after['only']], [`Renamed ${kind}`, 3, false]);
      const patched = await api('PATCH', path, { ...changes, only: true });
      assert.equal(patched.status, 200, JSON.stringify(patched.body));
      assert.deepEqual(comparable(patched.body), answerOf(every), 'the admin API changes every field an update takes');
    });
  }
});

/**
 * The blocks of a noun whose secret is made once, answered when it is made and never again
 * (a webhook's signing secret, a SCIM token): the table in every door, and a registration
 * with every field read back the same through the command and the admin API.
 */
function describeMadeOnce(noun: {
  readonly name: string;
  readonly table: FieldTable;
  readonly every: Readonly<Record<string, unknown>>;
  readonly paths: { readonly collection: string; readonly item: string };
  readonly form: (values: Record<string, unknown>) => string;
  /** The command's words that add one, and the entry of its help that names their options. */
  readonly add: readonly string[];
  readonly help: string;
  /** A second with the same fields is refused (409): their name is taken once. */
  readonly named: boolean;
  /** The answer's field that holds the secret, and what it looks like. */
  readonly secret: { readonly field: string; readonly pattern: RegExp };
  readonly openApiCase: string;
}): void {
  const { table, every, paths, secret } = noun;
  describe(`the ${noun.name} field table in every door`, () => {
    it('has the table cover every field the test sets', () => {
      assertCovers(table, every);
    });

    it(`puts every row in the OpenAPI document: ${noun.openApiCase}, and every answer`, async () => {
      assertOpenApiHas((await api('GET', '/openapi.json')).body as unknown as OpenApiDocument, table, paths);
    });

    it("puts every row with a control in the console's form, with a label in every language, and reads back what it shows", () => {
      const values = formValues(table, every);
      assertFormHas(table, noun.form(values));
      assertFormPostsBack(table, values, every);
    });

    it("gives every row an option of the command's, named in its help and in its refusals", () => {
      assertHelpNames(table, noun.help, 'create');
      assertRefusalsName(table);
    });

    it(`reads back a ${noun.name} with every field the same through the command and the admin API, its ${secret.field} only when made`, async () => {
      const { args } = argumentsOf(table, 'create', every);
      const added = await runTessera([...noun.add, ...args, '--json'], { TESSERA_DATABASE: server.config.database });
      assert.equal(added.code, 0, added.stderr);
      const { [secret.field]: made, ...fromCommand } = JSON.parse(added.stdout) as Record<string, unknown>;
      assert.match(String(made), secret.pattern);
      const path = `${paths.collection}/${String(fromCommand['id'])}`;
      const read = (await api('GET', path)).body;
      assert.deepEqual(read, fromCommand, 'the admin API reads what the command wrote, every field of the table');
      assert.deepEqual(Object.keys(read).sort(), table.map((field) => field.name).sort());
      for (const field of table.filter(writable)) assert.deepEqual(read[field.name], every[field.name], field.name);
      if (noun.named) assert.equal((await api('POST', paths.collection, every)).status, 409, 'a name is taken once');
      assert.equal((await api('DELETE', path)).status, 204);

      const fromApi = await api('POST', paths.collection, every);
      assert.equal(fromApi.status, 201, JSON.stringify(fromApi.body));
      const { [secret.field]: answeredSecret, ...answered } = fromApi.body;
      assert.match(String(answeredSecret), secret.pattern);
      assert.deepEqual((await api('GET', `${paths.collection}/${String(answered['id'])}`)).body, answered, 'the admin API makes every field');
      assert.equal((await api('DELETE', `${paths.collection}/${String(answered['id'])}`)).status, 204);
    });
  });
}

describeMadeOnce({
  name: 'webhook',
  table: WEBHOOK_FIELDS,
  // Each unlike any default.
  every: { url: 'https://hooks.example.com/tessera?every=field', events: ['user.disabled', 'client.deleted', 'signin.failed'] },
  paths: { collection: '/webhooks', item: '/webhooks/{id}' },
  form: (values) => webhookFormPage(consoleFrame('/console/webhooks/new'), { action: '/c/w', values: values as never, cancel: '/c/w' }),
  add: ['webhook', 'add'],
  help: 'webhook add',
  named: false,
  secret: { field: 'secret', pattern: /^whsec_/ },
  openApiCase: 'the request that adds one',
});

describeMadeOnce({
  name: 'SCIM token',
  table: SCIM_TOKEN_FIELDS,
  every: { name: 'Entra ID (every field)' },
  paths: { collection: '/scim-tokens', item: '/scim-tokens/{id}' },
  form: (values) => scimTokenFormPage(consoleFrame('/console/scim/tokens/new'), { action: '/c/s/tokens', values: values as never, cancel: '/c/s' }),
  add: ['scim', 'token', 'add'],
  help: 'scim token',
  named: true,
  secret: { field: 'token', pattern: /^scim_/ },
  openApiCase: 'the request that makes one',
});

/** The users' table as rows of any kind (the test reads kinds the table may not have yet). */
const USER_ROWS: readonly Field[] = USER_FIELDS;

/** A value for each field a new user takes (but their username), each unlike its default, that the rules accept together. */
const EVERY_USER_FIELD: Readonly<Record<string, unknown>> = {
  name: 'Ada Lovelace',
  given_name: 'Ada',
  family_name: 'Lovelace',
  middle_name: 'Augusta',
  nickname: 'Ada',
  profile: 'https://example.com/ada',
  picture: 'https://example.com/ada.png',
  website: 'https://ada.example/',
  email: 'ada@example.com',
  email_verified: true,
  gender: 'female',
  birthdate: '1815-12-10',
  zoneinfo: 'Europe/London',
  locale: 'en-GB',
  phone_number: '+44 20 7946 0958',
  phone_number_verified: true,
  address: { street_address: '12 St James’s Square\nFlat 1', locality: 'London', postal_code: 'SW1Y 4LB', country: 'United Kingdom' },
  localized_names: { 'ja-Kana-JP': { name: 'エイダ ラブレス' } },
};

/** The command's arguments that give `values`, option by option as the users' table has them. */
function userArgs(values: Readonly<Record<string, unknown>>): string[] {
  return USER_ROWS.flatMap((field): string[] => {
    const value = values[field.name];
    if (field.cli === null || value === undefined) return [];
    if (field.type.kind === 'flag') return value === true ? [`--${field.cli.option}`] : [];
    if (field.type.kind === 'members') {
      return Object.entries(value as Record<string, string>).flatMap(([member, text]) => [`--${field.cli!.option}-${member.replaceAll('_', '-')}`, text]);
    }
    return [`--${field.cli.option}`, String(value)];
  });
}

describe('the user field table in every door', () => {
  it('has the table cover every field the test sets, and each field a new user takes a value here', () => {
    const names = USER_ROWS.filter((field) => field.create && field.name !== 'username').map((field) => field.name);
    assert.deepEqual(Object.keys(EVERY_USER_FIELD).sort(), names.sort());
  });

  it('puts every row in the OpenAPI document: the requests of the operations that take it, and every answer', async () => {
    assertOpenApiHas((await api('GET', '/openapi.json')).body as unknown as OpenApiDocument, USER_ROWS, { collection: '/users', item: '/users/{username}' });
  });

  it("puts every row with a control in the console's profile form, with a label in every language", () => {
    const ui = { site: server.config.site, t: messages('en'), here: '/console/users/ada/profile' };
    const values = formValues(USER_ROWS, EVERY_USER_FIELD);
    const page = userFormPage(
      {
        ui,
        csrf: 'x',
        operator: { name: 'Ada', role: 'admin' },
        section: 'users',
        paths: { dashboard: '/c', users: '/c/u', apps: '/c/a', apis: '/c/p', events: '/c/e', keys: '/c/k' },
      } as never,
      { username: 'ada', action: '/c/u/ada/profile', values, version: '"1"', original: '' },
    );
    for (const field of USER_ROWS) {
      if (field.form === null) continue;
      assert.ok(isMessageKey(field.form.label), `${field.name}'s label ${field.form.label} is a message`);
      if (field.type.kind === 'members')
        for (const member of field.type.members) assert.ok(isMessageKey(`${field.form.label}.${member.name}`), `${field.name}.${member.name} has a label`);
    }
    for (const key of formKeys(USER_ROWS)) assert.match(page, new RegExp(`name="${key.replace('.', '\\.')}"`), `the form has ${key}`);
    assertFormPostsBack(USER_ROWS, values, EVERY_USER_FIELD, { names: formKeys(USER_ROWS), absent: null });
  });

  it("gives every row an option of the command's, named in its help", () => {
    assertHelpNames(USER_ROWS, 'user add', 'create');
    assertHelpNames(USER_ROWS, 'user update', 'update');
  });

  it('reads back a user with every field the same through the command, the admin API and the console', async () => {
    const env = { TESSERA_DATABASE: server.config.database };
    const localized = Object.entries(EVERY_USER_FIELD['localized_names'] as Record<string, Record<string, string>>).flatMap(([tag, names]) =>
      Object.entries(names).flatMap(([claim, name]) => [`--${claim.replaceAll('_', '-')}-in`, `${tag}=${name}`]),
    );
    const added = await runTessera(
      ['user', 'add', '--username', 'ada', '--password-stdin', ...userArgs(EVERY_USER_FIELD), ...localized],
      env,
      'a long enough password\n',
    );
    assert.equal(added.code, 0, added.stderr);
    const fromCli = JSON.parse((await runTessera(['user', 'show', 'ada', '--json'], env)).stdout) as Record<string, unknown>;
    // An e-mail address is one account's: the second has its own.
    const second = { ...EVERY_USER_FIELD, email: 'ada2@example.com' };
    const fromApi = await api('POST', '/users', { username: 'ada2', password: 'a long enough password', ...second });
    assert.equal(fromApi.status, 201, JSON.stringify(fromApi.body));
    const comparable = (user: Record<string, unknown>): Record<string, unknown> =>
      Object.fromEntries(USER_ROWS.filter((field) => field.create && field.name !== 'username').map((field) => [field.name, user[field.name]]));
    assert.deepEqual(comparable(fromCli), EVERY_USER_FIELD, 'the command sets every field');
    assert.deepEqual(comparable(fromApi.body), second, 'the admin API sets every field');
    const read = await api('GET', '/users/ada2');
    assert.deepEqual(comparable(read.body), second, 'read back as written');
    assert.deepEqual(formValues(USER_ROWS, read.body), formValues(USER_ROWS, second), 'the console form shows what was written');

    // Every clearing option of an update, through the command, reads back in the admin API.
    const clears = Object.keys(cliOptions(USER_ROWS, 'update').options)
      .filter((option) => option.startsWith('no-'))
      .map((option) => `--${option}`);
    const changed = await runTessera(['user', 'update', 'ada', ...clears], env);
    assert.equal(changed.code, 0, changed.stderr);
    const after = (await api('GET', '/users/ada')).body;
    for (const field of USER_ROWS.filter((row) => row.update && row.cli !== null && row.name !== 'role')) {
      assert.equal(after[field.name], field.type.kind === 'flag' ? false : null, `${field.name} cleared by the command`);
    }
    // And set again through the admin API, read back by the command.
    const etag = (await api('GET', '/users/ada')).headers.get('etag')!;
    const { localized_names: _names, ...claims } = EVERY_USER_FIELD;
    const patched = await api('PATCH', '/users/ada', claims, { 'if-match': etag });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    const shown = JSON.parse((await runTessera(['user', 'show', 'ada', '--json'], env)).stdout) as Record<string, unknown>;
    assert.deepEqual(comparable(shown), EVERY_USER_FIELD);
    // The role, update only: the command gives it, the admin API reads it.
    assert.equal((await runTessera(['user', 'update', 'ada', '--role', 'viewer'], env)).code, 0);
    assert.equal((await api('GET', '/users/ada')).body['role'], 'viewer');
  });
});

/** A trusted issuer with its keys given (jwks_uri, the other way, has a case of its own below). */
const EVERY_TRUSTED_ISSUER_FIELD: Readonly<Record<string, unknown>> = {
  issuer: 'https://idp.every.example',
  jwks: {
    keys: [
      {
        kty: 'EC',
        crv: 'P-256',
        x: 'f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU',
        y: 'x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0',
        kid: 'idp-1',
        use: 'sig',
        alg: 'ES256',
      },
    ],
  },
};

describe('the trusted issuer field table in every door', () => {
  it('has the table cover every field the test sets', () => {
    assertCovers(TRUSTED_ISSUER_FIELDS, EVERY_TRUSTED_ISSUER_FIELD, ['jwks_uri']);
  });

  it('puts every row in the OpenAPI document: the request that adds one, and every answer', async () => {
    assertOpenApiHas((await api('GET', '/openapi.json')).body as unknown as OpenApiDocument, TRUSTED_ISSUER_FIELDS, {
      collection: '/trusted-issuers',
      item: '/trusted-issuers/{issuer}',
    });
  });

  it("puts every row with a control in the console's form, with a label in every language, and reads back what it shows", () => {
    const values = formValues(TRUSTED_ISSUER_FIELDS, EVERY_TRUSTED_ISSUER_FIELD);
    const page = trustedIssuerFormPage(consoleFrame('/console/trusted-issuers/new'), { action: '/c/t', values, cancel: '/c/t' });
    assertFormHas(TRUSTED_ISSUER_FIELDS, page);
    assertFormPostsBack(TRUSTED_ISSUER_FIELDS, values, EVERY_TRUSTED_ISSUER_FIELD, { absent: null });
  });

  it("gives every row an option of the command's, named in its help and in its refusals", () => {
    assertHelpNames(TRUSTED_ISSUER_FIELDS, 'trust add', 'create');
    assertRefusalsName(TRUSTED_ISSUER_FIELDS);
  });

  it('reads back a trusted issuer with every field the same through the command and the admin API, and each with a jwks_uri', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-trust-'));
    try {
      const jwksFile = join(dir, 'jwks.json');
      writeFileSync(jwksFile, JSON.stringify(EVERY_TRUSTED_ISSUER_FIELD['jwks']));
      const env = { TESSERA_DATABASE: server.config.database };
      const added = await runTessera(['trust', 'add', '--issuer', EVERY_TRUSTED_ISSUER_FIELD['issuer'] as string, '--jwks-file', jwksFile, '--json'], env);
      assert.equal(added.code, 0, added.stderr);
      const fromCommand = JSON.parse(added.stdout) as Record<string, unknown>;
      const path = `/trusted-issuers/${encodeURIComponent(fromCommand['issuer'] as string)}`;
      const read = (await api('GET', path)).body;
      assert.deepEqual(read, fromCommand, 'the admin API reads what the command wrote');
      for (const field of TRUSTED_ISSUER_FIELDS.filter(writable))
        assert.deepEqual(read[field.name], EVERY_TRUSTED_ISSUER_FIELD[field.name] ?? null, field.name);
      const shown = await runTessera(['trust', 'show', fromCommand['issuer'] as string], env);
      assert.match(shown.stdout, /a JWK Set of 1 key/);
      assert.equal((await api('DELETE', path)).status, 204);
      assert.equal((await api('GET', path)).status, 404);

      const fromApi = await api('POST', '/trusted-issuers', EVERY_TRUSTED_ISSUER_FIELD);
      assert.equal(fromApi.status, 201, JSON.stringify(fromApi.body));
      assert.deepEqual((await api('GET', path)).body, fromApi.body, 'the admin API adds every field');
      const listed = await runTessera(['trust', 'list', '--json'], env);
      assert.deepEqual((JSON.parse(listed.stdout) as unknown[]).length, 1);
      assert.equal((await runTessera(['trust', 'remove', fromApi.body['issuer'] as string], env)).code, 0);

      // jwks_uri: an https one through the admin API, and the command may name loopback (the operator's own machine), the admin API may not.
      const byUri = await api('POST', '/trusted-issuers', { issuer: 'https://idp.uri.example', jwks_uri: 'https://idp.uri.example/jwks.json' });
      assert.equal(byUri.status, 201, JSON.stringify(byUri.body));
      assert.equal(byUri.body['jwks_uri'], 'https://idp.uri.example/jwks.json');
      const loopback = { issuer: 'http://127.0.0.1:9999', jwks_uri: 'http://127.0.0.1:9999/.well-known/jwks.json' };
      const refused = await api('POST', '/trusted-issuers', loopback);
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body['field'], 'jwks_uri');
      assert.equal((await runTessera(['trust', 'add', '--issuer', loopback.issuer, '--jwks-uri', loopback.jwks_uri], env)).code, 0, 'the command may');
      // Both ways, neither way, twice, or this server's own issuer: refused.
      for (const body of [
        { issuer: 'https://x.example', jwks_uri: 'https://x.example/j', jwks: EVERY_TRUSTED_ISSUER_FIELD['jwks'] },
        { issuer: 'https://x.example' },
        { issuer: server.config.issuer, jwks_uri: 'https://x.example/j' },
        { issuer: 'https://x.example?q=1', jwks_uri: 'https://x.example/j' },
      ]) {
        assert.equal((await api('POST', '/trusted-issuers', body)).status, 400, JSON.stringify(body));
      }
      assert.equal((await api('POST', '/trusted-issuers', { issuer: 'https://idp.uri.example', jwks_uri: 'https://idp.uri.example/jwks.json' })).status, 409);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A value for each writable SAML service provider field but its metadata (a case of its own), each unlike its default. */
const SP_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
const EVERY_SAML_SP_FIELD: Readonly<Record<string, unknown>> = {
  entity_id: 'https://sp.example.com/every-field',
  name: 'Every Field SP',
  acs_urls: ['https://sp.example.com/acs', 'https://sp.example.com/acs/2'],
  slo_url: 'https://sp.example.com/slo',
  slo_binding: 'post',
  name_id_format: 'email',
  attributes: { mail: 'email', uid: 'preferred_username', displayName: 'name' },
  want_signed_requests: true,
  sign_response: true,
  idp_initiated: true,
  certificate: pemCertificate(selfSignedCertificate(SP_KEY, 'https://sp.example.com/every-field', 'sp')).trim(),
  encryption_certificate: pemCertificate(selfSignedCertificate(SP_KEY, 'https://sp.example.com/every-field', 'sp-encryption')).trim(),
};

describe('the SAML service provider field table in every door', () => {
  const writableRows = SAML_SP_FIELDS.filter(writable).filter((field) => field.name !== 'metadata');
  const comparable = (answer: Record<string, unknown>) => {
    const { id: _id, created_at: _created, updated_at: _updated, acs_indexes: indexes, ...rest } = answer;
    // Read only: ACS URLs given as a list are named by their position, from 0.
    const [first, second] = EVERY_SAML_SP_FIELD['acs_urls'] as string[];
    assert.deepEqual(indexes, { '0': first, '1': second });
    return rest;
  };

  it('has the table cover every field the test sets', () => {
    assert.deepEqual(Object.keys(EVERY_SAML_SP_FIELD).sort(), writableRows.map((field) => field.name).sort());
  });

  it('puts every row in the OpenAPI document: the requests that add and change one, and every answer (never its metadata)', async () => {
    assertOpenApiHas((await api('GET', '/openapi.json')).body as unknown as OpenApiDocument, SAML_SP_FIELDS, {
      collection: '/saml/service-providers',
      item: '/saml/service-providers/{id}',
    });
  });

  it("puts every row with a control in the console's form, with a label in every language, and reads back what it shows", () => {
    const values = formValues(SAML_SP_FIELDS, EVERY_SAML_SP_FIELD);
    const page = samlSpFormPage(consoleFrame('/console/saml/new'), {
      action: '/c/s',
      values,
      cancel: '/c/s',
      operation: 'create',
      metadata: 'https://id.example/saml/metadata',
    });
    assertFormHas(SAML_SP_FIELDS, page);
    assertFormPostsBack(SAML_SP_FIELDS, values, EVERY_SAML_SP_FIELD, { rows: writableRows, names: Object.keys(EVERY_SAML_SP_FIELD) });
  });

  it("gives every row an option of the command's, named in its help and in its refusals", () => {
    const help = USAGE.split('\n')
      .filter((line) => line.startsWith('  saml sp ') || /^ {10}\[/.test(line))
      .join('\n');
    for (const operation of ['create', 'update'] as const) {
      for (const option of Object.keys(cliOptions(SAML_SP_FIELDS, operation).options)) {
        const named = option.startsWith('no-') ? new RegExp(`--${option}\\b|--\\[no-\\]${option.slice(3)}\\b`) : new RegExp(`--(?:\\[no-\\])?${option}\\b`);
        assert.match(help, named, `saml sp ${operation === 'create' ? 'add' : 'update'} --help names --${option}`);
      }
    }
    assertRefusalsName(SAML_SP_FIELDS);
  });

  it('reads back an SP with every field the same through the command and the admin API', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-saml-'));
    try {
      const certificateFile = join(dir, 'sp.pem');
      writeFileSync(certificateFile, String(EVERY_SAML_SP_FIELD['certificate']));
      const encryptionFile = join(dir, 'sp-encryption.pem');
      writeFileSync(encryptionFile, String(EVERY_SAML_SP_FIELD['encryption_certificate']));
      const { certificate: _certificate, encryption_certificate: _encryption, ...rest } = EVERY_SAML_SP_FIELD;
      const { args } = argumentsOf(SAML_SP_FIELDS, 'create', rest);
      const added = await runTessera(
        ['saml', 'sp', 'add', ...args, '--certificate-file', certificateFile, '--encryption-certificate-file', encryptionFile, '--json'],
        {
          TESSERA_DATABASE: server.config.database,
        },
      );
      assert.equal(added.code, 0, added.stderr);
      const fromCommand = JSON.parse(added.stdout) as Record<string, unknown>;
      const path = `/saml/service-providers/${String(fromCommand['id'])}`;
      const read = (await api('GET', path)).body;
      assert.deepEqual(read, fromCommand, 'the admin API reads what the command wrote, every field of the table');
      assert.deepEqual(comparable(read), EVERY_SAML_SP_FIELD);
      assert.equal((await api('DELETE', path)).status, 204);

      const fromApi = await api('POST', '/saml/service-providers', EVERY_SAML_SP_FIELD);
      assert.equal(fromApi.status, 201, JSON.stringify(fromApi.body));
      assert.deepEqual(comparable(fromApi.body), EVERY_SAML_SP_FIELD, 'the admin API adds every field');
      const shown = await runTessera(['saml', 'sp', 'show', String(EVERY_SAML_SP_FIELD['entity_id']), '--json'], { TESSERA_DATABASE: server.config.database });
      assert.deepEqual(JSON.parse(shown.stdout), fromApi.body, 'the command reads what the admin API wrote');
      assert.equal((await api('DELETE', `/saml/service-providers/${String(fromApi.body['id'])}`)).status, 204);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A value for each field an organization is added with, each unlike any default (`provider` is set once one is added). */
const EVERY_ORGANIZATION_FIELD: Record<string, unknown> = {
  name: 'Every Field Inc.',
  domain: 'every-field.example',
  domain_verified: true,
  provider: null,
  require_passkey: true,
  require_second_factor: true,
};

describe('the organization field tables in every door', () => {
  before(async () => {
    const provider = await api('POST', '/providers', { kind: 'github', name: 'Every Field Hub', client_id: 'x', client_secret: 'y' });
    assert.equal(provider.status, 201, JSON.stringify(provider.body));
    EVERY_ORGANIZATION_FIELD['provider'] = provider.body['id'];
  });

  it('has the table cover every field the test sets', () => {
    assertCovers(ORGANIZATION_FIELDS, EVERY_ORGANIZATION_FIELD);
  });

  it('puts every row in the OpenAPI document: the requests that add and change one, and every answer', async () => {
    assertOpenApiHas((await api('GET', '/openapi.json')).body as unknown as OpenApiDocument, ORGANIZATION_FIELDS, {
      collection: '/organizations',
      item: '/organizations/{id}',
    });
  });

  it("puts every row with a control in the console's forms, with a label in every language, and reads back what it shows", () => {
    const values = formValues(ORGANIZATION_FIELDS, EVERY_ORGANIZATION_FIELD);
    const page = organizationFormPage(consoleFrame('/console/orgs/new'), { action: '/c/o', values, cancel: '/c/o', operation: 'create' });
    assertFormHas(ORGANIZATION_FIELDS, page);
    assertFormPostsBack(ORGANIZATION_FIELDS, values, EVERY_ORGANIZATION_FIELD);
    const members = organizationPage(consoleFrame('/console/orgs/x'), {
      title: 'Every Field Inc.',
      facts: [],
      edit: null,
      members: [],
      membersAction: '/c/o/x/members',
      memberValues: formValues(ORGANIZATION_MEMBER_FIELDS, { role: 'admin' }),
      removeHref: null,
    });
    for (const field of ORGANIZATION_MEMBER_FIELDS.filter((row) => row.form !== null)) {
      assert.ok(isMessageKey(field.form!.label), `${field.name}'s label is a message`);
      assert.match(members, new RegExp(`name="${field.name}"`), `the member form has ${field.name}`);
    }
    assert.match(members, /<option value="admin" selected>/, 'the role shown is the one given');
  });

  it("gives every row an option of the command's, named in its help and in its refusals", () => {
    assertHelpNames(ORGANIZATION_FIELDS, 'org add', 'create');
    assertHelpNames(ORGANIZATION_FIELDS, 'org update', 'update');
    assertHelpNames(ORGANIZATION_MEMBER_FIELDS, 'org member', 'create');
    assertRefusalsName([...ORGANIZATION_FIELDS, ...ORGANIZATION_MEMBER_FIELDS]);
  });

  it('reads back an organization with every field the same through the command and the admin API, and its members', async () => {
    const { args } = argumentsOf(ORGANIZATION_FIELDS, 'create', EVERY_ORGANIZATION_FIELD);
    const added = await runTessera(['org', 'add', ...args, '--json'], { TESSERA_DATABASE: server.config.database });
    assert.equal(added.code, 0, added.stderr);
    const fromCommand = JSON.parse(added.stdout) as Record<string, unknown>;
    const path = `/organizations/${String(fromCommand['id'])}`;
    const read = (await api('GET', path)).body;
    assert.deepEqual(read, fromCommand, 'the admin API reads what the command wrote, every field of the table');
    assert.deepEqual(Object.keys(read).sort(), ORGANIZATION_FIELDS.map((field) => field.name).sort());
    for (const field of ORGANIZATION_FIELDS.filter(writable)) assert.deepEqual(read[field.name], EVERY_ORGANIZATION_FIELD[field.name], field.name);
    assert.equal((await api('POST', '/organizations', { name: 'every field inc.' })).status, 409, 'a name is taken once, whatever its case');
    assert.equal(
      (await api('POST', '/organizations', { name: 'Other', domain: 'every-field.example', domain_verified: true })).status,
      409,
      'a verified domain is one organization’s',
    );
    assert.equal((await api('POST', '/organizations', { name: 'Bad', domain: 'not a domain' })).status, 400);
    assert.equal((await api('POST', '/organizations', { name: 'Unverifiable', domain_verified: true })).status, 400, 'verified needs a domain');

    // A member through the command, read through the admin API; a role changed there.
    await runTessera(['user', 'add', '--username', 'every-member', '--password-stdin'], { TESSERA_DATABASE: server.config.database }, 'correct horse battery');
    const joined = await runTessera(['org', 'member', 'add', 'Every Field Inc.', 'every-member', '--role', 'owner', '--json'], {
      TESSERA_DATABASE: server.config.database,
    });
    assert.equal(joined.code, 0, joined.stderr);
    const members = (await api('GET', `${path}/members`)).body['members'] as Record<string, unknown>[];
    assert.deepEqual(
      members.map((member) => [member['username'], member['role']]),
      [['every-member', 'owner']],
    );
    assert.equal((await api('PUT', `${path}/members/every-member`, { role: 'admin' })).body['role'], 'admin');
    assert.equal((await api('PUT', `${path}/members/every-member`, { role: 'emperor' })).status, 400);
    assert.equal((await api('PUT', `${path}/members/nobody`, {})).status, 404);
    assert.equal((await api('DELETE', `${path}/members/every-member`)).status, 204);
    assert.deepEqual((await api('GET', `${path}/members`)).body['members'], []);

    // Every field an update takes, through the admin API.
    const patched = await api('PATCH', path, { name: 'Renamed Inc.', require_passkey: false, domain: 'renamed.example' });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.deepEqual(
      [patched.body['name'], patched.body['require_passkey'], patched.body['domain_verified']],
      ['Renamed Inc.', false, false],
      'a changed domain is verified again',
    );
    assert.equal((await api('DELETE', path)).status, 204);
    assert.equal((await api('GET', path)).status, 404);
  });
});
