/**
 * With the server on another port (`PORT=43080 npm start`, the README's
 * answer to a taken port) and the commands in a second terminal without that setting, the
 * commands that print or call the server's URLs use the issuer the server serves, say which
 * issuer they assumed and why, and warn when nothing answers there.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runTessera, serveTessera, type ServingCommand } from './helpers/cli.ts';

/** A port nothing listens on (bound, then let go). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('commands on the issuer the server serves', () => {
  let dir: string;
  let database: Record<string, string>;
  let server: ServingCommand;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-cli-issuer-'));
    database = { TESSERA_DATABASE: join(dir, 'tessera.db'), TESSERA_DATABASE_CREATE: 'true' };
    // On a port of its own, as PORT=43080 would put it; the commands below are not told it.
    server = await serveTessera([], database);
    const added = await runTessera(['user', 'add', '--username', 'alice', '--password-stdin'], database, 'a long password\n');
    assert.equal(added.code, 0, added.stderr);
  });
  after(async () => {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("prints reset links and redirect URIs on the running server's issuer, and says where it came from", async () => {
    const link = await runTessera(['user', 'reset-link', 'alice'], database);
    assert.equal(link.code, 0, link.stderr);
    assert.ok(link.stdout.includes(`${server.url}/reset-password?token=`), link.stdout);
    assert.match(
      link.stderr,
      new RegExp(`^tessera: issuer ${server.url} \\(recorded by the server last started on this database, in .*tessera\\.db\\.issuer\\)\\n$`),
    );
    const provider = await runTessera(['provider', 'add', 'oidc', '--name', 'Corp', '--issuer', 'https://sso.example.com', '--client-id', 'tessera'], database);
    assert.equal(provider.code, 0, provider.stderr);
    assert.match(provider.stdout, new RegExp(`Register this redirect URI with the provider: ${server.url}/login/upstream/corp/callback\\n`));
    assert.doesNotMatch(provider.stderr, /warning/);
  });

  it('lets device-login call that server without --issuer', async () => {
    // An unknown client: the answer comes from the server, not "cannot reach localhost:8080".
    const login = await runTessera(['device-login', '--client-id', 'nobody', '--client-secret', 'x'], database);
    assert.equal(login.code, 1);
    assert.match(login.stderr, /invalid_client/);
  });

  it('says which issuer it assumed, and warns when nothing answers there', async () => {
    const port = await closedPort();
    const link = await runTessera(['user', 'reset-link', 'alice'], { ...database, PORT: String(port) });
    assert.equal(link.code, 0, link.stderr);
    assert.ok(link.stdout.includes(`http://localhost:${port}/reset-password?token=`), link.stdout);
    assert.match(link.stderr, new RegExp(`^tessera: issuer http://localhost:${port} \\(PORT=${port}\\)\\n`));
    assert.match(
      link.stderr,
      new RegExp(
        `tessera: warning: nothing answers at http://localhost:${port} \\(connection refused: nothing listens there \\(ECONNREFUSED\\)\\); .*set TESSERA_ISSUER \\(or PORT\\)`,
      ),
    );
    const login = await runTessera(['device-login', '--client-id', 'x', '--client-secret', 'y'], { ...database, PORT: String(port) });
    assert.equal(login.code, 1);
    assert.equal(
      login.stderr,
      `tessera: cannot reach http://localhost:${port}: connection refused: nothing listens there (ECONNREFUSED); the issuer http://localhost:${port} is PORT=${port}: give --issuer, or TESSERA_ISSUER (or PORT) as the server has it\n`,
    );
  });
});
