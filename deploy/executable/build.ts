/**
 * `npm run executable`: `dist/tessera`, Tessera as one file for a host without Node.js (a
 * Node.js single executable application): the Node.js binary of the `node` devDependency, the
 * one `npm start` runs, with the app injected into it.
 *
 * Node.js 24 runs one CommonJS script from inside its binary, and `require` there loads only its
 * own modules. So esbuild bundles deploy/executable/main.ts (the `tessera` command), src/ and
 * every production dependency into one script; the modules loaded lazily (`import()` of the
 * store, the app, the passkey library; the catalogues `require`d on first use) become parts of
 * the script that run when first asked for, as before. What src/ reads beside itself at run
 * time (the stylesheet, the passkeys scripts, package.json, the catalogues) is written into the
 * script: the few source forms that name such a file are rewritten below, each where it must
 * be found, and any other `import.meta` fails the build rather than the executable later. Then
 * `node --experimental-sea-config` makes the blob (the script, its V8 code cache, the Node.js
 * options of `npm start`), and postject injects it into a copy of the binary. Tessera has no
 * native addons, so nothing else is needed.
 *
 * Linux only for now: on macOS and Windows the binary must also be signed again.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, existsSync, globSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import type { Plugin } from 'esbuild';
import { nodeVersionProblem } from '../../src/config/node-version.ts';
import { startFlags } from '../image/build.ts';

export const ROOT = join(import.meta.dirname, '..', '..');
/** What `npm run executable` writes. */
export const EXECUTABLE = join(ROOT, 'dist', 'tessera');
/** The Node.js binary the executable is made of: the `node` devDependency's. */
export const NODE_BINARY = join(ROOT, 'node_modules', 'node', 'bin', 'node');
const ENTRY = join(import.meta.dirname, 'main.ts');
/** The name and the fuse Node.js looks for its blob by (doc/api/single-executable-applications.md). */
const BLOB_RESOURCE = 'NODE_SEA_BLOB';
const SENTINEL_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

const resolve = createRequire(import.meta.url).resolve;

/** Why an executable cannot be built here, or null when it can. */
export function cannotBuild(): string | null {
  if (process.platform !== 'linux') return `the single executable is built on Linux only (this is ${process.platform})`;
  if (!existsSync(NODE_BINARY)) return "node_modules/node/bin/node is missing: run npm ci (the executable is made of the `node` devDependency's binary)";
  for (const name of ['esbuild', 'postject']) {
    try {
      resolve(`${name}/package.json`);
    } catch {
      return `${name} is not installed: run npm ci (it is a devDependency)`;
    }
  }
  return null;
}

/**
 * What the executable is made of, as one hash: every file the bundle may take (src/, the
 * entry and this build, package.json and package-lock.json for the dependencies) and the
 * Node.js binary. The same hash, the same executable: the test builds it once per hash.
 */
export function sourceHash(): string {
  const hash = createHash('sha256');
  const files = [
    ...globSync('src/**/*', { cwd: ROOT }).filter((file) => !file.endsWith('.test.ts') && statSync(join(ROOT, file)).isFile()),
    ...globSync('deploy/executable/*', { cwd: ROOT }),
    'deploy/image/build.ts',
    'package.json',
    'package-lock.json',
  ].sort();
  for (const file of files)
    hash
      .update(`${file}\0`)
      .update(readFileSync(join(ROOT, file)))
      .update('\0');
  const node = statSync(NODE_BINARY);
  hash.update(`node ${node.size} ${node.mtimeMs}`);
  return hash.digest('hex');
}

/** One source form to replace in one file, which must be there: a source that changed fails the build, naming it. */
interface Rewrite {
  readonly file: string;
  readonly from: string | RegExp;
  readonly to: (match: RegExpExecArray) => string;
  readonly why: string;
}

/** A string literal of a file's text. */
const literal = (path: string): string => JSON.stringify(readFileSync(path, 'utf8'));

/**
 * A module that loads packages on first use through `const load = createRequire(import.meta.url)`
 * and `load('…')`: the line goes, and each load `loads` matches (its package in the first
 * group) becomes the bundle's own `require`, so that esbuild bundles the package.
 */
const loadedFromBundle = (file: string, loads: RegExp, why: string): Rewrite[] => [
  { file, from: 'const load = createRequire(import.meta.url);', to: () => '', why: `${why}: required from the bundle itself` },
  { file, from: loads, to: (match) => `require('${match[1]}')`, why },
];

