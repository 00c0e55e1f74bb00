import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { run } from '../../src/cli/main.ts';
import { TEST_ENV } from './server.ts';
import { WAIT_MS, within } from './wait.ts';

/** The `tessera` command as a checkout runs it (docs/deployment.md: `node bin/tessera.js`), on this test's Node. */
export const CLI = join(new URL('../..', import.meta.url).pathname, 'bin/tessera.js');
export const NODE_FLAGS: readonly string[] = ['--disable-warning=ExperimentalWarning'];

/**
 * Node's compile cache of the run (test/helpers/global-setup.ts), for a process started with
 * an environment of its own rather than this one's: without it, each such start strips the
 * types of the whole app again.
 */
export const COMPILE_CACHE_ENV: Readonly<Record<string, string>> = process.env['NODE_COMPILE_CACHE']
  ? { NODE_COMPILE_CACHE: process.env['NODE_COMPILE_CACHE'] }
  : {};

export interface RunningCommand {
  readonly child: ChildProcess;
  output(): { stdout: string; stderr: string };
  readonly exited: Promise<number | null>;
}

/** How long one `tessera` command may take to exit by itself. */
const EXIT_MS = 60_000;

/**
 * Every command still running. A test stops what it starts (in `t.after`); should one not,
 * the test process ending (npm test runs with --test-force-exit) takes them with it rather
 * than leave servers on their ports.
 */
const running = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * A started command as the tests watch it: what it writes, and its exit (a spawn failure
 * rejects). Killed if the test process exits first, like every command the tests start.
 */
export function watchCommand<C extends ChildProcess>(child: C): RunningCommand & { readonly child: C } {
  running.add(child);
  child.on('exit', () => running.delete(child));
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  return { child, output: () => ({ stdout, stderr }), exited };
}

/** Starts `tessera ARGS…` (quiet logs unless `env` says otherwise); `stdin` is written and closed. */
export function startTessera(args: readonly string[], env: Readonly<Record<string, string>> = {}, stdin = ''): RunningCommand {
  const child = spawn(process.execPath, [...NODE_FLAGS, CLI, ...args], {
    env: { ...process.env, TESSERA_LOG_LEVEL: 'silent', ...TEST_ENV, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  child.stdin.end(stdin);
  return watchCommand(child);
}

/** Runs one `tessera` command to completion; one still running after a minute is killed, and fails the test. */
export async function tessera(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  stdin = '',
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = startTessera(args, env, stdin);
  const code = await within(run.exited, `tessera ${args.join(' ')} to exit`, EXIT_MS).catch((error: unknown) => {
    run.child.kill('SIGKILL');
    throw error;
  });
  return { code, ...run.output() };
}

export interface ServingCommand extends RunningCommand {
  /** Where the server listens (one of the workers, under --workers). */
  readonly url: string;
  /** Stops it with SIGTERM and waits for it to exit (a minute at most); resolves with the exit code. */
  stop(): Promise<number | null>;
}

/**
 * `serveTessera` for one test `t`, on a new SQLite file in a folder of its own: when the test
 * ends, the server is stopped and then the folder removed, in one hook and in that order (a
 * server still starting its threads writes into the folder, which removed first was found
 * not empty).
 */
export async function serveOnNewDatabase(
  t: TestContext,
  prefix: string,
  args: readonly string[] = [],
  env: Readonly<Record<string, string>> = {},
  servers = 1,
): Promise<ServingCommand> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  let serving: ServingCommand | undefined;
  t.after(async () => {
    await serving?.stop();
    rmSync(dir, { recursive: true, force: true });
  });
  serving = await serveTessera(args, { TESSERA_DATABASE: join(dir, 'tessera.db'), ...env }, servers);
  return serving;
}

/**
 * Starts `tessera serve ARGS…` on a port the server picks itself (PORT=0, read back from its
 * log line; without TESSERA_ISSUER in `env` the issuer is that address too) and resolves
 * once `servers` processes say they serve. Fails at once when the command exits instead,
 * with what it wrote.
 */
export function serveTessera(args: readonly string[], env: Readonly<Record<string, string>> = {}, servers = 1): Promise<ServingCommand> {
  const run = startTessera(['serve', ...args], { HOST: '127.0.0.1', PORT: '0', ...env, TESSERA_LOG_LEVEL: 'info' });
  const stop = async () => {
    if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGTERM');
    return within(run.exited, 'tessera serve to stop on SIGTERM', EXIT_MS).catch((error: unknown) => {
      run.child.kill('SIGKILL');
      throw error;
    });
  };
  const serving = new Promise<ServingCommand>((resolve, reject) => {
    const addresses: string[] = [];
    let pending = '';
    const onData = (chunk: Buffer) => {
      pending += chunk.toString();
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const address = /Tessera is serving \S+ \(listening on (\S+)\)/.exec(line)?.[1];
        if (address) addresses.push(address);
      }
      if (addresses.length >= servers) {
        run.child.stdout!.off('data', onData);
        resolve({ ...run, url: addresses[0]!, stop });
      }
    };
    run.child.stdout!.on('data', onData);
    run.exited.then((code) => reject(new Error(`tessera serve exited with ${code} before serving:\n${JSON.stringify(run.output())}`)), reject);
  });
  return within(serving, `tessera serve to serve (${servers} process(es))`, EXIT_MS).catch(async (error: unknown) => {
    run.child.kill('SIGKILL');
    await run.exited;
    throw error instanceof Error && error.message.startsWith('waited') ? new Error(`${error.message}; it wrote ${JSON.stringify(run.output())}`) : error;
  });
}

/**
 * Resolves once what the command wrote (stdout and stderr) matches `pattern` `times` times;
 * rejects if it exits first, or after `ms` (a bound for a failing test, not a timing).
 */
export function outputMatches(run: RunningCommand, pattern: RegExp, times = 1, ms = WAIT_MS): Promise<void> {
  const count = () => {
    const { stdout, stderr } = run.output();
    return (`${stdout}\n${stderr}`.match(new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`)) ?? []).length;
  };
  let check = () => {};
  const matched = new Promise<void>((resolve, reject) => {
    check = () => {
      if (count() >= times) resolve();
    };
    run.child.stdout!.on('data', check);
    run.child.stderr!.on('data', check);
    run.exited.then(
      () => (count() >= times ? resolve() : reject(new Error(`exited before writing ${pattern} ${times} time(s):\n${JSON.stringify(run.output())}`))),
      reject,
    );
    check();
  });
  return within(matched, `${pattern} ${times} time(s) in the output`, ms)
    .finally(() => {
      run.child.stdout!.off('data', check);
      run.child.stderr!.off('data', check);
    })
    .catch((error: unknown) => {
      throw error instanceof Error && error.message.startsWith('waited')
        ? new Error(`${error.message}; the output was:\n${JSON.stringify(run.output())}`)
        : error;
    });
}

/**
 * Runs one `tessera` command in this process, through the `run()` that src/cli/main.ts
 * calls, with the test settings: what the command does without the cost of starting Node.
 * A few tests run the real command (`tessera` above) to prove the command itself works.
 */
export async function runTessera(
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
  stdin = '',
): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const code = await run([...args], {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    stdin: async () => stdin,
    env: { TESSERA_LOG_LEVEL: 'silent', ...TEST_ENV, ...env },
  });
  return { code, stdout, stderr };
}
