/**
 * The floor for `device_poll`: a bare node:http server doing only the irreducible work of a
 * persisted poll against Tessera's own SQLite file: read the body, check the client's
 * secret (one lookup, one hash), hash the device code, one UPDATE, answer 400 JSON. No
 * framework, no validation, no error type, no headers beyond two. `npm run bench --
 * --baseline` runs it beside the servers to show what the hardware allows; it is not a
 * server anyone should run.
 */
import { createHash } from 'node:crypto';
import { createServer } from 'node:http';
import { DatabaseSync } from 'node:sqlite';

const db = new DatabaseSync(process.env['TESSERA_DATABASE']!);
db.exec('PRAGMA busy_timeout = 5000');
db.exec('PRAGMA journal_mode = WAL');
db.exec('PRAGMA synchronous = NORMAL');
const client = db.prepare('SELECT secret_hash FROM clients WHERE id = ?');
const poll = db.prepare('UPDATE device_authorizations SET last_polled_at = ? WHERE device_code_hash = ? AND client_id = ? RETURNING status');
const sha256 = (value: string) => createHash('sha256').update(value).digest('base64url');

createServer((request, response) => {
  let body = '';
  request.setEncoding('utf8');
  request.on('data', (chunk: string) => (body += chunk));
  request.on('end', () => {
    const [id = '', secret = ''] = Buffer.from((request.headers.authorization ?? '').slice(6), 'base64')
      .toString()
      .split(':');
    const clientId = decodeURIComponent(id);
    const row = client.get(clientId) as { secret_hash: string } | undefined;
    const polled =
      row?.secret_hash === sha256(decodeURIComponent(secret)) && poll.get(Date.now(), sha256(new URLSearchParams(body).get('device_code') ?? ''), clientId);
    response.writeHead(400, { 'content-type': 'application/json', 'cache-control': 'no-store' });
    response.end(polled ? '{"error":"authorization_pending"}' : '{"error":"invalid_grant"}');
  });
}).listen(Number(process.env['PORT']), '127.0.0.1', () => process.send?.({ type: 'ready' }));