const REWRITES: readonly Rewrite[] = [
  {
    file: 'src/http/passkeys.ts',
    from: /readFileSync\(\s*fileURLToPath\(new URL\('([^']+)', import\.meta\.resolve\('([^']+)'\)\)\),\s*'utf8',?\s*\)/,
    to: (match) => literal(fileURLToPath(new URL(match[1]!, import.meta.resolve(match[2]!)))),
    why: "@simplewebauthn/browser's bundle, which the passkey pages load",
  },
  {
    file: 'src/ui/i18n.ts',
    from: 'const requireCatalogue = createRequire(import.meta.url);',
    to: () => '',
    why: 'the catalogues are required from the bundle itself',
  },
  {
    file: 'src/ui/i18n.ts',
    from: "const EXTENSION = import.meta.url.slice(import.meta.url.lastIndexOf('.'));",
    to: () => '',
    why: 'the catalogues are bundled from src/',
  },
  {
    file: 'src/ui/i18n.ts',
    // A `require` of a template esbuild bundles every file it can match: each catalogue, run on first use.
    from: 'requireCatalogue(`./locales/${locale}${EXTENSION}`)',
    to: () => 'require(`./locales/${locale}.ts`)',
    why: 'the catalogues other than English are loaded on first use',
  },
  ...loadedFromBundle('src/http/schema-compilers.ts', /\bload\('(@fastify\/[a-z-]+)'\)/g, "Fastify's compilers, loaded when the first schema compiles"),
  {
    file: 'src/core/node-http.ts',
    from: 'const load = createRequire(import.meta.url);',
    to: () => 'const load = require;',
    why: "node:http and node:https, required as the script's own built-ins",
  },
  ...loadedFromBundle(
    'src/core/outbound.ts',
    /\bload\('(undici\/lib\/[a-z/-]+\.js)'\)/g,
    "undici's Agent, connector and request, loaded on the first request to a URL a client registered",
  ),
  {
    file: 'src/flows/saml/xml.ts',
    from: "createRequire(import.meta.url)('@xmldom/xmldom')",
    to: () => "require('@xmldom/xmldom')",
    why: "the SAML endpoints' XML parser, required from the bundle itself",
  },
  {
    file: 'src/flows/saml/xml.ts',
    from: "createRequire(import.meta.url)('xml-crypto')",
    to: () => "require('xml-crypto')",
    why: 'the XML Signature library, required from the bundle itself',
  },
  {
    file: 'src/flows/saml/response.ts',
    from: "createRequire(import.meta.url)('xml-encryption')",
    to: () => "require('xml-encryption')",
    why: 'the encryption of assertions for SPs that registered a certificate, required from the bundle itself',
  },
  {
    file: 'src/flows/upstream/ldap.ts',
    from: "createRequire(import.meta.url)('ldapts')",
    to: () => "require('ldapts')",
    why: 'the LDAP client, required from the bundle itself when a directory is first asked or a filter checked',
  },
  {
    file: 'src/cli/main.ts',
    from: "if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) cli();",
    to: () => '',
    why: "the executable's entry runs the command",
  },
  {
    file: 'src/main.ts',
    from: "const entry = new URL(import.meta.url.endsWith('.ts') ? './thread.ts' : './thread.js', import.meta.url);",
    to: () => "const entry = '';",
    why: 'the executable runs its workers as node:cluster processes: it has no script file for a worker thread to load',
  },
  {
    file: 'src/main.ts',
    from: "if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {",
    to: () => 'if (false) {',
    why: 'the server runs through the command (`tessera serve`)',
  },
];

/** `readFileSync(new URL('./style.css', import.meta.url), 'utf8')`, anywhere in src/: the file's text. */
const READ_BESIDE = /readFileSync\(new URL\('([^']+)', import\.meta\.url\), 'utf8'\)/g;

/** The esbuild plugin that applies REWRITES and READ_BESIDE to src/ as it is loaded. */
function rewrites(): Plugin {
  return {
    name: 'tessera-executable',
    setup(build) {
      const applied = new Set<Rewrite>();
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        const file = relative(ROOT, args.path);
        if (!file.startsWith(`src${sep}`)) return undefined;
        let source = readFileSync(args.path, 'utf8');
        for (const rewrite of REWRITES.filter((candidate) => candidate.file === file)) {
          const pattern =
            typeof rewrite.from === 'string'
              ? new RegExp(rewrite.from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g')
              : new RegExp(rewrite.from.source, rewrite.from.flags.includes('g') ? rewrite.from.flags : `${rewrite.from.flags}g`);
          const replaced = source.replace(pattern, (...groups) => rewrite.to(groups as unknown as RegExpExecArray));
          if (replaced !== source) applied.add(rewrite);
          source = replaced;
        }
        source = source.replace(READ_BESIDE, (_whole, path: string) => literal(fileURLToPath(new URL(path, pathToFileURL(args.path)))));
        return { contents: source, loader: 'ts' };
      });
      build.onEnd((result) => {
        for (const rewrite of REWRITES.filter((candidate) => !applied.has(candidate))) {
          result.errors.push({
            id: '',
            pluginName: 'tessera-executable',
            location: null,
            notes: [],
            detail: undefined,
            text: `${rewrite.file} no longer has ${String(rewrite.from)} (${rewrite.why}): change deploy/executable/build.ts with it`,
          });
        }
      });
    },
  };
}

