/**
 * The single executable's entry (deploy/executable/build.ts bundles it, with everything it
 * imports, into the one CommonJS script Node.js runs from inside `dist/tessera`): the `tessera`
 * command, as bin/tessera.js runs it in a checkout. src/cli/main.ts checks the Node.js version
 * first, as it does there, against the Node.js built in.
 */
import cluster from 'node:cluster';
import { cli } from '../../src/cli/main.ts';

// `serve --workers N` forks this executable again (node:cluster). A fork passes a script's path
// and the parent's Node.js options ahead of the command line, but an executable has no script to
// name and takes every argument as the command's own (its Node.js options are built in, see
// build.ts): so the workers get no options, the executable's own path as the "script", and drop
// it again here, where each process sees its command line.
if (cluster.isPrimary) {
  cluster.setupPrimary({ exec: process.execPath, execArgv: [] });
} else if (process.argv[2] === process.execPath) {
  process.argv.splice(2, 1);
}

cli();
