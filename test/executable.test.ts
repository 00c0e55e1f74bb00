/**
 * The single executable (`npm run executable`, deploy/executable/build.ts), built once for each
 * state of the source (kept in node_modules/.cache/tessera-executable/ by its hash), then run as
 * on a host without Node.js: with an empty PATH, from a fresh directory outside the checkout, so
 * that neither a `node` nor a `node_modules` can be found. It prints its version; it serves
 * discovery, its pages with their stylesheet and in another language, on a fresh SQLite
 * database; docs/deployment.md's commands, run through it against the same database, register an
 * API and a service, which gets a client-credentials token; SIGTERM drains and stops it;
 * `serve --workers 2` starts it again for each worker. Where this process is root, it also runs
 * under chroot in a root file system holding only itself and the libraries ldd names, as on
 * a host with nothing else installed.
 *
 * Needs the `node`, esbuild and postject devDependencies (npm ci) on Linux. Without them the
 * file is skipped saying so, except in CI (CI=1), where that fails.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { buildExecutable, cannotBuild, EXECUTABLE, ROOT, sourceHash } from '../deploy/executable/build.ts';
import { watchCommand } from './helpers/cli.ts';
import { shellBlock, shellWords } from './helpers/shell-blocks.ts';
import { until, WAIT_MS, within } from './helpers/wait.ts';
import { inCi, which } from './helpers/machine.ts';

const onPath = (name: string) => which(name) !== undefined;
const root = process.getuid?.() === 0;
const ci = inCi();
const why = cannotBuild();
const CACHE = join(ROOT, 'node_modules', '.cache', 'tessera-executable');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** The executable of this source: from the cache, or built now (the older one removed: each is over 100 MB). */
async function executable(): Promise<string> {
  const path = join(CACHE, sourceHash().slice(0, 16), 'tessera');
  if (!existsSync(path)) {
    rmSync(CACHE, { recursive: true, force: true });
    await buildExecutable({ output: path, log: () => {} });
  }
  return path;
}

