/**
 * `tessera provider …`: adding, listing, showing, changing and removing upstream
 * identity providers, in process. A mistake is one line naming the option; a secret comes
 * from standard input only and is never printed.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { scratchDatabase } from './helpers/scratch.ts';
import { runTessera } from './helpers/cli.ts';

describe('tessera provider', () => {
  const { env } = scratchDatabase('tessera-cli-providers-', { TESSERA_ISSUER: 'https://id.example.com' });

  it('adds an OpenID provider with its secret from standard input, and prints the redirect URI to register', async () => {
    const added = await runTessera(
      [
        'provider',
        'add',
        'oidc',
        '--name',
        'Google',
        '--issuer',
        'https://accounts.google.com',
        '--client-id',
        'abc.apps.googleusercontent.com',
        '--client-secret-stdin',
        '--scope',
        'email',
        '--allowed-domain',
        'Example.com',
      ],
      env,
      'GOCSPX-secret\n',
    );
    assert.equal(added.code, 0, added.stderr);
    assert.equal(
      added.stdout,
      'Added identity provider "Google" (google).\nRegister this redirect URI with the provider: https://id.example.com/login/upstream/google/callback\n',
    );
    const shown = JSON.parse((await runTessera(['provider', 'show', 'google', '--json'], env)).stdout) as Record<string, unknown>;
    assert.deepEqual(
      [shown['issuer'], shown['scopes'], shown['allowed_domains'], shown['client_secret_set']],
      ['https://accounts.google.com', ['openid', 'email'], ['example.com'], true],
    );
    assert.doesNotMatch(JSON.stringify(shown), /GOCSPX-secret/);
    const listed = await runTessera(['provider', 'list'], env);
    assert.equal(listed.stdout, 'google  oidc  Google\n');
  });

  it('refuses a mistake in one line naming the option', async () => {
    const cases: [string[], RegExp][] = [
      [['provider', 'add', 'saml', '--name', 'X'], /--kind saml: one of oidc, github, ldap/],
      [['provider', 'add', 'oidc', '--name', 'X', '--client-id', 'a'], /--issuer is required/],
      [
        ['provider', 'add', 'oidc', '--name', 'X', '--issuer', 'http://sso.example.com', '--client-id', 'a'],
        /--issuer http:\/\/sso\.example\.com: must be https/,
      ],
      [
        ['provider', 'add', 'ldap', '--name', 'X', '--url', 'https://ldap', '--user-search-base', 'dc=x'],
        /--url https:\/\/ldap: must be ldap:\/\/ or ldaps:\/\//,
      ],
      [
        ['provider', 'add', 'ldap', '--name', 'X', '--url', 'ldap://ldap', '--user-search-base', 'dc=x', '--user-filter', '(uid=*)'],
        /--user-filter \(uid=\*\): put \{username\}/,
      ],
      [
        ['provider', 'add', 'ldap', '--name', 'X', '--url', 'ldap://ldap', '--user-search-base', 'dc=x', '--user-filter', '(uid={username}'],
        /--user-filter \(uid=\{username\}: not an LDAP search filter \(RFC 4515\)/,
      ],
      [
        ['provider', 'add', 'ldap', '--name', 'X', '--url', 'ldap://ldap', '--user-search-base', 'dc=x', '--bind-dn', 'cn=admin'],
        /--bind-password-stdin is required with --bind-dn/,
      ],
      [['provider', 'add', 'github', '--name', 'X', '--client-id', 'a'], /--client-secret-stdin is required/],
      [
        ['provider', 'add', 'oidc', '--name', 'Google', '--issuer', 'https://accounts.google.com', '--client-id', 'a'],
        /a provider with id google exists already/,
      ],
      [
        ['provider', 'add', 'oidc', '--name', 'X', '--issuer', 'https://x.example.com', '--client-id', 'a', '--url', 'ldap://x'],
        /--url does not apply to a provider of kind oidc/,
      ],
    ];
    for (const [args, pattern] of cases) {
      const result = await runTessera(args, env);
      assert.notEqual(result.code, 0, args.join(' '));
      assert.equal(result.stderr.trimEnd().split('\n').length, 1, result.stderr);
      assert.match(result.stderr, pattern, args.join(' '));
    }
  });

  it('changes what is given, keeps one provider the only way in, and removes', async () => {
    const ldap = await runTessera(
      [
        'provider',
        'add',
        'ldap',
        '--name',
        'Corp Directory',
        '--url',
        'ldaps://ldap.example.com',
        '--user-search-base',
        'ou=people,dc=example,dc=com',
        '--only',
      ],
      env,
    );
    assert.equal(ldap.code, 0, ldap.stderr);
    const second = await runTessera(['provider', 'update', 'google', '--only'], env);
    assert.equal(second.code, 1);
    assert.match(second.stderr, /Corp Directory \(corp-directory\) is the only way in already/);
    assert.equal((await runTessera(['provider', 'update', 'corp-directory', '--no-only', '--position', '0'], env)).code, 0);
    assert.equal((await runTessera(['provider', 'list'], env)).stdout, 'corp-directory  ldap  Corp Directory\ngoogle  oidc  Google\n');
    const removed = await runTessera(['provider', 'remove', 'corp-directory'], env);
    assert.equal(removed.code, 0);
    const gone = await runTessera(['provider', 'show', 'corp-directory'], env);
    assert.equal(gone.code, 1);
    assert.match(gone.stderr, /no identity provider corp-directory/);
  });
});
