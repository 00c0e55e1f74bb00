/**
 * `node:http` and `node:https`, loaded through `require` rather than imported as ES modules.
 * Node.js builds an ES module's namespace of a built-in by reading every export, and
 * `node:http`'s `WebSocket`, `CloseEvent` and `MessageEvent` are getters that load undici:
 * imported, `node:http` cost 55–70 ms of CPU at every start of the server and of each `tessera`
 * command that loads it, `node:https` 20 ms more, against 5–8 ms through `require`, for a
 * WebSocket Tessera never opens. Loaded this way, undici waits for the first `fetch`.
 * test/lazy-modules.test.ts holds the server's start to it.
 */
import { createRequire } from 'node:module';

const load = createRequire(import.meta.url);

export const http = load('node:http') as typeof import('node:http');
export const https = load('node:https') as typeof import('node:https');
