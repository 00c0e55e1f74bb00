#!/usr/bin/env node
/**
 * The `tessera` command in a checkout or release: `node bin/tessera.js <command>` (docs/deployment.md).
 * Plain JavaScript that any Node.js reads, so that a Node.js too old for Tessera, which cannot
 * load TypeScript at all (ERR_UNKNOWN_FILE_EXTENSION ".ts" on Node.js 20), is told so in one
 * line before anything else. The minimum is package.json's engines.node, as
 * src/config/node-version.ts reads it, which checks it again for entry points run directly.
 */
import { readFileSync } from 'node:fs';
// A default import: a Node.js too old for Tessera has no enableCompileCache, and a named import
// of it would fail before the version check below could say so.
import module from 'node:module';
import { fileURLToPath } from 'node:url';

const engines = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines.node;
const [major, minor] = /^>=\s*(\d+)(?:\.(\d+))?/
  .exec(engines)
  .slice(1)
  .map((part) => Number(part || 0));
const [have, haveMinor] = process.versions.node.split('.').map(Number);
if (have < major || (have === major && haveMinor < minor)) {
  process.stderr.write(
    `tessera: Tessera needs Node.js ${major}.${minor} or later; this is Node.js ${process.versions.node} (${process.execPath}). ` +
      `Install Node.js ${major} (https://nodejs.org/en/download or your system's packages), or in a checkout run it through npm: ` +
      `\`npm install\` brings Node.js ${major}, which \`npm start\` and \`npm run tessera -- <command>\` use\n`,
  );
  process.exit(1);
}
// Type stripping and node:sqlite may warn that they are experimental: not news to an operator.
process.removeAllListeners('warning');
process.on('warning', (warning) => {
  if (warning.name !== 'ExperimentalWarning') process.stderr.write(`${warning.name}: ${warning.message}\n`);
});
// Node's compile cache keeps each module of src/ with its types stripped: a command then takes
// less than half the CPU it took stripping them (0.21-0.24 against 0.50-0.54 s for `tessera
// client list` on a 2-core machine). The directory npm start keeps its cache in: Node files
// the code of each set of V8 flags apart, so the server's and the commands' do not displace
// each other. Where it cannot be written (a read-only image), or NODE_COMPILE_CACHE already
// names one, this changes nothing.
module.enableCompileCache?.(fileURLToPath(new URL('../node_modules/.cache/tessera', import.meta.url)));
void import('../src/cli/main.ts').then(({ cli }) => cli());
