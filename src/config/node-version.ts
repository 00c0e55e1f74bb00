/**
 * The Node.js version check every entry point makes before anything else: on an
 * older Node.js, Tessera failed with a stack trace (ERR_UNKNOWN_FILE_EXTENSION ".ts", "No such
 * built-in module: node:sqlite") instead of saying what to install. The minimum is
 * package.json's `engines.node`, which npm reads too; bin/tessera.js, the entry for Node.js
 * versions that cannot load TypeScript at all, reads it there as well.
 */
import { PACKAGE } from './package.ts';

/** `>=24.7` from package.json, as [24, 7]. */
export function minimumNode(): readonly [number, number] {
  const engines = PACKAGE.engines?.node ?? '';
  const match = /^>=\s*(\d+)(?:\.(\d+))?/.exec(engines);
  if (!match) throw new Error(`package.json engines.node ${JSON.stringify(engines)}: expected >=MAJOR.MINOR`);
  return [Number(match[1]), Number(match[2] ?? 0)];
}

/** The line to print when `version` is older than the minimum, or null. */
export function nodeVersionProblem(version: string = process.versions.node, executable: string = process.execPath): string | null {
  const [major, minor] = minimumNode();
  const [have, haveMinor] = version.split('.').map(Number) as [number, number];
  if (have > major || (have === major && haveMinor >= minor)) return null;
  return (
    `Tessera needs Node.js ${major}.${minor} or later; this is Node.js ${version} (${executable}). ` +
    `Install Node.js ${major} (https://nodejs.org/en/download or your system's packages), or in a checkout run it through npm: ` +
    `\`npm install\` brings Node.js ${major}, which \`npm start\` and \`npm run tessera -- <command>\` use`
  );
}
