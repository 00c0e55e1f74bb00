import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { run } from '../../src/cli/main.ts';
import { TEST_ENV } from './server.ts';

/** The `tessera` command as a checkout runs it, on this test's Node. */
export const CLI = join(new URL('../..', import.meta.url).pathname, 'src/cli/main.ts');
export const NODE_FLAGS: readonly string[] = ['--disable-warning=ExperimentalWarning'];

export interface RunningCommand {
  readonly child: ChildProcess;
  output(): { stdout: string; stderr: string };
  readonly exited: Promise<number | null>;
}

/** Starts `tessera ARGS…` (quiet logs unless `env` says otherwise); `stdin` is written and closed. */
export function startTessera(args: readonly string[], env: Readonly<Record<string, string>> = {}, stdin = ''): RunningCommand {
  const child = spawn(process.execPath, [...NODE_FLAGS, CLI, ...args], {
    env: { ...process.env, TESSERA_LOG_LEVEL: 'silent', ...TEST_ENV, ...env },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  child.stdin.end(stdin);
  return { child, output: () => ({ stdout, stderr }), exited };
}

/** Runs one `tessera` command to completion. */
export async function tessera(args: readonly string[], env: Readonly<Record<string, string>> = {}, stdin = ''): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const run = startTessera(args, env, stdin);
  const code = await run.exited;
  return { code, ...run.output() };
}

export interface ServingCommand extends RunningCommand {
  /** Where the server listens (one of the workers, under --workers). */
  readonly url: string;
  /** Stops it with SIGTERM and waits for it to exit; resolves with the exit code. */
  stop(): Promise<number | null>;
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
    return run.exited;
  };
  return new Promise((resolve, reject) => {
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
}

/**
 * Resolves once what the command wrote (stdout and stderr) matches `pattern` `times` times;
 * rejects if it exits first. Waits on the output itself, never on a clock.
 */
export function outputMatches(run: RunningCommand, pattern: RegExp, times = 1): Promise<void> {
  const count = () => {
    const { stdout, stderr } = run.output();
    return (`${stdout}\n${stderr}`.match(new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`)) ?? []).length;
  };
  return new Promise((resolve, reject) => {
    const check = () => {
      if (count() < times) return;
      run.child.stdout!.off('data', check);
      run.child.stderr!.off('data', check);
      resolve();
    };
    run.child.stdout!.on('data', check);
    run.child.stderr!.on('data', check);
    run.exited.then(() => (count() >= times ? resolve() : reject(new Error(`exited before writing ${pattern} ${times} time(s):\n${JSON.stringify(run.output())}`))), reject);
    check();
  });
}

/**
 * Runs one `tessera` command in this process, through the `run()` that src/cli/main.ts
 * calls, with the test settings: what the command does without the cost of starting Node.
 * A few tests run the real command (`tessera` above) to prove the command itself works.
 */
export async function runTessera(args: readonly string[], env: Readonly<Record<string, string>> = {}, stdin = ''): Promise<{ code: number; stdout: string; stderr: string }> {
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
