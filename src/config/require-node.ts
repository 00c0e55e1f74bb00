/**
 * Imported first by src/main.ts and src/cli/main.ts, so that it runs before any other module
 * (ES modules are evaluated in import order): on a Node.js too old for Tessera, one line and
 * exit status 1 instead of a stack trace further in.
 */
import { nodeVersionProblem } from './node-version.ts';

const problem = nodeVersionProblem();
if (problem !== null) {
  process.stderr.write(`tessera: ${problem}\n`);
  process.exit(1);
}