export interface BuiltExecutable {
  readonly path: string;
  readonly bytes: number;
  /** The bundled script's size. */
  readonly scriptBytes: number;
  /** The version of Node.js inside. */
  readonly node: string;
  readonly seconds: number;
}

export interface BuildOptions {
  /** Where the executable goes (replaced): `dist/tessera` by default. */
  readonly output?: string;
  readonly log?: (line: string) => void;
}

async function run(command: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout, stderr } = await promisify(execFile)(command, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
    return stdout + stderr;
  } catch (error) {
    const failed = error as { code?: number | string; stderr?: string; stdout?: string };
    throw new Error(`${relative(ROOT, command)} ${args.join(' ')} failed (${failed.code}):\n${failed.stderr ?? ''}${failed.stdout ?? ''}`);
  }
}

export async function buildExecutable(options: BuildOptions = {}): Promise<BuiltExecutable> {
  const started = Date.now();
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const problem = cannotBuild();
  if (problem !== null) throw new Error(problem);
  const output = options.output ?? EXECUTABLE;
  const work = `${output}.build`;
  rmSync(work, { recursive: true, force: true });
  mkdirSync(work, { recursive: true });
  try {
    const node = (await run(NODE_BINARY, ['--version'])).trim().replace(/^v/, '');
    // The executable's Node.js is the one built in: checked here, against package.json's
    // engines.node, and again by src/config/require-node.ts when the executable starts.
    const tooOld = nodeVersionProblem(node, NODE_BINARY);
    if (tooOld !== null) throw new Error(tooOld);
    const script = join(work, 'tessera.cjs');
    log('executable: bundling deploy/executable/main.ts, src/ and the production dependencies (esbuild)');
    const { build } = (await import('esbuild')).default;
    const bundled = await build({
      entryPoints: [ENTRY],
      outfile: script,
      bundle: true,
      platform: 'node',
      format: 'cjs',
      target: `node${node.split('.')[0]}`,
      // pg's optional native binding, which it loads only when asked to (never by Tessera).
      external: ['pg-native'],
      plugins: [rewrites()],
      // import.meta is empty in a CommonJS script: one left in src/ would be a file not found at run time.
      logOverride: { 'empty-import-meta': 'error' },
      logLevel: 'silent',
      legalComments: 'eof',
    }).catch((error: { errors?: { text: string; location?: { file: string; line: number } | null }[] }) => {
      throw new Error(
        `esbuild: ${(error.errors ?? []).map((e) => `${e.location ? `${e.location.file}:${e.location.line}: ` : ''}${e.text}`).join('\n') || String(error)}`,
      );
    });
    if (bundled.errors.length > 0) throw new Error(bundled.errors.map((e) => e.text).join('\n'));

    const blob = join(work, 'tessera.blob');
    const config = join(work, 'sea-config.json');
    writeFileSync(
      config,
      `${JSON.stringify(
        {
          main: script,
          output: blob,
          disableExperimentalSEAWarning: true,
          // Compiled once here, not at each start of a command.
          useCodeCache: true,
          // `npm start`'s Node.js options, as the image's entrypoint has them (NODE_OPTIONS adds to them).
          execArgv: startFlags(),
        },
        null,
        2,
      )}\n`,
    );
    log('executable: the blob (node --experimental-sea-config)');
    // With the same V8 flags as the executable runs with: V8 rejects a code cache made under others.
    await run(NODE_BINARY, [...startFlags(), '--experimental-sea-config', config]);

    log(`executable: injecting it into a copy of ${relative(ROOT, NODE_BINARY)} (postject)`);
    const binary = join(work, 'tessera');
    copyFileSync(NODE_BINARY, binary);
    chmodSync(binary, 0o755);
    // LIEF, inside postject, warns about the binary's unnamed notes: noise, left out.
    await run(NODE_BINARY, [resolve('postject/dist/cli.js'), binary, BLOB_RESOURCE, blob, '--sentinel-fuse', SENTINEL_FUSE]);
    mkdirSync(dirname(output), { recursive: true });
    renameSync(binary, output);
    return { path: output, bytes: statSync(output).size, scriptBytes: statSync(script).size, node, seconds: (Date.now() - started) / 1000 };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (import.meta.filename === process.argv[1]) {
  try {
    const built = await buildExecutable();
    const path = relative(process.cwd(), built.path);
    process.stdout.write(
      `executable: ${path} (${(built.bytes / 1024 / 1024).toFixed(1)} MB: Node.js ${built.node} and a ${(built.scriptBytes / 1024 / 1024).toFixed(1)} MB script)\n` +
        `  try:  ${path} --version\n` +
        `  built in ${built.seconds.toFixed(1)} s\n`,
    );
  } catch (error) {
    process.stderr.write(`executable: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
