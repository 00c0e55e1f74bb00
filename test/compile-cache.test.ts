/**
 * `npm start` runs with Node's compile cache (NODE_COMPILE_CACHE in package.json's start
 * script), and `npm install` fills it (bin/warm-compile-cache.js): every module of src/ is then
 * found with its types already stripped, so a server never loads the type stripper, whose
 * WebAssembly memory would otherwise stay for the process's life (about 20 MiB of its peak
 * RSS, docs/benchmarks.md).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { globSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startFlags } from '../deploy/image/build.ts';

const ROOT = join(import.meta.dirname, '..');
const START = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts['start']!;

describe("npm start's compile cache", () => {
  it('is a directory under node_modules/.cache, filled at install with every module, so that no module is stripped at start', () => {
    const cache = /\bNODE_COMPILE_CACHE=(\S+)/.exec(START)?.[1];
    assert.ok(cache?.startsWith('node_modules/.cache/'), `npm start sets NODE_COMPILE_CACHE in node_modules/.cache: ${START}`);
    // As npm runs it after an install: Node.js 24 on the PATH, in the checkout.
    execFileSync(process.execPath, [join(ROOT, 'bin/warm-compile-cache.js')], { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '' } });
    const modules = globSync('src/**/*.ts', { cwd: ROOT }).filter((file) => !file.endsWith('.test.ts'));
    // With npm start's own Node flags: V8 refuses a module's cached code made under other flags.
    const flags = startFlags();
    assert.ok(flags.includes('--max-semi-space-size=2'), `npm start's Node flags are read: ${START}`);
    const loaded = execFileSync(
      process.execPath,
      [
        ...flags,
        '--input-type=module',
        '--eval',
        `for (const file of ${JSON.stringify(modules)}) await import(${JSON.stringify(`${ROOT}/`)} + file);` +
          'process.stdout.write(JSON.stringify(process.moduleLoadList));',
      ],
      { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '', NODE_COMPILE_CACHE: cache } },
    ).toString();
    const stripper = (JSON.parse(loaded) as string[]).filter((name) => name.includes('amaro'));
    assert.deepEqual(stripper, [], `the type stripper was loaded: a module of src/ was not in the cache (${modules.length} modules)`);
  });

  it('is where a `tessera` command from a checkout keeps its modules: the second command strips no types', () => {
    // Without NODE_COMPILE_CACHE, as an operator runs it: bin/tessera.js enables the cache itself.
    const hook = `data:text/javascript,process.on('exit', () => process.stderr.write('stripper: ' + process.moduleLoadList.filter((name) => name.includes('amaro')).length + '\\n'))`;
    const run = () =>
      spawnSync(process.execPath, ['--import', hook, join(ROOT, 'bin/tessera.js'), 'help'], { cwd: ROOT, env: { PATH: process.env['PATH'] ?? '' } });
    run();
    const second = run();
    assert.equal(second.status, 0, second.stderr.toString());
    assert.match(
      second.stderr.toString(),
      /^stripper: 0$/m,
      'the second `tessera help` loaded the type stripper: its modules were not kept in the compile cache',
    );
  });
});
