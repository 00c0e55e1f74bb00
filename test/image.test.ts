/**
 * The container image (`npm run image`, deploy/image/build.ts), built once for the run from
 * buildah's layer cache, then:
 * - what it is: under 60 MB compressed, a numeric non-root user, `/data` the one volume, the
 *   `tessera` entrypoint serving by default, its OCI labels, and a CycloneDX SBOM naming Node.js,
 *   the Debian libraries and every production dependency;
 * - reproducible: test/image-reproducible.test.ts (`npm run test:image`) builds it again without
 *   the cache, to the same digest;
 * - run as a container runtime would, without one (none can start here): unpacked by umoci (its
 *   root file system and runtime configuration, `umoci raw`), its entrypoint started under chroot
 *   as the image's user, on a root file system mounted read-only with a fresh `/data`. It serves discovery; `tessera resource add` through the entrypoint and
 *   `tessera client add` as the command on the image's PATH register a service, which gets a
 *   client-credentials token; SIGTERM turns /readyz to 503 and then stops it with status 0;
 * - where podman can start a container, the same image answers under podman.
 *
 * Needs root (for the mount namespace and chroot), buildah, umoci and skopeo (.ci/run installs
 * them). Without them the file is skipped saying so, except in CI (CI=1), where that fails.
 */
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { buildImage, IMAGE_UID, startEnvironment, startFlags, type BuiltImage } from '../deploy/image/build.ts';
import { watchCommand } from './helpers/cli.ts';
import { imageTestsSkip, requireImageTools } from './helpers/image-tools.ts';
import { which } from './helpers/machine.ts';
import { shellBlock, shellWords } from './helpers/shell-blocks.ts';
import { until, WAIT_MS, within } from './helpers/wait.ts';

const exec = promisify(execFile);

interface RuntimeConfig {
  process: { user: { uid: number; gid: number }; args: string[]; env: string[]; cwd: string };
}

