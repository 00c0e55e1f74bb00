/**
 * The admin API's OpenAPI document is one a generator can use. openapi-typescript
 * turns the document the server serves into types; a program calling every operation through
 * openapi-fetch, typed by those types alone, must type-check (strict), and then runs against
 * the server: each operation answers what the document says it does.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from 'node:test';
import openapiTS, { astToString } from 'openapi-typescript';
import ts from 'typescript';
import { startTestServer, type TestServer } from './helpers/server.ts';
import { adminToken } from './helpers/fixtures.ts';

const ALL = 'admin:clients admin:users admin:resources admin:events admin:keys admin:providers admin:webhooks admin:saml admin:orgs';

describe("a client generated from the admin API's OpenAPI document", () => {
  let server: TestServer;
  let token: string;
  let document: { paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>> };
  // Inside the checkout, so that openapi-fetch resolves from its node_modules.
  const dir = new URL(`./.openapi-client-${randomUUID()}/`, import.meta.url);

  before(async () => {
    server = await startTestServer();
    ({ token } = await adminToken(server, ALL, 'CI'));
    const response = await fetch(`${server.url}/admin/v1/openapi.json`, { headers: { authorization: `Bearer ${token}` } });
    document = (await response.json()) as typeof document;
    mkdirSync(dir, { recursive: true });
    writeFileSync(new URL('schema.ts', dir), astToString(await openapiTS(document as never)));
    copyFileSync(new URL('./helpers/admin-client-calls.ts.txt', import.meta.url), new URL('calls.ts', dir));
  });
  after(async () => {
    rmSync(dir, { recursive: true, force: true });
    await server.close();
  });

  // First, while the connection the document came on is fresh: the type check takes seconds, and
  // a pooled connection the server closes for idling meanwhile can reset the first call.
  it('answers each operation as its document says', async () => {
    const { callEveryOperation } = (await import(new URL('calls.ts', dir).href)) as {
      callEveryOperation: (baseUrl: string, token: string) => Promise<Record<string, number>>;
    };
    const statuses = await callEveryOperation(`${server.url}/admin/v1`, token);
    const operations = Object.values(document.paths).flatMap((methods) => Object.values(methods));
    assert.deepEqual(Object.keys(statuses).sort(), operations.map((operation) => operation.operationId).sort(), 'every operation is called');
    for (const operation of operations) {
      const status = statuses[operation.operationId]!;
      // Unknown ids (a grant, a device code) are refused as the document's problem answer says.
      const expected = ['revokeGrant', 'denyDevice', 'listStreamDeliveries', 'replayStreamDeliveries'].includes(operation.operationId)
        ? 'default'
        : String(status);
      assert.ok(expected in operation.responses && (expected === 'default' ? status === 404 : status < 300), `${operation.operationId}: ${status}`);
    }
  });

  it('type-checks, strict, a program that calls every operation', () => {
    const program = ts.createProgram([new URL('calls.ts', dir).pathname], {
      strict: true,
      noEmit: true,
      target: ts.ScriptTarget.ES2023,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      allowImportingTsExtensions: true,
      skipLibCheck: true,
      types: [],
      lib: ['lib.es2023.d.ts', 'lib.dom.d.ts'],
    });
    const problems = ts.getPreEmitDiagnostics(program).map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
    assert.deepEqual(problems, []);
  });
});
