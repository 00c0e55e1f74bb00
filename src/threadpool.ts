/**
 * Sizes libuv's thread pool to the cores this process may use, unless UV_THREADPOOL_SIZE is
 * already set. The pool computes the token signatures (src/tokens/jws.ts); libuv's default
 * of 4 threads on a 2-core machine left the event loop competing with four signing threads
 * for two cores, and code_exchange under `npm run bench` rose by about a fifth with 2.
 * Imported first by the composition roots: libuv reads the variable when the pool starts.
 */
import { availableParallelism } from 'node:os';

/** Whether the pool's size was given (UV_THREADPOOL_SIZE), rather than chosen here. */
export const poolSizeGiven = process.env['UV_THREADPOOL_SIZE'] !== undefined;

process.env['UV_THREADPOOL_SIZE'] ??= String(Math.max(1, Math.min(availableParallelism(), 4)));
