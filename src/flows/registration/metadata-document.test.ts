import assert from 'node:assert/strict';
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { flowWorld, outcome, type FlowWorld } from '../../../test/helpers/flows.ts';
import { metadataDocumentClients } from './metadata-document.ts';

const TIMEOUT_MS = 200;

describe('fetching a Client ID Metadata Document', () => {
  let world: FlowWorld;
  let metadataDocumentClient: ReturnType<typeof metadataDocumentClients>;
  let base = '';
  const timers = new Set<NodeJS.Timeout>();
  /** The app's documents: each path answers as its handler says. */
  const server = createServer((request, response) => {
    const url = `${base}${request.url}`;
    const document = JSON.stringify({ client_id: url, client_name: 'Notes', redirect_uris: ['http://127.0.0.1:9/callback'] });
    response.writeHead(200, { 'content-type': 'application/json' });
    if (request.url === '/trickle.json') return trickle(response, document);
    response.end(document);
  });

  /** A byte every 20 ms: never idle as long as the socket timeout, and whole only after about two seconds. */
  function trickle(response: ServerResponse, document: string): void {
    let sent = 0;
    const next = () => {
      if (response.destroyed) return;
      response.write(document.slice(sent, sent + 1));
      sent += 1;
      if (sent < document.length) timers.add(setTimeout(next, 20));
      else response.end();
    };
    next();
  }

  before(async () => {
    world = await flowWorld({
      TESSERA_CLIENT_ID_METADATA_DOCUMENTS: 'true',
      TESSERA_CLIENT_ID_METADATA_DEVELOPMENT: 'true',
      TESSERA_CLIENT_ID_METADATA_TIMEOUT_MS: String(TIMEOUT_MS),
    });
    metadataDocumentClient = metadataDocumentClients(world.deps);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(async () => {
    for (const timer of timers) clearTimeout(timer);
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await world.close();
  });

  it('takes a document that arrives in time, as a public client whose id is its URL', async () => {
    const client = await metadataDocumentClient(`${base}/prompt.json`, '192.0.2.1');
    assert.equal(client?.id, `${base}/prompt.json`);
    assert.equal(client?.authMethod, 'none');
  });

  it('cuts off a document that trickles in: the whole exchange is bounded, not only the idle time between bytes', async () => {
    const started = Date.now();
    const clientId = `${base}/trickle.json`;
    assert.equal(await outcome(() => metadataDocumentClient(clientId, '192.0.2.1')), 'invalid_request');
    const tookMs = Date.now() - started;
    assert.ok(tookMs < 1500, `refused after ${tookMs} ms, with the setting at ${TIMEOUT_MS} ms`);
    assert.equal(await world.store.clients.get(clientId), null, 'no client was made');
    const refusal = await world.store.metadataDocuments.get(clientId, world.clock.now());
    assert.match(refusal?.problem ?? '', /did not arrive within 200 ms/);
  });
});
