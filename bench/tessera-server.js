/**
 * Tessera as the benchmark runs it: the real `serve` of src/main.ts (its worker threads or
 * node:cluster workers included) with the settings from the environment, and one bench-only change:
 * `BENCH_DEVICE_INTERVAL` sets the device poll interval (see docs/benchmarks.md: a pool of
 * codes polled thousands of times a second cannot wait 5 s between polls of one code).
 * Tells the driver over IPC when every worker listens.
 *
 * Plain JavaScript, unlike the rest of the bench: the server's modules come from the compile
 * cache `npm install` fills (bin/warm-compile-cache.js, src/ only), and this script, as
 * TypeScript, was a module left to strip on the first run in a checkout. Stripping any module
 * loads the type stripper, whose WebAssembly memory stays for the process's life, and the
 * bench reports the server's peak RSS (docs/benchmarks.md, "The events flood's peak RSS").
 */
import cluster from 'node:cluster';
import { loadConfig } from '../src/config/index.ts';
import { serve } from '../src/main.ts';

const config = loadConfig();
const interval = process.env.BENCH_DEVICE_INTERVAL;
await serve(interval === undefined ? config : { ...config, device: { ...config.device, interval: Number(interval) } });
if (cluster.isPrimary) process.send?.({ type: 'ready' });
