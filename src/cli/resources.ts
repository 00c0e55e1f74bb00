/** `tessera resource …`: arguments in, the operations of src/flows/manage/resources.ts, text out. */
import type { Config } from '../config/index.ts';
import { cliOptions } from '../flows/manage/fields/field.ts';
import { RESOURCE_FIELDS } from '../flows/manage/fields/resources.ts';
import {
  addResource,
  listResources,
  removeResource,
  resourceJson,
  updateResource,
  type ResourceInput,
  type ResourceUpdate,
} from '../flows/manage/resources.ts';
import type { ResourceScope } from '../store/types.ts';
import { inputFromOptions, type OptionValues } from './fields.ts';
import { operatorDeps, parse, UsageError, withStore, type Io } from './common.ts';
import { upstreamFetch } from '../core/outbound.ts';
import { checkProtectedResource, metadataLocation } from '../flows/manage/resource-check.ts';

const ADD_OPTIONS = cliOptions(RESOURCE_FIELDS, 'create').options;
const UPDATE_OPTIONS = cliOptions(RESOURCE_FIELDS, 'update').options;

/** A scope as it was typed, in a refusal: `--scope NAME=DESCRIPTION`. */
const typed = (scope: ResourceScope) => `${scope.name}${scope.description ? `=${scope.description}` : ''}`;

async function resourceAdd(config: Config, args: string[], io: Io): Promise<void> {
  const values = parse(args, { ...ADD_OPTIONS, json: { type: 'boolean' } }).values as OptionValues;
  const input = (await inputFromOptions(RESOURCE_FIELDS, 'create', values)) as ResourceInput;
  const { resource, introspectionSecret: secret } = await withStore(config, (store) => addResource(operatorDeps(config, store, io), input, typed));
  if (values.json) {
    const { introspection: _, ...described } = resourceJson(resource);
    io.stdout(`${JSON.stringify({ ...described, ...(secret === null ? {} : { introspection_secret: secret }) })}\n`);
    return;
  }
  io.stdout(`Registered API "${resource.name}" (${resource.identifier}) with scopes ${resource.scopes.map((scope) => scope.name).join(' ')}.\n`);
  if (secret !== null) {
    io.stdout(
      `  introspection secret: ${secret}\nIts resource server calls POST /oauth/introspect with HTTP Basic: the identifier (form-urlencoded) and this secret.\nThe secret is shown only now; Tessera keeps only its hash.\n`,
    );
  }
}

async function resourceList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const resources = await withStore(config, (store) => listResources({ store }));
  if (values.json) {
    io.stdout(`${JSON.stringify(resources.map(resourceJson))}\n`);
    return;
  }
  if (resources.length === 0) io.stdout('No APIs registered.\n');
  for (const resource of resources) {
    io.stdout(
      `${resource.identifier}  ${resource.name}\n${resource.scopes.map((scope) => `  scope: ${scope.name}  ${scope.description}\n`).join('')}  access tokens live: ${resource.accessTokenTtl === null ? 'the server default' : `${resource.accessTokenTtl} s`}\n  access tokens signed: ${resource.signingAlg}\n  introspection: ${resource.introspectionSecretHash === null ? 'no' : 'yes'}\n`,
    );
  }
}

async function resourceUpdate(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { ...UPDATE_OPTIONS, json: { type: 'boolean' } }, 1);
  const changes = (await inputFromOptions(RESOURCE_FIELDS, 'update', values as OptionValues)) as ResourceUpdate;
  const resource = await withStore(config, (store) => updateResource(operatorDeps(config, store, io), positionals[0]!, changes, typed));
  if (values.json) {
    io.stdout(`${JSON.stringify(resourceJson(resource))}\n`);
    return;
  }
  io.stdout(
    `Updated API "${resource.name}" (${resource.identifier}): scopes ${resource.scopes.map((scope) => scope.name).join(' ')}; access tokens signed ${resource.signingAlg}, living ${resource.accessTokenTtl === null ? 'the server default' : `${resource.accessTokenTtl} s`}, from the next one issued.\n`,
  );
}

async function resourceRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const identifier = positionals[0]!;
  await withStore(config, (store) => removeResource(operatorDeps(config, store, io), identifier));
  io.stdout(`Removed API ${identifier}: its tokens stop working now, and refresh tokens can no longer get new ones for it.\n`);
}

/** How long `resource check` waits for the metadata. */
const CHECK_TIMEOUT_MS = 10_000;

/**
 * `resource check URL`: fetches the protected resource metadata (RFC 9728) of the resource
 * `URL` names (its identifier, or the metadata's own address) and compares it with the API
 * registered here; exit status 1 when something differs, as diff(1) has it.
 */
async function resourceCheck(config: Config, args: string[], io: Io): Promise<number> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, 1);
  const given = positionals[0]!;
  let location: ReturnType<typeof metadataLocation>;
  try {
    location = metadataLocation(given);
  } catch {
    throw new UsageError(`${given}: not an absolute URL`);
  }
  let metadata: Record<string, unknown>;
  let response: Response;
  try {
    // The operator's own command: any host, loopback too (an MCP server beside it); no redirects, bounded in time and size.
    response = await upstreamFetch(location.metadataUrl, {
      redirect: 'error',
      signal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
      headers: { accept: 'application/json' },
    });
  } catch {
    throw new Error(`${location.metadataUrl} could not be fetched (within ${CHECK_TIMEOUT_MS / 1000} s, without redirects)`);
  }
  if (response.status !== 200) throw new Error(`${location.metadataUrl} answered HTTP ${response.status}: no protected resource metadata there (RFC 9728 §3)`);
  try {
    metadata = (await response.json()) as Record<string, unknown>;
  } catch {
    throw new Error(`${location.metadataUrl} is not JSON`);
  }
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) throw new Error(`${location.metadataUrl} is not a JSON object`);
  const registered = await withStore(config, (store) =>
    store.resources.get(typeof metadata['resource'] === 'string' ? metadata['resource'] : location.resource),
  );
  const lines = checkProtectedResource(location.resource, metadata, registered, config.issuer);
  const differs = lines.some((line) => !line.ok);
  if (values.json) {
    io.stdout(`${JSON.stringify({ metadata_url: location.metadataUrl, resource: location.resource, differs, checks: lines })}\n`);
  } else {
    io.stdout(
      `Protected resource metadata at ${location.metadataUrl}:\n${lines.map((line) => `  ${line.what}: ${line.ok ? 'ok' : 'DIFFERS'}: ${line.text}\n`).join('')}${differs ? 'Something differs: an MCP client following this metadata would not sign in as registered here.\n' : 'Everything matches.\n'}`,
    );
  }
  return differs ? 1 : 0;
}

export const RESOURCE_COMMANDS = {
  'resource check': resourceCheck,
  'resource add': resourceAdd,
  'resource list': resourceList,
  'resource update': resourceUpdate,
  'resource remove': resourceRemove,
};
