/**
 * Run by `npm install` in a checkout (package.json's postinstall). On a Node.js older than
 * package.json's engines.node, npm has just printed `npm warn EBADENGINE` for Tessera and for
 * packages that want a newer Node.js than the one running npm (cookie@2 wants 22). They read
 * like a failed install, and are not: the install brought Node.js 24 (the `node` devDependency),
 * and `npm start`, `npm test` and `npm run tessera` run on it. This says so, once, right under
 * them. On a Node.js new enough it prints nothing. Plain JavaScript, as bin/tessera.js, so that
 * any Node.js can run it.
 *
 * npm then runs bin/warm-compile-cache.js (package.json's postinstall), a script of its own so
 * that what each does is run and tested alone: this one reads two strings, that one imports
 * every module of src/.
 */
import { existsSync, readFileSync } from 'node:fs';

const engines = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines.node;
const [major, minor] = /^>=\s*(\d+)(?:\.(\d+))?/
  .exec(engines)
  .slice(1)
  .map((part) => Number(part || 0));
// The Node.js that runs npm (npm's user agent: "npm/11.6.2 node/v20.20.2 linux x64 …"), not the
// one running this script, which is the devDependency's wherever npm put it on PATH.
const npmNode = /\bnode\/v(\d+)\.(\d+)/.exec(process.env.npm_config_user_agent ?? '');
if (npmNode) {
  const [have, haveMinor] = npmNode.slice(1).map(Number);
  // Without the devDependencies (`npm ci --omit=dev`, or Tessera installed as a package) no
  // Node.js came with the install, and the warnings mean what they say.
  const brought = existsSync(new URL('../node_modules/node/package.json', import.meta.url));
  if (have < major || (have === major && haveMinor < minor)) {
    process.stdout.write(
      brought
        ? `\nTessera: the EBADENGINE warnings above are expected on Node.js ${have}.${haveMinor}, and the install worked.\n` +
            `npm brought Node.js ${major} for Tessera (the "node" devDependency): npm start, npm test and npm run tessera run on it.\n` +
            `Only running src/ directly (node src/main.ts) needs Node.js ${major}.${minor} or later installed.\n\n`
        : `\nTessera needs Node.js ${major}.${minor} or later to run, and this is Node.js ${have}.${haveMinor} (the EBADENGINE warnings above).\n` +
            `Install Node.js ${major} (https://nodejs.org/en/download or your system's packages), or install with the devDependencies, which bring it.\n\n`,
    );
  }
}