describe('the container image', { skip: imageTestsSkip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-image-'));
  const bundle = join(dir, 'bundle');
  let image: BuiltImage;
  let config: RuntimeConfig;

  before(async () => {
    requireImageTools();
    image = await buildImage({ layout: join(dir, 'layout'), sbom: join(dir, 'sbom.cdx.json'), name: 'tessera-test', log: () => {} });
    // What a runtime makes of the image: its root file system and its runtime configuration.
    // `umoci raw` rather than `umoci unpack`, whose mtree manifest (a SHA-256 of every file, for
    // repacking) was three quarters of the unpack's 8 s of CPU and is never read here.
    const reference = `${image.layout}:${image.tag}`;
    mkdirSync(bundle);
    await exec('umoci', ['raw', 'unpack', '--image', reference, join(bundle, 'rootfs')]);
    await exec('umoci', ['raw', 'runtime-config', '--image', reference, '--rootfs', join(bundle, 'rootfs'), join(bundle, 'config.json')]);
    config = JSON.parse(readFileSync(join(bundle, 'config.json'), 'utf8')) as RuntimeConfig;
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** A fresh /data as a new volume is: empty, the image's user's. */
  function freshData(name: string): string {
    const data = join(dir, name);
    mkdirSync(data, { mode: 0o700 });
    chownSync(data, IMAGE_UID, IMAGE_UID);
    return data;
  }

  /**
   * Starts `args` (the image's entrypoint and command, or another program in it) as a container
   * would: in a mount namespace of its own where the root file system is read-only and `data` is
   * mounted at /data, chrooted to it, as the image's user, with the image's environment and `env`.
   */
  function start(args: readonly string[], data: string, env: Record<string, string> = {}) {
    const environment = Object.fromEntries(config.process.env.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]));
    const rootfs = join(bundle, 'rootfs');
    const script = `"$MOUNT" --bind "$0" "$0" && "$MOUNT" -o remount,bind,ro "$0" && "$MOUNT" --bind "$DATA" "$0/data" && exec "$CHROOT" --userspec=${config.process.user.uid}:${config.process.user.gid} "$0" "$@"`;
    return watchCommand(
      spawn(which('unshare')!, ['--mount', '--propagation', 'private', '/bin/sh', '-c', script, rootfs, ...args], {
        env: { ...environment, ...env, MOUNT: which('mount')!, CHROOT: which('chroot')!, DATA: data },
        stdio: ['ignore', 'pipe', 'pipe'],
      }),
    );
  }

  /** Runs a command in the image to its end. */
  async function runIn(args: readonly string[], data: string, env: Record<string, string> = {}) {
    const run = start(args, data, env);
    const code = await within(run.exited, `${args.join(' ')} in the image to exit`, 60_000);
    return { code, ...run.output() };
  }

  it('is a small image of a non-root user, with /data its volume, tessera its entrypoint, its labels and an SBOM', async () => {
    assert.ok(image.bytes < 60 * 1024 * 1024, `${(image.bytes / 1024 / 1024).toFixed(1)} MB compressed`);
    const { stdout } = await exec('skopeo', ['inspect', '--config', `oci:${image.layout}:${image.tag}`]);
    const inspected = JSON.parse(stdout) as {
      config: {
        User: string;
        Entrypoint: string[];
        Cmd: string[];
        Volumes: Record<string, object>;
        Labels: Record<string, string>;
        Env: string[];
        WorkingDir: string;
      };
    };
    assert.equal(inspected.config.User, `${IMAGE_UID}:${IMAGE_UID}`);
    assert.deepEqual(Object.keys(inspected.config.Volumes), ['/data']);
    assert.deepEqual(inspected.config.Entrypoint, ['/usr/local/bin/node', ...startFlags(), '/usr/local/bin/tessera'], "npm start's flags");
    assert.deepEqual(inspected.config.Cmd, ['serve']);
    assert.equal(inspected.config.WorkingDir, '/', 'so the default database is /data/tessera.db');
    assert.ok(inspected.config.Env.includes('HOST=0.0.0.0'));
    for (const [name, value] of Object.entries(startEnvironment())) assert.ok(inspected.config.Env.includes(`${name}=${value}`), `npm start's ${name}`);
    const labels = inspected.config.Labels;
    assert.equal(labels['org.opencontainers.image.version'], JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version);
    assert.match(labels['org.opencontainers.image.revision']!, /^[0-9a-f]{40}$/);
    assert.equal(labels['org.opencontainers.image.licenses'], 'Apache-2.0');

    const sbom = JSON.parse(readFileSync(image.sbom, 'utf8')) as {
      bomFormat: string;
      specVersion: string;
      metadata: { component: { hashes: { content: string }[] } };
      components: { name: string; purl: string }[];
    };
    assert.equal(sbom.bomFormat, 'CycloneDX');
    assert.equal(sbom.metadata.component.hashes[0]!.content, image.digest.replace('sha256:', ''), 'the SBOM names the image by its digest');
    const purls = sbom.components.map((component) => component.purl);
    for (const expected of [
      /^pkg:npm\/node-linux-\w+@24\./,
      /^pkg:deb\/debian\/libc6@/,
      /^pkg:deb\/debian\/libstdc%2B%2B6@|^pkg:deb\/debian\/libstdc\+\+6@/,
      /^pkg:deb\/debian\/ca-certificates@/,
      /^pkg:npm\/fastify@/,
      /^pkg:npm\/%40simplewebauthn\/server@/,
    ]) {
      assert.ok(
        purls.some((purl) => expected.test(purl)),
        `the SBOM has ${expected}`,
      );
    }
    assert.ok(!purls.some((purl) => purl.startsWith('pkg:npm/typescript@')), 'no development dependency');
  });

  it('runs as its user on a read-only root: discovery, tessera client add inside it, a client-credentials token, and SIGTERM drains and stops it', async () => {
    const data = freshData('data');
    // chroot starts its command in /: the image's working directory must be that.
    assert.equal(config.process.cwd, '/');
    // The image's entrypoint and command as they are; the address a test listens on is its own.
    const server = start(config.process.args, data, { HOST: '127.0.0.1', PORT: '0', TESSERA_SHUTDOWN_DELAY: '2' });
    try {
      const url = await within(
        new Promise<string>((resolve, reject) => {
          server.child.stdout.on('data', () => {
            const address = /Tessera is serving \S+ \(listening on (\S+)\)/.exec(server.output().stdout)?.[1];
            if (address) resolve(address);
          });
          void server.exited.then((code) => reject(new Error(`the image exited with ${code} before serving: ${JSON.stringify(server.output())}`)));
        }),
        'the image to serve',
        60_000,
      );
      assert.match(server.output().stdout, /from the SQLite database \/data\/tessera\.db \(created now/);
      const discovery = (await (await fetch(`${url}/.well-known/openid-configuration`)).json()) as { token_endpoint: string; grant_types_supported: string[] };
      assert.ok(discovery.grant_types_supported.includes('client_credentials'));
      assert.equal((await fetch(`${url}/healthz`)).status, 200);
      assert.equal((await fetch(`${url}/readyz`)).status, 200);

      // Through the entrypoint (`docker run IMAGE resource add …`), then as `kubectl exec … tessera` finds it.
      const entrypoint = config.process.args.slice(0, -1);
      const resource = await runIn(
        [...entrypoint, 'resource', 'add', '--identifier', 'https://api.example.com', '--name', 'Photos', '--scope', 'photos:read=See your photos'],
        data,
      );
      assert.equal(resource.code, 0, resource.stderr);
      const client = await runIn(
        ['tessera', 'client', 'add', '--name', 'Nightly export', '--grant', 'client_credentials', '--scope', 'photos:read', '--json'],
        data,
      );
      assert.equal(client.code, 0, client.stderr);
      const { client_id, client_secret } = JSON.parse(client.stdout) as { client_id: string; client_secret: string };

      const token = await fetch(new URL(new URL(discovery.token_endpoint).pathname, url), {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${client_id}:${client_secret}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'photos:read', resource: 'https://api.example.com' }),
      });
      const body = (await token.json()) as { access_token?: string; scope?: string };
      assert.equal(token.status, 200, JSON.stringify(body));
      assert.equal(body.scope, 'photos:read');
      assert.ok(body.access_token);

      server.child.kill('SIGTERM');
      await until('/readyz to answer 503 while the image drains', async () => (await fetch(`${url}/readyz`)).status === 503);
      assert.equal(await within(server.exited, 'the image to stop on SIGTERM', WAIT_MS), 0, JSON.stringify(server.output()));
    } finally {
      server.child.kill('SIGKILL');
    }
  });

  it('refuses to start, in one line saying what to set, with an unwritable /data, a read-only database path or a key file it cannot create', async () => {
    const rootOwned = join(dir, 'root-owned');
    mkdirSync(rootOwned, { mode: 0o755 });
    // Each on a port of its own choosing: the image's 8080 may be taken on this machine.
    const local = { HOST: '127.0.0.1', PORT: '0' };
    const refusals = await Promise.all([
      // A volume the image's user cannot write.
      runIn(config.process.args, rootOwned, local),
      // A database on the read-only root file system.
      runIn(config.process.args, freshData('unused-1'), { ...local, TESSERA_DATABASE: '/app/tessera.db', TESSERA_DATABASE_CREATE: 'true' }),
      // No key encryption key, and nowhere to write the key file.
      runIn(config.process.args, freshData('unused-2'), { ...local, TESSERA_KEY_FILE: '/app/tessera.key' }),
    ]);
    const expected = [
      /^tessera: cannot start: TESSERA_DATABASE: cannot open the SQLite database \/data\/tessera\.db: EACCES.*; uid 10001 must be able to write the file and its directory \/data: change their owner or mode, or set TESSERA_DATABASE to a path it can write$/,
      /^tessera: cannot start: TESSERA_DATABASE: cannot open the SQLite database \/app\/tessera\.db: EROFS.*; uid 10001 must be able to write the file and its directory \/app: .*set TESSERA_DATABASE/,
      /^tessera: cannot start: TESSERA_KEY_ENCRYPTION_KEY: not set, and the key file \/app\/tessera\.key cannot be created \(EROFS: uid 10001 cannot write \/app\); set TESSERA_KEY_ENCRYPTION_KEY .*, or TESSERA_KEY_FILE to a path this process can write$/,
    ];
    for (const [index, refusal] of refusals.entries()) {
      assert.equal(refusal.code, 1, refusal.stderr);
      assert.deepEqual(refusal.stderr.trimEnd().split('\n').length, 1, `one line:\n${refusal.stderr}`);
      assert.match(refusal.stderr.trimEnd(), expected[index]!);
    }
  });

  it("docs/deployment.md: builds with the page's command, copies with its skopeo line, and registers a client with its podman exec line", async () => {
    const version = image.tag;
    const [build, copy] = shellBlock('docs/deployment.md', 'npm run image').split('\n');
    assert.equal(build, 'npm run image');
    assert.match(
      JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).scripts.image,
      / deploy\/image\/build\.ts$/,
      'the script is the build this file runs',
    );
    // The copy to a registry, to a layout of the test's own instead: the same image arrives.
    const copied = join(dir, 'copied');
    const line = copy!
      .replace(`oci:dist/image:${version}`, `oci:${image.layout}:${version}`)
      .replace(`docker://registry.example.com/tessera:${version}`, `oci:${copied}:${version}`);
    assert.notEqual(line, copy, `the page copies oci:dist/image:${version} to a registry`);
    await exec('bash', ['-c', line]);
    assert.equal((JSON.parse(readFileSync(join(copied, 'index.json'), 'utf8')) as { manifests: { digest: string }[] }).manifests[0]!.digest, image.digest);

    const [run, execLine] = shellBlock('docs/deployment.md', 'podman run').split('\n');
    const words = run!.split(/\s+/);
    assert.equal(words.at(-1), `tessera:${version}`);
    assert.equal(words[words.indexOf('-p') + 1], `8080:${config.process.env.find((entry) => entry.startsWith('PORT='))!.slice('PORT='.length)}`);
    assert.match(words[words.indexOf('-v') + 1]!, /^[\w-]+:\/data$/, "a named volume at the image's volume");
    const [, container, command, rest] = /^podman exec (\S+) (\S+) (.*)$/.exec(execLine!)!;
    assert.equal(container, words[words.indexOf('--name') + 1]);
    assert.equal(command, 'tessera', "the command on the image's PATH");
    const added = await runIn(['tessera', ...shellWords(rest!)], freshData('docs-data'));
    assert.equal(added.code, 0, added.stderr);
    assert.match(added.stdout, /client_id: +\S+/);
  });

  it('runs under podman, where podman can start a container', {
    skip: which('podman') !== undefined ? false : 'podman is not installed (no container can be started on these machines)',
  }, async (t) => {
    let stdout: string;
    try {
      ({ stdout } = await exec('podman', ['run', '--rm', '--network=none', `oci:${image.layout}:${image.tag}`, 'help']));
    } catch (error) {
      t.skip(
        `podman cannot start a container here: ${String((error as { stderr?: string }).stderr ?? error)
          .trim()
          .split('\n')
          .at(-1)}`,
      );
      return;
    }
    assert.match(stdout, /Usage: tessera/);
  });
});
