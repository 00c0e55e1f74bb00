/**
 * What the machine running the tests has: programs on PATH, and whether it is CI, where a
 * test that needs a missing tool fails rather than skips (.ci/run installs them all).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** The first `name` on PATH, or undefined. */
export function which(name: string): string | undefined {
  return (process.env['PATH'] ?? '')
    .split(':')
    .filter((dir) => dir !== '')
    .map((dir) => join(dir, name))
    .find((path) => existsSync(path));
}

/** Whether `env` says this is CI: CI set to anything but empty, 0 or false. */
export function inCi(env: Readonly<Record<string, string | undefined>> = process.env): boolean {
  return !['', '0', 'false'].includes((env['CI'] ?? '').trim().toLowerCase());
}
