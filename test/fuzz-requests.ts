/**
 * `node test/fuzz-requests.ts`: every route of a test server (373 routes and methods today)
 * asked with malformed input, and each answer checked for what a client must never get: a
 * 5xx, a stack trace or a source path in the body, or a redirect to an address the request
 * supplied. Broken percent-encoding, a 200 KB form, bad JSON and XML (an external entity),
 * prototype-pollution keys, bad Basic, Bearer and DPoP headers, garbage cookies, and odd path
 * parameters; without credentials, with a client's and with an admin token of every admin
 * scope. About 190,000 requests, minutes of CPU: not part of `npm test`. Prints each finding
 * once (route, status, the start of the body) and exits 1 if there was any.
 * `node test/fuzz-requests.ts /admin` asks only the routes whose path starts with the prefix given.
 */
import { adminToken } from './helpers/fixtures.ts';
import { startTestServer } from './helpers/server.ts';

const server = await startTestServer();
const client = await server.addClient({ name: 'Fuzz', scopes: ['openid', 'profile', 'offline_access'] });
await server.addUser({ username: 'ada' });
const scopes = 'admin:clients admin:users admin:resources admin:events admin:keys admin:providers admin:webhooks admin:saml admin:orgs';
let admin = '';
admin = (await adminToken(server, scopes, 'Fuzz admin')).token;

// Routes from printRoutes.
const tree = server.app.printRoutes({ commonPrefix: false });
const routes: { method: string; path: string }[] = [];
const stack: string[] = [];
for (const line of tree.split('\n')) {
  const m = /^([│ ├└─]*?)(?:[├└]── )(.+?) \(([A-Z, ]+)\)$/.exec(line);
  if (!m) continue;
  const depth = m[1]!.length / 4;
  const seg = m[2]!;
  stack.length = depth;
  const parent = stack.join('');
  const full = depth === 0 ? seg : parent + (seg.startsWith('/') ? seg : `/${seg}`);
  stack.push(depth === 0 ? seg : seg.startsWith('/') ? seg : `/${seg}`);
  for (const method of m[3]!.split(', ')) routes.push({ method, path: full.replace(/\/+/g, '/') });
}
const PARAMS = ['x', '%ZZ', 'a'.repeat(3000), '%00', 'ada', client.clientId];
const BODIES: { type?: string; body?: string }[] = [
  {},
  { type: 'application/x-www-form-urlencoded', body: 'a=%ZZ&&=&x&client_id=%00&grant_type=authorization_code&grant_type=refresh_token' },
  { type: 'application/x-www-form-urlencoded', body: `grant_type=authorization_code&code=x&redirect_uri=%ZZ&code_verifier=${'a'.repeat(200)}` },
  { type: 'application/x-www-form-urlencoded', body: `x=${'a'.repeat(200_000)}` },
  { type: 'application/x-www-form-urlencoded; charset=latin1', body: 'a=\xff\xfe' },
  { type: 'application/json', body: '{"a":' },
  { type: 'application/json', body: 'null' },
  { type: 'application/json', body: '[]' },
  { type: 'application/json', body: '"x"' },
  {
    type: 'application/json',
    body: JSON.stringify({
      name: ['x'],
      url: 1,
      scope: {},
      redirect_uris: 'x',
      events: [null],
      username: { a: 1 },
      Operations: 'x',
      schemas: [1],
      password: 5,
      __proto__: { a: 1 },
    }),
  },
  { type: 'application/json', body: '{"constructor":{"prototype":{"polluted":1}},"__proto__":{"polluted":1}}' },
  { type: 'application/json', body: '['.repeat(5000) + ']'.repeat(5000) },
  {
    type: 'application/scim+json',
    body: '{"schemas":["urn:ietf:params:scim:api:messages:2.0:PatchOp"],"Operations":[{"op":"replace","path":"name[givenName eq \\"x\\"]","value":1}]}',
  },
  { type: 'multipart/form-data', body: 'xx' },
  { type: 'text/plain', body: 'hello' },
  { type: 'application/xml', body: '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>' },
];
const AUTHS = [
  undefined,
  ['Basic !!!', `Basic ${Buffer.from('nocolon').toString('base64')}`, `Basic ${Buffer.from('%ZZ:%ZZ').toString('base64')}`, 'Bearer', 'Bearer a b', 'DPoP x'][
    Math.floor(Math.random() * 6)
  ],
  `Basic ${Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')}`,
  admin ? `Bearer ${admin}` : undefined,
];
const QUERIES = [
  '',
  '?a=%ZZ',
  `?response_type=code&client_id=${client.clientId}&redirect_uri=%ZZ&scope=openid&code_challenge=x&code_challenge_method=S256&request=eyJ`,
  '?filter=userName%20eq%20%22x',
  `?filter=${encodeURIComponent('name.givenName co "a" and (emails[type eq "work" and value sw "x"] or x pr)')}&startIndex=-1&count=99999999999`,
  '?limit=-5&cursor=%00&state=dead',
  '?client_id=a&client_id=b',
];
let findings = 0;
let sent = 0;
const seen = new Set<string>();
let index = 0;
/** Only the routes under this prefix, when one is given. */
const only = process.argv[2] ?? '/';
for (const route of routes) {
  index++;
  if (!route.path.startsWith(only)) continue;
  if (index % 20 === 0) console.log('progress', index, '/', routes.length, 'sent', sent, new Date().toISOString());
  if (route.method === 'HEAD' || route.method === 'QUERY' || route.method === 'TRACE') continue;
  for (const param of PARAMS) {
    const path = route.path.replace(/:[A-Za-z_]+/g, param).replace('*', 'nothing-here');
    if (path === route.path && param !== 'x') continue;
    for (const query of QUERIES) {
      for (const b of route.method === 'GET' || route.method === 'DELETE' || route.method === 'OPTIONS' ? [{}] : BODIES) {
        for (const auth of AUTHS) {
          const headers: Record<string, string> = {};
          if (b.type) headers['content-type'] = b.type;
          if (auth) headers['authorization'] = auth;
          headers['cookie'] = 'tessera_session=%ZZ; a';
          headers['dpop'] = 'not.a.jwt';
          headers['origin'] = 'https://evil.example';
          let res: Response;
          try {
            res = await fetch(server.url + path + query, { method: route.method, headers, body: b.body, redirect: 'manual' });
          } catch (error) {
            const key = `${route.method} ${route.path} fetch ${(error as Error).message}`;
            if (!seen.has(key)) {
              seen.add(key);
              console.log('FETCH-ERROR', route.method, path.slice(0, 80), query.slice(0, 40), b.type, (error as Error).cause ?? error);
              findings++;
            }
            continue;
          }
          sent++;
          const text = await res.text();
          const stack = /\n\s+at |node:internal|\/src\/|\.ts:\d+/.test(text);
          const location = res.headers.get('location') ?? '';
          const badRedirect = /evil|%ZZ/.test(location);
          if (res.status >= 500 || stack || badRedirect) {
            const key = `${route.method} ${route.path} ${res.status} ${b.type} ${stack}`;
            if (!seen.has(key)) {
              seen.add(key);
              findings++;
              console.log(
                'FINDING',
                res.status,
                route.method,
                path.slice(0, 80),
                query.slice(0, 60),
                b.type,
                auth?.slice(0, 20),
                text.slice(0, 300).replace(/\n/g, ' '),
                location.slice(0, 100),
              );
            }
          }
        }
      }
    }
  }
}
console.log('routes', routes.length, 'sent', sent, 'findings', findings);
await server.close();
process.exitCode = findings > 0 ? 1 : 0;
