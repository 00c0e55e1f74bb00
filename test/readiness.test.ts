/**
 * Readiness and draining: /readyz says whether to send this instance requests; on SIGTERM
 * it turns 503 at once while requests are still served for TESSERA_SHUTDOWN_DELAY, then
 * the server stops. `npm start` leaves no server behind when npm is the one signalled.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../src/config/index.ts';
import { startServer } from '../src/main.ts';
import { startTestServer, TEST_ENV } from './helpers/server.ts';
import { within } from './helpers/wait.ts';

const ROOT = new URL('..', import.meta.url).pathname;

const status = async (url: string) => (await fetch(url)).status;

/** Whether a process with this id is still running. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('/readyz', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'tessera-ready-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('answers 200 when the store answers and keys are loaded, and 503 once the store is closed, while /healthz stays 200', async () => {
    const server = await startTestServer();
    try {
      const ready = await fetch(`${server.url}/readyz`);
      assert.equal(ready.status, 200);
      assert.equal(ready.headers.get('cache-control'), 'no-store');
      assert.deepEqual(await ready.json(), { status: 'ready' });
      await server.store.close();
      const unready = await fetch(`${server.url}/readyz`);
      assert.equal(unready.status, 503);
      assert.equal(((await unready.json()) as { status: string }).status, 'unavailable');
      assert.equal(await status(`${server.url}/healthz`), 200, 'alive, just not ready');
    } finally {
      await server.close();
    }
  });

  it('turns 503 at once on draining, while other requests still succeed during the delay, then stops', async () => {
    const config = loadConfig({
      ...TEST_ENV,
      PORT: '0',
      HOST: '127.0.0.1',
      TESSERA_DATABASE: join(dir, 'drain.db'),
      TESSERA_LOG_LEVEL: 'silent',
      TESSERA_SHUTDOWN_DELAY: '1',
    });
    const server = await startServer(config);
    assert.equal(await status(`${server.url}/readyz`), 200);
    const draining = server.drain();
    try {
      assert.equal(await status(`${server.url}/readyz`), 503);
      assert.equal(await status(`${server.url}/.well-known/openid-configuration`), 200);
      assert.equal(await status(`${server.url}/healthz`), 200);
    } finally {
      await draining;
    }
    await assert.rejects(fetch(`${server.url}/healthz`), 'no longer accepting');
  });
});

/**
 * `npm start` and `npm run tessera -- serve` behave alike when npm is signalled (the
 * second ran node under sh -c without exec, and sh died leaving the server serving).
 */
describe('npm start and npm run tessera -- serve', () => {
  it('npm start leaves no server running when npm is sent SIGTERM', () => npmLeavesNoServer(['start', '--silent']));
  it('npm run tessera -- serve leaves no server running when npm is sent SIGTERM', () => npmLeavesNoServer(['run', '--silent', 'tessera', '--', 'serve']));
});

async function npmLeavesNoServer(args: readonly string[]): Promise<void> {
  {
    const dir = mkdtempSync(join(tmpdir(), 'tessera-npm-start-'));
    const npm = spawn('npm', args, {
      cwd: ROOT,
      env: { ...process.env, ...TEST_ENV, PORT: '0', HOST: '127.0.0.1', TESSERA_DATABASE: join(dir, 'tessera.db'), TESSERA_LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    npm.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
    let serverPid: number | null = null;
    try {
      // The server's own process id and address, from its start line.
      const started = await within(
        new Promise<{ pid: number; url: string }>((resolve, reject) => {
          npm.stdout.on('data', (chunk: Buffer) => {
            output += chunk.toString();
            const line = output.split('\n').find((entry) => entry.includes('Tessera is serving'));
            if (line) {
              const logged = JSON.parse(line) as { pid: number; msg: string };
              resolve({ pid: logged.pid, url: /listening on (\S+)\)/.exec(logged.msg)![1]! });
            }
          });
          void exited.then(() => reject(new Error(`npm ${args.join(' ')} exited before serving:\n${output}`)));
        }),
        `npm ${args.join(' ')} to serve`,
        60_000,
      );
      serverPid = started.pid;
      assert.equal(await status(`${started.url}/healthz`), 200);
      assert.ok(alive(started.pid));

      npm.kill('SIGTERM');
      await within(exited, 'npm to exit on SIGTERM');
      // npm has exited; the server it started must be gone with it, not left serving.
      const deadline = Date.now() + 10_000;
      while (alive(started.pid) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(alive(started.pid), false, `the server (pid ${started.pid}) outlived npm:\n${output}`);
      await assert.rejects(fetch(`${started.url}/healthz`));
    } finally {
      if (npm.exitCode === null) npm.kill('SIGKILL');
      // An orphan left by a failure must not outlive the test (it holds the test's pipes).
      if (serverPid !== null && alive(serverPid)) process.kill(serverPid, 'SIGKILL');
      rmSync(dir, { recursive: true, force: true });
    }
  }
}
