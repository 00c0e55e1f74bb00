/**
 * `npm run image`: the OCI image `tessera:<version>`, built FROM scratch by buildah (no daemon,
 * no base image to pull) and written as an OCI layout to `dist/image/`, which `skopeo copy
 * oci:dist/image:<version> docker://REGISTRY/tessera:<version>` pushes anywhere; beside it,
 * `dist/image.cdx.json`, a CycloneDX SBOM of everything in the image.
 *
 * The root file system is assembled here, from what this machine already has: the Node.js
 * binary of the `node` devDependency (the one `npm start` runs), the shared libraries `ldd`
 * says it links (glibc, libstdc++, libgcc) and Debian's CA certificates, the production
 * dependencies as `npm ci --omit=dev` installs them from package-lock.json, and src/. Tessera
 * has no native addons, so that is all it needs.
 *
 * Four layers, from the least to the most often changed (runtime, dependencies, the empty
 * `/data`, the app), so a new version of Tessera is a new app layer of a few hundred KB and
 * buildah's layer cache (`--layers`) rebuilds only what changed. Reproducible: every file's
 * time is the epoch (`--timestamp 0`, which buildah also writes as the image's `created`; the
 * commit's time is the `org.opencontainers.image.created` label), modes are normalised, and
 * layers are written in path order, so two builds of one commit on machines of one kind give
 * one digest. The epoch rather than the commit's time: a layer taken from the cache keeps the
 * times it was built with, and a fresh build must give the same bytes.
 *
 * The staging and the production dependencies are kept in node_modules/.cache/tessera-image/
 * (the dependencies by the hash of package.json and package-lock.json), the layers in
 * containers-storage, where `podman run tessera:<version>` finds the image too.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';

export const ROOT = join(import.meta.dirname, '..', '..');
const CACHE = join(ROOT, 'node_modules', '.cache', 'tessera-image');
const CONTEXT = join(CACHE, 'context');
/** The OCI layout `npm run image` writes, and the SBOM beside it. */
export const LAYOUT = join(ROOT, 'dist', 'image');
export const SBOM = join(ROOT, 'dist', 'image.cdx.json');

/** The image's user: numeric, so that Kubernetes' runAsNonRoot can check it without /etc/passwd. */
export const IMAGE_UID = 10001;
/** Where the launcher puts the command, and the app. */
const APP = '/app';
const COMMAND = '/usr/local/bin/tessera';
const NODE = '/usr/local/bin/node';

interface PackageJson {
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly license: string;
  readonly repository?: string | { readonly url: string };
  readonly scripts: Readonly<Record<string, string>>;
}

const packageJson = (): PackageJson => JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as PackageJson;

