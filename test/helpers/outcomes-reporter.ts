/**
 * A node:test reporter for test/run.ts: one JSON line for each test as it starts and as it
 * ends, naming its file, and one when the run's summary comes, so that the runner counts
 * every file's tests itself and knows, however a shard ended, which files it had finished.
 * The spec reporter's summary comes only at the very end of a shard's report, and is missing
 * when the process is ended or dies before it. The lines go to the file named by
 * TEST_RUN_OUTCOMES (not a TESSERA_ name: the config refuses unknown ones in the processes
 * the tests start), each written synchronously as it comes, so what was written is there
 * however the process ends; a reporter's destination stream is written later, and a process
 * that exits loses its tail. Without that variable, the lines are the reporter's output; with
 * it, there is none (run.ts gives it stderr).
 */
import { openSync, writeSync } from 'node:fs';
import type { TestEvent } from 'node:test/reporters';

/** One test's start or end, as run.ts reads them. */
export interface Outcome {
  /** `dequeue`: a top-level test is about to run; `done`: the run's summary came, the last of the report. */
  readonly event: 'dequeue' | 'start' | 'end' | 'done';
  readonly file: string | null;
  readonly name: string;
  readonly nesting: number;
  /** A suite (`describe`), which the counts leave out, as node:test's summary does. */
  readonly suite: boolean;
  readonly result?: 'pass' | 'fail' | 'cancelled' | 'skipped' | 'todo';
  readonly ms?: number;
  /** When the reporter was told (ms since the epoch): run.ts times each file by it. */
  readonly at: number;
}

export default async function* outcomes(source: AsyncIterable<TestEvent>): AsyncGenerator<string> {
  const path = process.env['TEST_RUN_OUTCOMES'];
  // Read once, and not handed on to the processes the tests start.
  delete process.env['TEST_RUN_OUTCOMES'];
  const fd = path ? openSync(path, 'a') : null;
  for await (const event of source) {
    const line = outcomeLine(event);
    if (line === null) continue;
    if (fd === null) yield line;
    else writeSync(fd, line);
  }
}

/** The line of `event`, or null for an event that is not a test's start or end, or the run's summary. */
function outcomeLine(event: TestEvent): string | null {
  const line = (outcome: Outcome) => `${JSON.stringify(outcome)}\n`;
  // When a file's first test begins to run (`test:start` comes in the report's order, which
  // can be later): run.ts times the first file of a shard from it.
  if (event.type === 'test:dequeue' && event.data.nesting === 0) {
    const { file, name, nesting } = event.data;
    return line({ event: 'dequeue', file: file ?? null, name, nesting, suite: false, at: Date.now() });
  }
  if (event.type === 'test:start') {
    const { file, name, nesting } = event.data;
    return line({ event: 'start', file: file ?? null, name, nesting, suite: false, at: Date.now() });
  }
  if (event.type === 'test:pass' || event.type === 'test:fail') {
    const { file, name, nesting, details } = event.data;
    const data = event.data as { skip?: unknown; todo?: unknown };
    const failureType = event.type === 'test:fail' ? (event.data.details.error as { failureType?: string }).failureType : undefined;
    // As node:test counts them (lib/internal/test_runner/test.js countCompletedTest): a test
    // that timed out is cancelled, not failed.
    const result =
      data.skip !== undefined && data.skip !== false
        ? 'skipped'
        : data.todo !== undefined && data.todo !== false
          ? 'todo'
          : failureType === 'cancelledByParent' || failureType === 'testTimeoutFailure'
            ? 'cancelled'
            : event.type === 'test:pass'
              ? 'pass'
              : 'fail';
    return line({ event: 'end', file: file ?? null, name, nesting, suite: details.type === 'suite', result, ms: details.duration_ms, at: Date.now() });
  }
  // The whole run's summary (a file's own has its file): the last of the report.
  if (event.type === 'test:summary' && event.data.file === undefined)
    return line({ event: 'done', file: null, name: '', nesting: 0, suite: false, at: Date.now() });
  return null;
}
