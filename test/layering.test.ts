/**
 * The layers point one way (README, "Development"): config <- core <- store <- tokens <-
 * flows <- http, ui <- app <- main, cli. A file may import from its own layer and those
 * below it, never from one above. This reads every import in `src/` and fails on one that
 * goes upward.
 */

import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../src');

/** Each layer's rank: a file may import ranks at or below its own. */
const RANKS: Readonly<Record<string, number>> = {
  config: 0,
  core: 1,
  store: 2,
  tokens: 3,
  flows: 4,
  http: 5,
  ui: 5,
  'app.ts': 6,
  'main.ts': 7,
  // Sizes libuv's pool before anything starts it: part of the composition root.
  'threadpool.ts': 7,
  // A worker thread's entry (main.ts, startThreads).
  'thread.ts': 7,
  cli: 7,
};

/** The layer of a path relative to `src/`: its first segment. */
function layerOf(path: string): string {
  const layer = path.split('/')[0]!;
  if (!(layer in RANKS)) throw new Error(`${path} is in no known layer: add its folder to RANKS`);
  return layer;
}

/** Static imports, re-exports, `import type` and dynamic `import('…')` of relative paths. */
const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

export interface Violation {
  readonly file: string;
  readonly imports: string;
}

/** The imports in `files` (path relative to `src/` -> source) that point to a higher layer. */
export function upwardImports(files: ReadonlyMap<string, string>): Violation[] {
  const violations: Violation[] = [];
  for (const [file, source] of files) {
    const rank = RANKS[layerOf(file)]!;
    for (const match of source.matchAll(IMPORT)) {
      const target = relative('.', join(dirname(file), match[1]!))
        .split('\\')
        .join('/');
      if (target.startsWith('..')) continue; // outside src/: node_modules or the like
      if (RANKS[layerOf(target)]! > rank) violations.push({ file, imports: target });
    }
  }
  return violations;
}

function sourceFiles(dir: string, found = new Map<string, string>()): Map<string, string> {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) sourceFiles(path, found);
    else if (entry.name.endsWith('.ts')) found.set(relative(SRC, path).split('\\').join('/'), readFileSync(path, 'utf8'));
  }
  return found;
}

describe('layering', () => {
  it('has no import in src/ that points to a higher layer', () => {
    const files = sourceFiles(SRC);
    assert.ok(files.size > 50, `read only ${files.size} files from ${SRC}`);
    assert.deepEqual(upwardImports(files), []);
  });

  it('reports an upward import, whatever form it takes', () => {
    const files = new Map([
      ['core/ok.ts', "import { loadConfig } from '../config/index.ts';\nimport { x } from './y.ts';"],
      ['core/static.ts', "import type { Store } from '../store/types.ts';"],
      ['tokens/dynamic.ts', "const { checkAuthorizationRequest } = await import('../flows/authorization-code/request.ts');"],
      ['http/reexport.ts', "export { buildApp } from '../app.ts';"],
      ['ui/side-effect.ts', "import '../cli/main.ts';"],
      ['store/deep.ts', "import {\n  openSqliteStore,\n} from './sqlite/../../tokens/keys.ts';"],
      ['http/sibling.ts', "import { page } from '../ui/pages.ts';"],
      ['main.ts', "import { buildApp } from './app.ts';"],
    ]);
    assert.deepEqual(upwardImports(files), [
      { file: 'core/static.ts', imports: 'store/types.ts' },
      { file: 'tokens/dynamic.ts', imports: 'flows/authorization-code/request.ts' },
      { file: 'http/reexport.ts', imports: 'app.ts' },
      { file: 'ui/side-effect.ts', imports: 'cli/main.ts' },
      { file: 'store/deep.ts', imports: 'tokens/keys.ts' },
    ]);
  });
});
