/**
 * A Node.js older than package.json's engines.node gets one line saying what
 * to install from every entry point, before anything can fail with a stack trace
 * (ERR_UNKNOWN_FILE_EXTENSION ".ts", "No such built-in module: node:sqlite"): bin/tessera.js
 * (the deployment guide's command, plain JavaScript any Node.js reads), and src/main.ts and
 * src/cli/main.ts (npm start and npm run tessera, and a Node.js that loads TypeScript but is
 * older, such as 22.18).
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { nodeVersionProblem } from '../src/config/node-version.ts';

const REPO = new URL('..', import.meta.url).pathname;

/** The first node on PATH (or /usr/bin/node) older than 24.7: the machine's own, where npm brought a newer one for the tests. */
function olderNode(): string | null {
  for (const dir of [...(process.env['PATH'] ?? '').split(':'), '/usr/bin']) {
    const node = join(dir, 'node');
    if (!existsSync(node)) continue;
    try {
      const version = execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
      if (nodeVersionProblem(version) !== null) return node;
    } catch {
      // not a node that runs here
    }
  }
  return null;
}

/** Runs a command expected to fail; its exit code and what it wrote. */
async function refused(file: string, args: readonly string[]): Promise<{ code: number; stderr: string; stdout: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(file, args, { cwd: REPO, env: { PATH: process.env['PATH'] ?? '' }, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

const LINE =
  /^tessera: Tessera needs Node\.js 24\.7 or later; this is Node\.js [\d.]+ \(.+\)\. Install Node\.js 24 .*`npm install` brings Node\.js 24, which `npm start` and `npm run tessera -- <command>` use\n$/;

describe('the Node.js version check', () => {
  it('says the version is too old, and what to install, below engines.node only', () => {
    assert.match(nodeVersionProblem('20.20.2', '/usr/bin/node') ?? '', /needs Node\.js 24\.7 or later; this is Node\.js 20\.20\.2 \(\/usr\/bin\/node\)/);
    assert.notEqual(nodeVersionProblem('24.6.9'), null);
    assert.equal(nodeVersionProblem('24.7.0'), null);
    assert.equal(nodeVersionProblem('25.1.0'), null);
  });

  it('stops bin/tessera.js on an older Node.js with one line, no stack trace', {
    skip: olderNode() === null ? 'no Node.js older than 24.7 on this machine' : false,
  }, async () => {
    for (const args of [['serve'], ['backup', '/tmp/never.db']]) {
      const result = await refused(olderNode()!, ['bin/tessera.js', ...args]);
      assert.equal(result.code, 1);
      assert.match(result.stderr, LINE);
      assert.equal(result.stdout, '');
    }
  });

  it('stops src/main.ts and src/cli/main.ts first on a Node.js that loads TypeScript but is older', async () => {
    // A Node.js 22.18 as this one pretends to be, before any module of Tessera is loaded.
    const pretend = 'data:text/javascript,Object.defineProperty(process,"versions",{value:{...process.versions,node:"22.18.0"}})';
    for (const entry of [['src/main.ts'], ['src/cli/main.ts', 'serve'], ['bin/tessera.js', 'serve']]) {
      const result = await refused(process.execPath, ['--import', pretend, ...entry]);
      assert.equal(result.code, 1, entry.join(' '));
      assert.match(result.stderr, LINE, entry.join(' '));
      assert.match(result.stderr, /this is Node\.js 22\.18\.0/);
    }
  });

  it("explains npm's EBADENGINE warnings right under them when npm runs on an older Node.js, and says nothing otherwise", async () => {
    const afterInstall = (agent: string) =>
      promisify(execFile)(process.execPath, ['bin/after-install.js'], { cwd: REPO, env: { PATH: process.env['PATH'] ?? '', npm_config_user_agent: agent } });
    const old = await afterInstall('npm/11.19.1 node/v20.20.2 linux x64 workspaces/false');
    assert.match(old.stdout, /the EBADENGINE warnings above are expected on Node\.js 20\.20, and the install worked/);
    assert.match(old.stdout, /npm start, npm test and npm run tessera run on it/);
    assert.equal(old.stderr, '');
    for (const agent of ['npm/11.19.1 node/v24.21.0 linux x64 workspaces/false', 'npm/11.6.2 node/v25.1.0 darwin arm64', '']) {
      const quiet = await afterInstall(agent);
      assert.equal(quiet.stdout, '', agent);
    }
    assert.match(JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).scripts.postinstall, /^node bin\/after-install\.js && /);
  });
});
