/**
 * The README's commands, run as written: every `tessera` command in its `sh`
 * blocks (Quick start, the device flow) against a fresh database, with the ids the commands
 * before it printed. `npm start` is what test/start-up.test.ts runs; `device-login` waits for a
 * person and is run by test/device-login.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { runTessera } from './helpers/cli.ts';

const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const PREFIX = 'npm run --silent tessera -- ';

/** A shell line's words, with '…' and "…" quoting. */
function words(line: string): string[] {
  return [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((match) => match[1] ?? match[2] ?? match[3]!);
}

describe("the README's tessera commands, run as written", () => {
  const dir = mkdtempSync(join(tmpdir(), 'tessera-readme-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('registers the app, Alice and the TV of the Quick start and the device flow', async () => {
    const lines = [...README.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((match) => match[1]!.split('\n')).filter((line) => line.includes(PREFIX));
    const run = lines.filter((line) => !line.includes(`${PREFIX}device-login`));
    assert.ok(run.length >= 3, `found ${run.length} commands`);
    const env = { TESSERA_DATABASE: join(dir, 'tessera.db') };
    for (const line of run) {
      const stdin = /^echo '([^']*)' \|/.exec(line)?.[1];
      const result = await runTessera(words(line.slice(line.indexOf(PREFIX) + PREFIX.length)), env, stdin === undefined ? '' : `${stdin}\n`);
      assert.equal(result.code, 0, `${line}\n${result.stderr}`);
    }
    const users = JSON.parse((await runTessera(['user', 'list', '--json'], env)).stdout) as { username: string }[];
    assert.deepEqual(
      users.map((user) => user.username),
      ['alice'],
    );
    const clients = JSON.parse((await runTessera(['client', 'list', '--json'], env)).stdout) as { client_name: string }[];
    assert.deepEqual(clients.map((client) => client.client_name).sort(), ['Living Room TV', 'My App']);
  });
});
