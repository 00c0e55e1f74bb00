/**
 * Bounded waits for tests. A test that awaits something that never comes (a log line, a
 * logout token, a callback) must fail with what it waited for, not hold its file open until
 * the runner's timeout with every server and process it started still running.
 */

/** How long a test waits for something that normally comes in milliseconds; generous for a loaded machine. */
export const WAIT_MS = 20_000;

/** `promise`, or a rejection naming `what` after `ms`; the timer is cleared either way. */
export function within<T>(promise: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`waited ${ms} ms for ${what}`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Asks `check` every `everyMs` until it is true; a rejection naming `what` once `ms` have passed. */
export async function until(what: string, check: () => boolean | Promise<boolean>, ms = WAIT_MS, everyMs = 50): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waited ${ms} ms for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