/** Runs a command, its output returned; a failure throws with what it wrote. */
async function run(command: string, args: readonly string[], options: { cwd?: string } = {}): Promise<string> {
  try {
    return (await promisify(execFile)(command, args, { cwd: options.cwd ?? ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch (error) {
    const failed = error as { status?: number; stderr?: string; stdout?: string; code?: string };
    if (failed.code === 'ENOENT') throw new Error(`${command} is not installed: apt-get install ${command === 'buildah' ? 'buildah' : command} (see .ci/run)`);
    throw new Error(`${command} ${args.join(' ')} failed (${failed.status ?? failed.code}):\n${failed.stderr ?? ''}${failed.stdout ?? ''}`);
  }
}

/** The Node.js flags `npm start` runs the server with, which the image's entrypoint passes too. */
export function startFlags(pkg: PackageJson = packageJson()): string[] {
  const flags = /\bnode ((?:--\S+ )*)src\/main\.ts$/.exec(pkg.scripts['start'] ?? '')?.[1];
  if (flags === undefined) throw new Error("package.json's start script is not `exec node FLAGS… src/main.ts`: the entrypoint takes its flags from it");
  return flags.trim().split(/\s+/).filter(Boolean);
}

/**
 * The environment `npm start` sets before it runs Node.js (`NAME=value exec node …`), which
 * the image sets too: glibc's `MALLOC_ARENA_MAX` is read only when a process starts. All but
 * `NODE_COMPILE_CACHE`: a directory in the checkout, where the image's root is read-only.
 */
export function startEnvironment(pkg: PackageJson = packageJson()): Record<string, string> {
  const before = /^((?:[A-Z_][A-Z0-9_]*=\S* )*)exec node /.exec(pkg.scripts['start'] ?? '')?.[1] ?? '';
  return Object.fromEntries(
    before
      .trim()
      .split(/\s+/)
      .filter(Boolean)
      .map((word) => [word.slice(0, word.indexOf('=')), word.slice(word.indexOf('=') + 1)])
      .filter(([name]) => name !== 'NODE_COMPILE_CACHE'),
  );
}

/** The shared libraries `ldd` names for a binary: each path as the loader finds it. */
async function sharedLibraries(binary: string): Promise<string[]> {
  const paths = new Set<string>();
  for (const line of (await run('ldd', [binary])).split('\n')) {
    // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)` or the loader, `/lib64/ld-linux-x86-64.so.2 (0x…)`.
    const path = /=>\s+(\/\S+)/.exec(line)?.[1] ?? /^\s*(\/\S+)\s+\(/.exec(line)?.[1];
    if (path) paths.add(path);
    else if (/not found/.test(line)) throw new Error(`ldd ${binary}: ${line.trim()}`);
  }
  return [...paths].sort();
}

/** The Debian package (name, version, architecture) that owns a file, by its path or its real path. */
async function debianPackage(path: string): Promise<{ name: string; version: string; arch: string }> {
  for (const candidate of [path, realpathSync(path), join('/usr', path)]) {
    try {
      const owner = (await run('dpkg-query', ['--search', candidate])).split(':')[0]!;
      return await debianPackageNamed(owner);
    } catch {
      // Not this path (a merged /usr names a library by /lib/… and dpkg by /usr/lib/…): the next.
    }
  }
  throw new Error(`no Debian package owns ${path}`);
}

async function debianPackageNamed(name: string): Promise<{ name: string; version: string; arch: string }> {
  const [, version, arch] = (await run('dpkg-query', ['--show', '--showformat=${Package}\t${Version}\t${Architecture}', name])).split('\t');
  return { name, version: version!, arch: arch! };
}

/** Copies a file (following links), creating its directory. */
function place(from: string, to: string, mode = 0o644): void {
  mkdirSync(dirname(to), { recursive: true });
  copyFileSync(from, to);
  chmodSync(to, mode);
}

function write(to: string, text: string, mode = 0o644): void {
  mkdirSync(dirname(to), { recursive: true });
  writeFileSync(to, text);
  chmodSync(to, mode);
}

/** Directories 0755, files 0644 or 0755 when executable: the same on every machine, whatever its umask. */
function normaliseModes(dir: string): void {
  chmodSync(dir, 0o755);
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) normaliseModes(path);
    else if (entry.isFile()) chmodSync(path, lstatSync(path).mode & 0o111 ? 0o755 : 0o644);
  }
}

export interface Component {
  readonly kind: 'node' | 'debian' | 'npm';
  readonly name: string;
  readonly version: string;
  readonly purl: string;
  readonly license?: string;
  readonly sha256?: string;
  readonly integrity?: string;
}

/**
 * runtime/: Node.js, the libraries it links, CA certificates, the /etc files a process
 * expects (a user and group for the numeric id, localhost, the name service order), the
 * licences of what it ships, and the `tessera` command.
 */
async function stageRuntime(dir: string): Promise<Component[]> {
  const node = join(ROOT, 'node_modules', 'node', 'bin', 'node');
  if (!existsSync(node)) throw new Error('node_modules/node/bin/node is missing: run npm ci first (the image takes Node.js from the `node` devDependency)');
  const nodeVersion = (await run(node, ['--version'])).trim().replace(/^v/, '');
  place(node, join(dir, NODE), 0o755);
  const components: Component[] = [
    {
      kind: 'node',
      name: 'node',
      version: nodeVersion,
      purl: `pkg:npm/node-${process.platform}-${process.arch}@${nodeVersion}`,
      license: 'MIT',
      sha256: createHash('sha256').update(readFileSync(node)).digest('hex'),
    },
  ];

  const debian = new Map<string, { name: string; version: string; arch: string }>();
  for (const library of await sharedLibraries(node)) {
    place(library, join(dir, library), 0o755);
    const owner = await debianPackage(library);
    debian.set(owner.name, owner);
  }
  place('/etc/ssl/certs/ca-certificates.crt', join(dir, 'etc/ssl/certs/ca-certificates.crt'));
  const certificates = await debianPackageNamed('ca-certificates');
  debian.set(certificates.name, certificates);
  for (const owner of debian.values()) {
    const copyright = `/usr/share/doc/${owner.name}/copyright`;
    if (existsSync(copyright)) place(copyright, join(dir, copyright));
    const arch = owner.arch === 'all' ? '' : `&arch=${owner.arch}`;
    components.push({
      kind: 'debian',
      name: owner.name,
      version: owner.version,
      purl: `pkg:deb/debian/${owner.name}@${encodeURIComponent(owner.version)}?distro=${debianRelease()}${arch}`,
    });
  }

  write(join(dir, 'etc/passwd'), `root:x:0:0:root:/root:/sbin/nologin\ntessera:x:${IMAGE_UID}:${IMAGE_UID}:Tessera:/data:/sbin/nologin\n`);
  write(join(dir, 'etc/group'), `root:x:0:\ntessera:x:${IMAGE_UID}:\n`);
  write(join(dir, 'etc/hosts'), '127.0.0.1\tlocalhost\n::1\tlocalhost\n');
  write(join(dir, 'etc/nsswitch.conf'), 'passwd: files\ngroup: files\nhosts: files dns\n');
  place(join(import.meta.dirname, 'tessera'), join(dir, COMMAND), 0o755);
  mkdirSync(join(dir, 'tmp'), { recursive: true });
  return components;
}

function debianRelease(): string {
  const release = /^VERSION_ID="?(\d+)/m.exec(readFileSync('/etc/os-release', 'utf8'))?.[1];
  return release ? `debian-${release}` : 'debian';
}

/**
 * deps/node_modules: the production dependencies, installed from package-lock.json by `npm ci
 * --omit=dev` (no install scripts: none of them has a native part), once per lockfile.
 */
async function stageDependencies(dir: string): Promise<Component[]> {
  const key = createHash('sha256')
    .update(readFileSync(join(ROOT, 'package-lock.json')))
    .digest('hex');
  const stamp = join(dir, '.installed-from');
  if (!existsSync(stamp) || readFileSync(stamp, 'utf8') !== key) {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
    copyFileSync(join(ROOT, 'package-lock.json'), join(dir, 'package-lock.json'));
    process.stdout.write('image: installing the production dependencies (npm ci --omit=dev)\n');
    await run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error'], { cwd: dir });
    normaliseModes(join(dir, 'node_modules'));
    writeFileSync(stamp, key);
  }
  // What was installed, as npm recorded it in node_modules.
  const installed = JSON.parse(readFileSync(join(dir, 'node_modules', '.package-lock.json'), 'utf8')) as {
    packages: Record<string, { version: string; integrity?: string; license?: string; name?: string }>;
  };
  return Object.entries(installed.packages)
    .map(([path, entry]) => {
      const name = entry.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
      const purlName = name.startsWith('@') ? `%40${name.slice(1)}` : name;
      return {
        kind: 'npm' as const,
        name,
        version: entry.version,
        purl: `pkg:npm/${purlName}@${entry.version}`,
        ...(entry.license ? { license: entry.license } : {}),
        ...(entry.integrity ? { integrity: entry.integrity } : {}),
      };
    })
    .filter((component, index, all) => all.findIndex((other) => other.purl === component.purl) === index)
    .sort((a, b) => a.purl.localeCompare(b.purl));
}

/** app/: src/ without its unit tests, package.json (the modules' type) and the licence. */
function stageApp(dir: string): void {
  cpSync(join(ROOT, 'src'), join(dir, 'src'), { recursive: true, filter: (source) => !source.endsWith('.test.ts') });
  copyFileSync(join(ROOT, 'package.json'), join(dir, 'package.json'));
  copyFileSync(join(ROOT, 'LICENSE'), join(dir, 'LICENSE'));
  normaliseModes(dir);
}

/** The Containerfile, written here so the entrypoint's flags are `npm start`'s. */
function containerfile(pkg: PackageJson, labels: Readonly<Record<string, string>>): string {
  const flags = startFlags(pkg);
  const entrypoint = [NODE, ...(flags.includes('--disable-warning=ExperimentalWarning') ? [] : ['--disable-warning=ExperimentalWarning']), ...flags, COMMAND];
  const environment = Object.entries(startEnvironment(pkg))
    .map(([name, value]) => ` ${name}=${value}`)
    .join('');
  return `# Written by deploy/image/build.ts (npm run image), which stages the context.
FROM scratch
# Node.js, the Debian libraries it links, CA certificates, /etc, and the tessera command.
COPY runtime/ /
# The production dependencies, as npm ci --omit=dev installs them from package-lock.json.
COPY deps/node_modules/ ${APP}/node_modules/
# The one writable place (a volume): the SQLite database and its key file.
COPY --chown=${IMAGE_UID}:${IMAGE_UID} volume/ /
# Tessera.
COPY app/ ${APP}/
USER ${IMAGE_UID}:${IMAGE_UID}
# The default database, ./data/tessera.db, is then /data/tessera.db.
WORKDIR /
ENV PATH=/usr/local/bin HOST=0.0.0.0 PORT=8080${environment}
EXPOSE 8080
VOLUME /data
ENTRYPOINT ${JSON.stringify(entrypoint)}
CMD ["serve"]
${Object.entries(labels)
  .map(([name, value]) => `LABEL ${name}=${JSON.stringify(value)}`)
  .join('\n')}
`;
}

export interface BuiltImage {
  /** `tessera:<version>` in containers-storage. */
  readonly name: string;
  readonly tag: string;
  /** The OCI layout, and the digest of the image's manifest in it (what a registry serves). */
  readonly layout: string;
  readonly digest: string;
  /** Compressed: the layers and the config, as pushed. */
  readonly bytes: number;
  readonly sbom: string;
  readonly labels: Readonly<Record<string, string>>;
}

export interface BuildOptions {
  /** Where the OCI layout goes (replaced): `dist/image` by default. */
  readonly layout?: string;
  /** Where the SBOM goes. */
  readonly sbom?: string;
  /** Build every layer again rather than take it from buildah's cache. */
  readonly noCache?: boolean;
  /** The name in containers-storage (`tessera` by default). */
  readonly name?: string;
  readonly log?: (line: string) => void;
}

/** The image's labels: what, which version, from which commit. */
export async function imageLabels(pkg: PackageJson = packageJson()): Promise<Record<string, string>> {
  const revision = (await run('git', ['rev-parse', 'HEAD'])).trim();
  const committed = Number((await run('git', ['log', '-1', '--format=%ct'])).trim());
  const repository = typeof pkg.repository === 'string' ? pkg.repository : pkg.repository?.url;
  const labels: Record<string, string> = {
    'org.opencontainers.image.title': pkg.name,
    'org.opencontainers.image.description': pkg.description,
    'org.opencontainers.image.version': pkg.version,
    'org.opencontainers.image.revision': revision,
    'org.opencontainers.image.created': new Date(committed * 1000).toISOString().replace(/\.000Z$/, 'Z'),
    'org.opencontainers.image.licenses': pkg.license,
  };
  // Where the source is: package.json's repository, or TESSERA_IMAGE_SOURCE; not a guess.
  const source = process.env['TESSERA_IMAGE_SOURCE'] || repository?.replace(/^git\+/, '');
  if (source) labels['org.opencontainers.image.source'] = source;
  return labels;
}

export async function buildImage(options: BuildOptions = {}): Promise<BuiltImage> {
  const log = options.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const pkg = packageJson();
  const layout = options.layout ?? LAYOUT;
  const sbomPath = options.sbom ?? SBOM;
  const name = `${options.name ?? 'tessera'}:${pkg.version}`;
  const labels = await imageLabels(pkg);

  // The context: everything but the dependencies is staged afresh; buildah's cache compares contents.
  for (const part of ['runtime', 'app', 'volume']) rmSync(join(CONTEXT, part), { recursive: true, force: true });
  const runtime = await stageRuntime(join(CONTEXT, 'runtime'));
  normaliseModes(join(CONTEXT, 'runtime'));
  chmodSync(join(CONTEXT, 'runtime', 'tmp'), 0o1777);
  const dependencies = await stageDependencies(join(CONTEXT, 'deps'));
  stageApp(join(CONTEXT, 'app'));
  // /data as a directory of its own, with its mode: only the image's user reads the database and its key.
  mkdirSync(join(CONTEXT, 'volume', 'data'), { recursive: true });
  chmodSync(join(CONTEXT, 'volume'), 0o755);
  chmodSync(join(CONTEXT, 'volume', 'data'), 0o700);
  writeFileSync(join(CONTEXT, 'Containerfile'), containerfile(pkg, labels));

  log(`image: buildah build ${name}${options.noCache ? ' (no cache)' : ''}`);
  // Pushed by its id, not its name: a build elsewhere on this machine may take the name meanwhile.
  const idFile = join(CACHE, `${options.name ?? 'tessera'}.iid`);
  await run('buildah', [
    'build',
    '--format=oci',
    '--layers',
    ...(options.noCache ? ['--no-cache'] : []),
    '--timestamp=0',
    '--identity-label=false',
    '--pull=never',
    '--iidfile',
    idFile,
    '--tag',
    name,
    '--file',
    join(CONTEXT, 'Containerfile'),
    CONTEXT,
  ]);
  const id = readFileSync(idFile, 'utf8')
    .trim()
    .replace(/^sha256:/, '');
  rmSync(layout, { recursive: true, force: true });
  mkdirSync(dirname(layout), { recursive: true });
  await run('buildah', ['push', '--format=oci', '--quiet', id, `oci:${layout}:${pkg.version}`]);

  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: { digest: string }[] };
  const digest = index.manifests[0]!.digest;
  const manifest = JSON.parse(readFileSync(join(layout, 'blobs', ...digest.split(':')), 'utf8')) as { config: { size: number }; layers: { size: number }[] };
  const bytes = manifest.config.size + manifest.layers.reduce((sum, layer) => sum + layer.size, 0);

  writeFileSync(sbomPath, `${JSON.stringify(cycloneDx(pkg, digest, labels, [...runtime, ...dependencies]), null, 2)}\n`);
  return { name, tag: pkg.version, layout, digest, bytes, sbom: sbomPath, labels };
}

/** CycloneDX 1.5: the image, and each thing in it with its package URL (and hash, where there is one). */
function cycloneDx(pkg: PackageJson, digest: string, labels: Readonly<Record<string, string>>, components: readonly Component[]): unknown {
  const hashes = (component: Component) => {
    if (component.sha256) return [{ alg: 'SHA-256', content: component.sha256 }];
    const integrity = /^sha512-(.+)$/.exec(component.integrity ?? '')?.[1];
    return integrity ? [{ alg: 'SHA-512', content: Buffer.from(integrity, 'base64').toString('hex') }] : [];
  };
  const licenses = (license: string | undefined) => (license ? [/^[\w.-]+$/.test(license) ? { license: { id: license } } : { expression: license }] : []);
  return {
    bomFormat: 'CycloneDX',
    specVersion: '1.5',
    // The same image, the same SBOM: a serial number from the digest, not a random one.
    serialNumber: `urn:uuid:${uuidFrom(digest)}`,
    version: 1,
    metadata: {
      timestamp: labels['org.opencontainers.image.created'],
      tools: { components: [{ type: 'application', name: 'deploy/image/build.ts', version: pkg.version }] },
      component: {
        type: 'container',
        'bom-ref': 'image',
        name: pkg.name,
        version: pkg.version,
        purl: `pkg:oci/${pkg.name}@${encodeURIComponent(digest)}?tag=${pkg.version}`,
        hashes: [{ alg: 'SHA-256', content: digest.replace(/^sha256:/, '') }],
        licenses: licenses(pkg.license),
        properties: Object.entries(labels).map(([name, value]) => ({ name, value })),
      },
    },
    components: [
      {
        type: 'application',
        'bom-ref': `pkg:npm/${pkg.name}@${pkg.version}`,
        name: pkg.name,
        version: pkg.version,
        purl: `pkg:npm/${pkg.name}@${pkg.version}`,
        licenses: licenses(pkg.license),
      },
      ...components.map((component) => ({
        type: component.kind === 'node' ? 'platform' : 'library',
        'bom-ref': component.purl,
        name: component.name,
        version: component.version,
        purl: component.purl,
        ...(hashes(component).length > 0 ? { hashes: hashes(component) } : {}),
        ...(component.license ? { licenses: licenses(component.license) } : {}),
      })),
    ],
  };
}

/** A version-4-shaped UUID taken from a digest's first bytes. */
function uuidFrom(digest: string): string {
  const hex = createHash('sha256').update(digest).digest('hex').slice(0, 32).split('');
  hex[12] = '4';
  hex[16] = ((parseInt(hex[16]!, 16) & 0x3) | 0x8).toString(16);
  const h = hex.join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

if (import.meta.filename === process.argv[1]) {
  const started = Date.now();
  try {
    const image = await buildImage();
    const mb = (image.bytes / 1024 / 1024).toFixed(1);
    process.stdout.write(
      `image: ${image.name} (containers-storage: podman run ${image.name})\n` +
        `  OCI layout: ${relative(process.cwd(), image.layout)} (skopeo copy oci:${relative(process.cwd(), image.layout)}:${image.tag} docker://REGISTRY/tessera:${image.tag})\n` +
        `  digest:     ${image.digest}\n` +
        `  size:       ${mb} MB compressed\n` +
        `  SBOM:       ${relative(process.cwd(), image.sbom)} (CycloneDX 1.5)\n` +
        `  built in ${((Date.now() - started) / 1000).toFixed(1)} s\n`,
    );
  } catch (error) {
    process.stderr.write(`image: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  }
}