describe('the single executable', { skip: why !== null && !ci ? `executable tests skipped: ${why}` : false }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-executable-'));
  let tessera: string;

  before(async () => {
    if (why !== null) throw new Error(`the executable tests must run in CI, but ${why}`);
    tessera = await executable();
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /**
   * Starts the executable in `cwd` as a host without Node.js would: an empty PATH and nothing
   * of this process's environment (no NODE_OPTIONS, no NODE_PATH) but `env`.
   */
  function start(args: readonly string[], cwd: string, env: Record<string, string> = {}) {
    return watchCommand(spawn(tessera, args, { cwd, env: { PATH: '', HOME: cwd, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }));
  }

  async function run(args: readonly string[], cwd: string, env: Record<string, string> = {}) {
    const running = start(args, cwd, env);
    const code = await within(running.exited, `tessera ${args.join(' ')} to exit`, 60_000);
    return { code, ...running.output() };
  }

  /** Resolves with the addresses once `servers` processes say they serve; rejects if it exits first. */
  function serving(server: ReturnType<typeof start>, servers = 1): Promise<string[]> {
    return within(
      new Promise<string[]>((resolve, reject) => {
        server.child.stdout.on('data', () => {
          const addresses = [...server.output().stdout.matchAll(/Tessera is serving \S+ \(listening on (\S+)\)/g)].map((match) => match[1]!);
          if (addresses.length >= servers) resolve(addresses);
        });
        void server.exited.then((code) => reject(new Error(`the executable exited with ${code} before serving: ${JSON.stringify(server.output())}`)));
      }),
      'the executable to serve',
      60_000,
    );
  }

  it('prints its version with --version and -v, and nothing else, with no Node.js on the PATH', async () => {
    for (const flag of ['--version', '-v']) {
      const result = await run([flag], dir);
      assert.equal(result.code, 0, result.stderr);
      assert.equal(result.stdout, `tessera ${VERSION}\n`);
      assert.equal(result.stderr, '', 'no warning (an experimental feature, a rejected code cache)');
    }
  });

  it("serves on a fresh database with the page's commands: discovery, its pages, a client-credentials token; SIGTERM drains and stops it", async () => {
    const lines = shellBlock('docs/deployment.md', 'mkdir -p /var/lib/tessera').trimEnd().split('\n');
    assert.equal(lines[0], 'mkdir -p /var/lib/tessera && cd /var/lib/tessera');
    const host = join(dir, 'var-lib-tessera');
    mkdirSync(host);
    const commands = lines.slice(1).map((line) => shellWords(line));
    assert.ok(
      commands.every((words) => words[0] === 'tessera'),
      'each is the tessera command',
    );
    assert.deepEqual(commands.at(-1), ['tessera', 'serve'], 'the page starts the server last');

    const server = start(['serve'], host, { HOST: '127.0.0.1', PORT: '0', TESSERA_SHUTDOWN_DELAY: '1' });
    try {
      const [url] = await serving(server);
      assert.match(server.output().stdout, /from the SQLite database \S+\/var-lib-tessera\/data\/tessera\.db \(created now/);
      const discovery = (await (await fetch(`${url}/.well-known/openid-configuration`)).json()) as { token_endpoint: string; grant_types_supported: string[] };
      assert.ok(discovery.grant_types_supported.includes('client_credentials'));
      assert.equal((await fetch(`${url}/readyz`)).status, 200);
      // What src/ reads beside itself, inside the executable: the stylesheet, and a catalogue loaded on first use.
      const page = await (await fetch(`${url}/login`, { headers: { 'accept-language': 'de' } })).text();
      assert.match(page, /<html lang="de"/);
      assert.match(page, /<h1>Anmelden<\/h1>/);
      const stylesheet = /<link rel="stylesheet" href="([^"]+)"/.exec(page)?.[1];
      assert.ok(stylesheet, 'the page links its stylesheet');
      assert.equal(await (await fetch(new URL(stylesheet, url))).text(), readFileSync(join(ROOT, 'src/ui/style.css'), 'utf8'));

      let added = '';
      for (const words of commands.slice(0, -1)) {
        const result = await run(words.slice(1), host);
        assert.equal(result.code, 0, `${words.join(' ')}: ${result.stderr}`);
        added = result.stdout;
      }
      const client_id = /client_id: +(\S+)/.exec(added)?.[1];
      const client_secret = /client_secret: +(\S+)/.exec(added)?.[1];
      assert.ok(client_id && client_secret, added);
      const scope = commands.at(-2)![commands.at(-2)!.indexOf('--scope') + 1]!;
      const resource = commands.find((words) => words[2] === 'add' && words[1] === 'resource')!;
      const token = await fetch(new URL(new URL(discovery.token_endpoint).pathname, url), {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource: resource[resource.indexOf('--identifier') + 1]! }),
      });
      const body = (await token.json()) as { access_token?: string; scope?: string };
      assert.equal(token.status, 200, JSON.stringify(body));
      assert.equal(body.scope, scope);
      assert.ok(body.access_token);

      server.child.kill('SIGTERM');
      await until('/readyz to answer 503 while the executable drains', async () => (await fetch(`${url}/readyz`)).status === 503);
      assert.equal(await within(server.exited, 'the executable to stop on SIGTERM', WAIT_MS), 0, JSON.stringify(server.output()));
      assert.equal(server.output().stderr, '');
    } finally {
      server.child.kill('SIGKILL');
    }
  });

  it('starts itself again for each worker of serve --workers 2, and stops them all on SIGTERM', async () => {
    const host = join(dir, 'workers');
    mkdirSync(host);
    const server = start(['serve', '--workers', '2'], host, { HOST: '127.0.0.1', PORT: '0', TESSERA_SHUTDOWN_DELAY: '0' });
    try {
      const [url] = await serving(server, 2);
      assert.equal((await fetch(`${url}/healthz`)).status, 200);
      server.child.kill('SIGTERM');
      assert.equal(await within(server.exited, 'the executable and its workers to stop on SIGTERM', WAIT_MS), 0, JSON.stringify(server.output()));
    } finally {
      server.child.kill('SIGKILL');
    }
  });

  it('runs in a root holding only itself and the libraries it links: its version, and discovery until SIGTERM', {
    skip: root && onPath('chroot') && onPath('ldd') ? false : 'it needs root, chroot and ldd',
  }, async () => {
    // What a host without Node.js has: glibc and libstdc++, as ldd names them, and nothing else (no /usr, /proc or /dev).
    const rootfs = join(dir, 'rootfs');
    for (const library of (await promisify(execFile)(which('ldd')!, [tessera])).stdout.matchAll(/(?:=>\s+|^\s*)(\/\S+)\s+\(/gm)) {
      mkdirSync(join(rootfs, dirname(library[1]!)), { recursive: true });
      copyFileSync(library[1]!, join(rootfs, library[1]!));
    }
    mkdirSync(join(rootfs, 'usr/local/bin'), { recursive: true });
    copyFileSync(tessera, join(rootfs, 'usr/local/bin/tessera'));
    chmodSync(join(rootfs, 'usr/local/bin/tessera'), 0o755);
    const inRoot = (args: readonly string[], env: Record<string, string> = {}) =>
      watchCommand(
        spawn(which('chroot')!, [rootfs, '/usr/local/bin/tessera', ...args], { cwd: rootfs, env: { PATH: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] }),
      );
    const version = inRoot(['--version']);
    assert.equal(await within(version.exited, 'tessera --version in the root to exit'), 0, version.output().stderr);
    assert.equal(version.output().stdout, `tessera ${VERSION}\n`);

    const server = inRoot(['serve'], { HOST: '127.0.0.1', PORT: '0', TESSERA_SHUTDOWN_DELAY: '0' });
    try {
      const [url] = await serving(server);
      assert.match(server.output().stdout, /from the SQLite database \/data\/tessera\.db \(created now/, 'the root is its working directory');
      assert.equal((await fetch(`${url}/.well-known/openid-configuration`)).status, 200);
      server.child.kill('SIGTERM');
      assert.equal(await within(server.exited, 'the executable to stop on SIGTERM', WAIT_MS), 0, JSON.stringify(server.output()));
    } finally {
      server.child.kill('SIGKILL');
    }
  });

  it("docs/deployment.md: builds with the page's command and prints the version with its line", async () => {
    const [build, version] = shellBlock('docs/deployment.md', 'npm run executable').trimEnd().split('\n');
    assert.equal(build, 'npm run executable');
    assert.match(
      (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['executable']!,
      / deploy\/executable\/build\.ts$/,
      'the script is the build this file runs',
    );
    const [command, ...args] = shellWords(version!);
    assert.equal(command, relative(ROOT, EXECUTABLE), 'where the build writes it');
    const result = await run(args, dir);
    assert.equal(result.stdout, `tessera ${VERSION}\n`);
  });
});
