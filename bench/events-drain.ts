/**
 * What a pushed Security Event Token costs the server, with nothing else to do: the admin
 * changes of `events_flood` made while its five push streams are paused (each change queues a
 * SET per stream, none is sent), then the streams enabled and their backlog drained to the
 * receiver on loopback. Printed per round: the server's CPU per change with the streams
 * disabled and paused (their difference is the outbox trigger's cost), and the drain's SETs a
 * second and server CPU per SET (claims, reads, signatures, the POSTs, the settles). CPU time
 * is read from /proc, so the figure holds on a busy machine better than a rate does.
 *
 *   node bench/events-drain.ts [--against DIR] [--rounds N] [--seconds S]
 */
import { mkdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import type { Store } from '../src/store/types.ts';
import { type EventFloodSeed, seedEventFlood, startEventFlood, startEventReceiver } from './events.ts';
import { cpuSeconds } from './proc.ts';
import { againstCheckout, startTessera } from './targets.ts';

const STREAMS = 5;
const IN_FLIGHT = 4;

const { values } = parseArgs({ options: { against: { type: 'string' }, rounds: { type: 'string' }, seconds: { type: 'string' } } });
const rounds = Number(values.rounds ?? 3);
const seconds = Number(values.seconds ?? 2);
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

const logDir = resolve('bench/results/logs');
mkdirSync(logDir, { recursive: true });
const receiver = await startEventReceiver();
let store: Store | undefined;
let seed: EventFloodSeed | undefined;
const target = await startTessera({
  workers: 1,
  deviceInterval: 0,
  cpuProfileDir: null,
  logDir,
  serverCpus: null,
  postgres: null,
  ...(values.against ? { against: { ...againstCheckout(values.against), name: 'against' } } : {}),
  env: { TESSERA_ALLOW_PRIVATE_NETWORK_URLS: 'true' },
  seedStore: async (opened) => {
    store = opened;
    seed = await seedEventFlood(opened, receiver.url, STREAMS, IN_FLIGHT);
  },
});
const streams = await store!.ssf.listAllStreams();
const setStatus = async (status: 'enabled' | 'paused' | 'disabled') => {
  for (const { id } of streams) {
    const stream = await store!.ssf.getStream(id);
    if (stream) await store!.ssf.saveStream({ ...stream, status, updatedAt: Date.now() });
  }
};
/** Changes for `seconds`; the server CPU they cost, per change. */
const changes = async () => {
  const before = cpuSeconds([target.pid]);
  const flood = await startEventFlood(target.origin, seed!.adminAuthorization, IN_FLIGHT);
  await sleep(seconds * 1000);
  const { changed } = await flood.stop();
  await sleep(300);
  return { changed, cpuMs: ((cpuSeconds([target.pid]) - before) / changed) * 1000 };
};

console.log(
  `${values.against ? `against ${values.against}` : 'this checkout'}: ${STREAMS} push streams, ${IN_FLIGHT} changes in flight for ${seconds} s a round`,
);
try {
  for (let round = 0; round < rounds; round += 1) {
    await setStatus('disabled');
    const off = await changes();
    await setStatus('paused');
    const queued = await changes();
    const before = receiver.received;
    const cpuBefore = cpuSeconds([target.pid]);
    const started = performance.now();
    await setStatus('enabled');
    // A change to a person already in that state queues nothing: done when the count stops growing.
    let last = -1;
    let lastAt = performance.now();
    while (receiver.received - before < queued.changed * STREAMS - IN_FLIGHT * STREAMS || performance.now() - lastAt < 500) {
      if (receiver.received !== last) [last, lastAt] = [receiver.received, performance.now()];
      await sleep(20);
    }
    const drained = (lastAt - started) / 1000;
    const sets = receiver.received - before;
    const cpuMs = ((cpuSeconds([target.pid]) - cpuBefore) / sets) * 1000;
    console.log(
      `round ${round + 1}: changes ${off.cpuMs.toFixed(2)} ms CPU each with the streams disabled, ${queued.cpuMs.toFixed(2)} paused; ` +
        `${sets} SETs drained in ${drained.toFixed(2)} s (${(sets / drained).toFixed(0)}/s), ${cpuMs.toFixed(3)} ms of server CPU per SET`,
    );
  }
} finally {
  await target.close();
  await receiver.close();
}
