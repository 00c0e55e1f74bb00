import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashSecret } from '../src/core/crypto.ts';
import { GRANT_AUTHORIZATION_CODE } from '../src/core/protocol.ts';
import { openStore } from '../src/store/open.ts';
import { scratchDatabase } from './helpers/scratch.ts';
import { runTessera as tessera } from './helpers/cli.ts';
import { approvedGrant } from './store/fixtures.ts';

describe('the tessera command: API resources', () => {
  const { env } = scratchDatabase('tessera-cli-resources-');

  it('registers an API, prints its introspection secret once and keeps only its hash', async () => {
    const result = await tessera(
      [
        'resource',
        'add',
        '--identifier',
        'https://api.example.com',
        '--name',
        'Photo Library',
        '--scope',
        'photos:read=See your photos',
        '--scope',
        'photos:write=Upload and delete your photos',
        '--access-token-ttl',
        '900',
        '--introspection-secret',
        '--json',
      ],
      env,
    );
    assert.equal(result.code, 0, result.stderr);
    const printed = JSON.parse(result.stdout) as Record<string, unknown>;
    assert.deepEqual(
      { ...printed, introspection_secret: undefined },
      {
        identifier: 'https://api.example.com',
        name: 'Photo Library',
        scopes: [
          { name: 'photos:read', description: 'See your photos' },
          { name: 'photos:write', description: 'Upload and delete your photos' },
        ],
        access_token_ttl: 900,
        signing_alg: 'RS256',
        introspection_secret: undefined,
      },
    );
    const secret = printed['introspection_secret'] as string;
    assert.match(secret, /^[A-Za-z0-9_-]{43}$/);
    const store = await openStore(env['TESSERA_DATABASE']!);
    try {
      const stored = await store.resources.get('https://api.example.com');
      assert.equal(stored?.introspectionSecretHash, hashSecret(secret));
    } finally {
      await store.close();
    }

    const text = await tessera(
      ['resource', 'add', '--identifier', 'urn:example:calendar', '--name', 'Calendar', '--scope', 'calendar:read=See your calendar', '--introspection-secret'],
      env,
    );
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /Registered API "Calendar" \(urn:example:calendar\) with scopes calendar:read\./);
    assert.match(text.stdout, /introspection secret: [A-Za-z0-9_-]{43}\n/);
    assert.match(text.stdout, /shown only now/);
  });

  it('lists the APIs with their scopes, and never their secrets', async () => {
    const json = await tessera(['resource', 'list', '--json'], env);
    assert.equal(json.code, 0, json.stderr);
    const listed = JSON.parse(json.stdout) as { identifier: string; introspection: boolean; scopes: { name: string }[] }[];
    assert.deepEqual(
      listed.map((item) => [item.identifier, item.introspection, item.scopes.map((scope) => scope.name)]),
      [
        ['https://api.example.com', true, ['photos:read', 'photos:write']],
        ['urn:example:calendar', true, ['calendar:read']],
      ],
    );
    assert.doesNotMatch(json.stdout, /secret/);
    const text = await tessera(['resource', 'list'], env);
    assert.match(text.stdout, /https:\/\/api\.example\.com {2}Photo Library\n {2}scope: photos:read {2}See your photos\n/);
  });

  it('refuses a taken identifier or scope name with one clear line', async () => {
    const taken = await tessera(['resource', 'add', '--identifier', 'https://api.example.com', '--name', 'Again', '--scope', 'other:read=Other'], env);
    assert.equal(taken.code, 1);
    assert.equal(taken.stderr, 'tessera: an API with identifier https://api.example.com is already registered\n');
    const scope = await tessera(['resource', 'add', '--identifier', 'https://other.example.com', '--name', 'Other', '--scope', 'photos:read=Mine'], env);
    assert.equal(scope.code, 1);
    assert.equal(
      scope.stderr,
      'tessera: scope photos:read already belongs to Photo Library (https://api.example.com); scope names are unique across the server\n',
    );
    const listed = JSON.parse((await tessera(['resource', 'list', '--json'], env)).stdout) as unknown[];
    assert.equal(listed.length, 2, 'nothing of the refused registrations was stored');
  });

  it('refuses what RFC 8707 and RFC 6749 do not allow', async () => {
    const cases: [string[], RegExp][] = [
      [['--identifier', 'https://api.example.net#top', '--name', 'X', '--scope', 'x:read=X'], /--identifier .*must not include a fragment/],
      [['--identifier', '/relative', '--name', 'X', '--scope', 'x:read=X'], /--identifier .*must be an absolute URI/],
      [['--identifier', 'https://x.example', '--scope', 'x:read=X'], /--name is required/],
      [['--identifier', 'https://x.example', '--name', 'X'], /--scope NAME=DESCRIPTION is required/],
      [['--identifier', 'https://x.example', '--name', 'X', '--scope', 'x:read'], /--scope x:read: give what it lets/],
      [['--identifier', 'https://x.example', '--name', 'X', '--scope', 'x read=X'], /the name must be/],
      [['--identifier', 'https://x.example', '--name', 'X', '--scope', 'profile=Your profile'], /an OpenID Connect scope cannot belong to an API/],
      [['--identifier', 'https://x.example', '--name', 'X', '--scope', 'x:read=A', '--scope', 'x:read=B'], /--scope x:read is given twice/],
      [
        ['--identifier', 'https://x.example', '--name', 'X', '--scope', 'x:read=X', '--access-token-ttl', '5'],
        /--access-token-ttl 5: a number of seconds from 60 to 86400/,
      ],
    ];
    for (const [args, message] of cases) {
      const result = await tessera(['resource', 'add', ...args], env);
      assert.equal(result.code, 2, args.join(' '));
      assert.match(result.stderr, message);
    }
  });

  it('lets a client be allowed API scopes, and refuses a scope no API defines', async () => {
    // The code grant's client of a printing site, asking `scope`.
    const addPrinter = (scope: string, ...more: string[]) =>
      tessera(
        ['client', 'add', '--name', 'Printer', '--redirect-uri', 'https://printer.example/cb', '--grant', 'authorization_code', '--scope', scope, ...more],
        env,
      );
    const added = await addPrinter('openid photos:read', '--json');
    assert.equal(added.code, 0, added.stderr);
    assert.equal((JSON.parse(added.stdout) as { scope: string }).scope, 'openid photos:read');
    assert.deepEqual((JSON.parse(added.stdout) as { grant_types: string[] }).grant_types, [GRANT_AUTHORIZATION_CODE]);
    const refused = await addPrinter('openid photos:delete');
    assert.equal(refused.code, 2);
    assert.match(
      refused.stderr,
      /--scope: unknown scope photos:delete \(known: openid profile email address phone offline_access groups organization (?:admin:[a-z:]+ )+scim ssf:manage photos:read photos:write calendar:read;/,
    );
  });

  it('shows the APIs a grant covers in grant list, by name', async () => {
    assert.equal((await tessera(['user', 'add', '--username', 'grace', '--password-stdin'], env, 'a long enough password\n')).code, 0);
    const clientId = (JSON.parse((await tessera(['client', 'list', '--json'], env)).stdout) as { client_id: string }[])[0]!.client_id;
    const store = await openStore(env['TESSERA_DATABASE']!);
    try {
      const user = (await store.users.findByUsername('grace'))!;
      await store.grants.create(approvedGrant({ id: 'grant-photos', userId: user.id, clientId, scope: ['openid', 'photos:read'] }, Date.now()));
    } finally {
      await store.close();
    }
    const text = await tessera(['grant', 'list', '--username', 'grace'], env);
    assert.match(
      text.stdout,
      /grant-photos {2}Printer .*\n {2}scopes: openid photos:read\n {2}API: Photo Library \(https:\/\/api\.example\.com\): See your photos\n/,
    );
    const json = JSON.parse((await tessera(['grant', 'list', '--username', 'grace', '--json'], env)).stdout) as { apis: unknown }[];
    assert.deepEqual(json[0]!.apis, [{ identifier: 'https://api.example.com', name: 'Photo Library', scopes: ['photos:read'] }]);
  });

  it("signs an API's tokens RS256 unless told ES256 at add or update, and refuses another algorithm", async () => {
    const added = await tessera(
      ['resource', 'add', '--identifier', 'https://fast.example.com', '--name', 'Fast', '--scope', 'fast:read=Read fast', '--signing-alg', 'ES256', '--json'],
      env,
    );
    assert.equal(added.code, 0, added.stderr);
    assert.equal((JSON.parse(added.stdout) as Record<string, unknown>)['signing_alg'], 'ES256');
    const changed = await tessera(['resource', 'update', 'https://fast.example.com', '--signing-alg', 'RS256', '--json'], env);
    assert.equal(changed.code, 0, changed.stderr);
    assert.equal((JSON.parse(changed.stdout) as Record<string, unknown>)['signing_alg'], 'RS256');
    assert.match(
      (await tessera(['resource', 'list'], env)).stdout,
      /Fast\n {2}scope: fast:read {2}Read fast\n {2}access tokens live: the server default\n {2}access tokens signed: RS256\n/,
    );
    const wrong = await tessera(['resource', 'update', 'https://fast.example.com', '--signing-alg', 'HS256'], env);
    assert.equal(wrong.code, 2);
    assert.match(wrong.stderr, /^tessera: --signing-alg HS256: RS256 or ES256; run `tessera help resource`\n$/);
    const unknown = await tessera(['resource', 'update', 'https://nowhere.example.com', '--signing-alg', 'ES256'], env);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no API with identifier https:\/\/nowhere\.example\.com/);
  });

  it('removes an API, then says there is none', async () => {
    const removed = await tessera(['resource', 'remove', 'urn:example:calendar'], env);
    assert.equal(removed.code, 0, removed.stderr);
    assert.match(removed.stdout, /Removed API urn:example:calendar/);
    const again = await tessera(['resource', 'remove', 'urn:example:calendar'], env);
    assert.equal(again.code, 1);
    assert.equal(again.stderr, 'tessera: no API with identifier urn:example:calendar\n');
    // A removed API's scopes are free again.
    const reuse = await tessera(
      ['resource', 'add', '--identifier', 'https://calendar.example', '--name', 'Calendar', '--scope', 'calendar:read=See your calendar'],
      env,
    );
    assert.equal(reuse.code, 0, reuse.stderr);
  });
});
