/**
 * Run by `npm install` in a checkout, after bin/after-install.js (package.json's postinstall).
 *
 * Node's compile cache keeps each module with its types stripped, so a server started with it
 * never loads the type stripper, whose WebAssembly memory (about 20 MiB) would stay for the
 * process's life (docs/benchmarks.md, "Peak RSS"). This fills the cache `npm start` reads
 * (NODE_COMPILE_CACHE in package.json's start script) by importing every module of src/ once,
 * which starts nothing (each entry point runs only when it is the command); the modules a server
 * imports only on first use are then cached too. Best effort, by a Node.js new enough to run
 * Tessera: an install never fails for it, and a start without it only strips the types itself.
 * Plain JavaScript, so that an older Node.js running it only returns.
 */
// Default imports, read after the version check: an older Node.js has neither globSync nor
// enableCompileCache, and a named import of either would fail before this file runs.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import module from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const pkg = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const [major, minor] = /^>=\s*(\d+)(?:\.(\d+))?/
  .exec(pkg.engines.node)
  .slice(1)
  .map((part) => Number(part || 0));
const [running, runningMinor] = process.versions.node.split('.').map(Number);
const cache = /\bNODE_COMPILE_CACHE=(\S+)/.exec(pkg.scripts.start ?? '')?.[1];
// The flags npm start gives Node. V8 keeps a hash of its flags with each module it caches and
// refuses the cache under other flags: filled without them, the cache was refused at the first
// `npm start` after an install, which stripped every module's types itself and kept the type
// stripper (test/compile-cache.test.ts). So the modules are imported under the same flags, in
// a Node.js started with them, which runs this file again.
// (deploy/image/build.ts's startFlags reads them the same way; this file stays plain JavaScript.)
const startFlags = (/\bnode ((?:--\S+ )*)src\/main\.ts$/.exec(pkg.scripts.start ?? '')?.[1] ?? '').split(' ').filter(Boolean);
const newEnough = running > major || (running === major && runningMinor >= minor);
if (newEnough && cache && fs.existsSync(new URL('../src/main.ts', import.meta.url))) {
  if (!startFlags.every((flag) => process.execArgv.includes(flag))) {
    spawnSync(process.execPath, [...startFlags, fileURLToPath(import.meta.url)], { stdio: 'inherit' });
    process.exit(0);
  }
  // Quiet, as npm prints what a postinstall writes: a warning a module's import emits is not the install's.
  process.removeAllListeners('warning');
  // An import that never settled would otherwise end the process with code 13 and fail the
  // install; this ends it well, with whatever was cached by then, and holds it two minutes at most.
  setTimeout(() => process.exit(0), 120_000);
  try {
    const modules = fs.globSync('src/**/*.ts', { cwd: root }).filter((file) => !file.endsWith('.test.ts'));
    // Relative to the checkout, as npm start resolves it (it runs there).
    module.enableCompileCache(fileURLToPath(new URL(`../${cache}`, import.meta.url)));
    for (const file of modules) await import(new URL(`../${file}`, import.meta.url).href);
    module.flushCompileCache();
  } catch {
    // Best effort: whatever was imported before the failure is cached, and the install goes on.
  }
}
// Ended here: a module that left a timer or a handle open would otherwise hold the install.
process.exit(0);
