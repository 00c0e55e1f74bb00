import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

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
    env: { ...process.env, TESSERA_LOG_LEVEL: 'silent', ...env },
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
