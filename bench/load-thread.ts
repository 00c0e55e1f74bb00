/**
 * A load-generator thread (bench/load.ts): runs its share of a load with its own autocannon
 * and hands back the latencies and verdicts. Started once and reused, so a batch of
 * exchanges never waits for a thread to start.
 */
import { parentPort } from 'node:worker_threads';
import { fromPlan, type Part, type Plan, runPart } from './load.ts';

parentPort!.on('message', ({ id, part, plan }: { id: number; part: Part; plan: Plan }) => {
  runPart(part, fromPlan(plan)).then(
    (result) => parentPort!.postMessage({ id, result }),
    (error: unknown) => parentPort!.postMessage({ id, error: error instanceof Error ? error.message : String(error) }),
  );
});
