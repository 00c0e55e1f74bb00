/** `tessera resource …`: arguments in, the operations of src/flows/manage/resources.ts, text out. */
import type { Config } from '../config/index.ts';
import { addResource, listResources, removeResource, resourceJson, updateResource } from '../flows/manage/resources.ts';
import type { ResourceScope } from '../store/types.ts';
import { operatorDeps, parse, UsageError, wholeNumber, withStore, type Io } from './common.ts';

/** `--scope NAME=DESCRIPTION`. */
function resourceScope(value: string): ResourceScope {
  const equals = value.indexOf('=');
  return equals < 0 ? { name: value, description: '' } : { name: value.slice(0, equals), description: value.slice(equals + 1) };
}

async function resourceAdd(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, {
    identifier: { type: 'string' },
    name: { type: 'string' },
    scope: { type: 'string', multiple: true },
    'access-token-ttl': { type: 'string' },
    'introspection-secret': { type: 'boolean' },
    'signing-alg': { type: 'string' },
    json: { type: 'boolean' },
  });
  const { resource, introspectionSecret: secret } = await withStore(config, (store) =>
    addResource(
      operatorDeps(config, store, io),
      {
        ...(values.identifier === undefined ? {} : { identifier: values.identifier }),
        ...(values.name === undefined ? {} : { name: values.name }),
        scopes: (values.scope ?? []).map(resourceScope),
        access_token_ttl: wholeNumber(values['access-token-ttl'], 6) ?? null,
        introspection_secret: values['introspection-secret'] === true,
        ...(values['signing-alg'] === undefined ? {} : { signing_alg: values['signing-alg'] }),
      },
      (scope) => `${scope.name}${scope.description ? `=${scope.description}` : ''}`,
    ),
  );
  if (values.json) {
    const { introspection: _, ...described } = resourceJson(resource);
    io.stdout(`${JSON.stringify({ ...described, ...(secret === null ? {} : { introspection_secret: secret }) })}\n`);
    return;
  }
  io.stdout(`Registered API "${resource.name}" (${resource.identifier}) with scopes ${resource.scopes.map((scope) => scope.name).join(' ')}.\n`);
  if (secret !== null) {
    io.stdout(`  introspection secret: ${secret}\nIts resource server calls POST /oauth/introspect with HTTP Basic: the identifier (form-urlencoded) and this secret.\nThe secret is shown only now; Tessera keeps only its hash.\n`);
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
    io.stdout(`${resource.identifier}  ${resource.name}\n${resource.scopes.map((scope) => `  scope: ${scope.name}  ${scope.description}\n`).join('')}  access tokens live: ${resource.accessTokenTtl === null ? 'the server default' : `${resource.accessTokenTtl} s`}\n  access tokens signed: ${resource.signingAlg}\n  introspection: ${resource.introspectionSecretHash === null ? 'no' : 'yes'}\n`);
  }
}

async function resourceUpdate(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(
    args,
    { name: { type: 'string' }, scope: { type: 'string', multiple: true }, 'access-token-ttl': { type: 'string' }, 'default-access-token-ttl': { type: 'boolean' }, 'signing-alg': { type: 'string' }, json: { type: 'boolean' } },
    1,
  );
  if (values['access-token-ttl'] !== undefined && values['default-access-token-ttl']) throw new UsageError('give --access-token-ttl or --default-access-token-ttl, not both');
  const ttl = values['default-access-token-ttl'] ? { access_token_ttl: null } : values['access-token-ttl'] === undefined ? {} : { access_token_ttl: wholeNumber(values['access-token-ttl'], 6)! };
  const resource = await withStore(config, (store) =>
    updateResource(
      operatorDeps(config, store, io),
      positionals[0]!,
      {
        ...(values.name === undefined ? {} : { name: values.name }),
        ...(values.scope === undefined ? {} : { scopes: values.scope.map(resourceScope) }),
        ...ttl,
        ...(values['signing-alg'] === undefined ? {} : { signing_alg: values['signing-alg'] }),
      },
      (scope) => `${scope.name}${scope.description ? `=${scope.description}` : ''}`,
    ),
  );
  if (values.json) {
    io.stdout(`${JSON.stringify(resourceJson(resource))}\n`);
    return;
  }
  io.stdout(`Updated API "${resource.name}" (${resource.identifier}): scopes ${resource.scopes.map((scope) => scope.name).join(' ')}; access tokens signed ${resource.signingAlg}, living ${resource.accessTokenTtl === null ? 'the server default' : `${resource.accessTokenTtl} s`}, from the next one issued.\n`);
}

async function resourceRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  const identifier = positionals[0]!;
  await withStore(config, (store) => removeResource(operatorDeps(config, store, io), identifier));
  io.stdout(`Removed API ${identifier}: its tokens stop working now, and refresh tokens can no longer get new ones for it.\n`);
}

export const RESOURCE_COMMANDS = {
  'resource add': resourceAdd,
  'resource list': resourceList,
  'resource update': resourceUpdate,
  'resource remove': resourceRemove,
};
