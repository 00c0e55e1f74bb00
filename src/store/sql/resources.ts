/**
 * APIs and their scopes: their statements, rows and store.
 */

import { integer, integerOrNull, type Row, signingAlg, text, textOrNull } from '../rows.ts';
import { DuplicateError, type ResourceRecord, type ResourceScope, type Stores } from '../types.ts';
import { type Dialect, queries, type Runner } from './dialect.ts';

export function resourceScopeFromRow(row: Row): ResourceScope & { readonly resource: string } {
  return { name: text(row, 'name'), description: text(row, 'description'), resource: text(row, 'resource') };
}

/** A resource row with its scopes, read separately (`resource_scopes`). */
export function resourceFromRow(row: Row, scopes: readonly ResourceScope[]): ResourceRecord {
  return {
    identifier: text(row, 'identifier'),
    name: text(row, 'name'),
    scopes,
    accessTokenTtl: integerOrNull(row, 'access_token_ttl'),
    introspectionSecretHash: textOrNull(row, 'introspection_secret_hash'),
    signingAlg: signingAlg(row, 'signing_alg'),
    createdAt: integer(row, 'created_at'),
  };
}

/** The scope names of the API `:identifier`. */
const API_SCOPE_NAMES = '(SELECT resource_scopes.name FROM resource_scopes WHERE resource_scopes.resource = :identifier)';

/** The statements, by name, in `d`'s SQL. */
export function resourcesStatements(d: Dialect) {
  /** Whether list column `column` holds one of the API's scope names. */
  const holdsApiScope = (column: string) =>
    `EXISTS (SELECT 1 FROM resource_scopes WHERE resource_scopes.resource = :identifier AND ${d.listHas(column, 'resource_scopes.name')})`;
  return {
    insertResource: `
      INSERT INTO resources (identifier, name, access_token_ttl, introspection_secret_hash, signing_alg, created_at)
      VALUES (:identifier, :name, :accessTokenTtl, :introspectionSecretHash, :signingAlg, :createdAt)
      ON CONFLICT DO NOTHING`,
    insertResourceScope: `
      INSERT INTO resource_scopes (name, resource, description, position)
      VALUES (:name, :resource, :description, :position)
      ON CONFLICT DO NOTHING`,
    getResource: 'SELECT * FROM resources WHERE identifier = :identifier',
    getResourceScopes: 'SELECT * FROM resource_scopes WHERE resource = :identifier ORDER BY position',
    listResources: 'SELECT * FROM resources ORDER BY created_at, identifier',
    listResourceScopes: 'SELECT * FROM resource_scopes ORDER BY resource, position',
    // Its scopes go with it: ON DELETE CASCADE. Before that, its scope names leave every
    // grant and every client's registration, which name scopes by name alone: an API
    // registered later with one of those names is neither approved by an old consent nor
    // allowed to a client by an old registration.
    removeResourceScopesFromGrants: `
      UPDATE grants SET scope = ${d.listWithout('grants.scope', API_SCOPE_NAMES)}
      WHERE ${holdsApiScope('grants.scope')}`,
    removeResourceScopesFromClients: `
      UPDATE clients SET scopes = ${d.listWithout('clients.scopes', API_SCOPE_NAMES)}, version = version + 1
      WHERE ${holdsApiScope('clients.scopes')}`,
    // A scope name an API drops leaves every grant too, as its removal's do: defined again
    // later, by this API or another, it is a new scope that no consent given before approves.
    removeScopeFromGrants: `
      UPDATE grants SET scope = ${d.listWithout('grants.scope', '(:name)')}
      WHERE ${d.listHas('grants.scope', ':name')}`,
    removeResource: 'DELETE FROM resources WHERE identifier = :identifier',
    updateResource: `
      UPDATE resources SET signing_alg = CASE WHEN :setSigningAlg = 1 THEN CAST(:signingAlg AS TEXT) ELSE signing_alg END,
        name = CASE WHEN :setName = 1 THEN CAST(:name AS TEXT) ELSE name END,
        access_token_ttl = CASE WHEN :setTtl = 1 THEN CAST(:accessTokenTtl AS INTEGER) ELSE access_token_ttl END
      WHERE identifier = :identifier`,
    removeResourceScopes: 'DELETE FROM resource_scopes WHERE resource = :identifier',
  };
}

export function resourcesStores(_d: Dialect, q: Runner<keyof ReturnType<typeof resourcesStatements>>): Pick<Stores, 'resources'> {
  const { changedAny } = queries(q);
  return {
    resources: {
      async create(record) {
        const inserted = await changedAny('insertResource', {
          identifier: record.identifier,
          name: record.name,
          accessTokenTtl: record.accessTokenTtl,
          introspectionSecretHash: record.introspectionSecretHash,
          signingAlg: record.signingAlg,
          createdAt: record.createdAt,
        });
        if (!inserted) throw new DuplicateError(`resource ${record.identifier}`);
        for (const [position, scope] of record.scopes.entries()) {
          const added = await changedAny('insertResourceScope', { name: scope.name, resource: record.identifier, description: scope.description, position });
          if (!added) throw new DuplicateError(`scope ${scope.name}`);
        }
      },
      async get(identifier) {
        const [row, scopes] = await Promise.all([q.one('getResource', { identifier }), q.all('getResourceScopes', { identifier })]);
        return row === undefined
          ? null
          : resourceFromRow(
              row,
              scopes.map(resourceScopeFromRow).map(({ name, description }) => ({ name, description })),
            );
      },
      async list() {
        const [resources, scopes] = await Promise.all([q.all('listResources', {}), q.all('listResourceScopes', {})]);
        const byResource = new Map<string, { name: string; description: string }[]>();
        for (const { resource, name, description } of scopes.map(resourceScopeFromRow)) {
          const list = byResource.get(resource) ?? [];
          list.push({ name, description });
          byResource.set(resource, list);
        }
        return resources.map((row) => resourceFromRow(row, byResource.get(text(row, 'identifier')) ?? []));
      },
      async update(identifier, changes) {
        const found = await changedAny('updateResource', {
          identifier,
          setSigningAlg: changes.signingAlg === undefined ? 0 : 1,
          signingAlg: changes.signingAlg ?? null,
          setName: changes.name === undefined ? 0 : 1,
          name: changes.name ?? null,
          setTtl: changes.accessTokenTtl === undefined ? 0 : 1,
          accessTokenTtl: changes.accessTokenTtl ?? null,
        });
        if (!found || changes.scopes === undefined) return found;
        const kept = new Set(changes.scopes.map((scope) => scope.name));
        for (const { name } of (await q.all('getResourceScopes', { identifier })).map(resourceScopeFromRow)) {
          if (!kept.has(name)) await q.changed('removeScopeFromGrants', { name });
        }
        await q.changed('removeResourceScopes', { identifier });
        for (const [position, scope] of changes.scopes.entries()) {
          const added = await changedAny('insertResourceScope', { name: scope.name, resource: identifier, description: scope.description, position });
          if (!added) throw new DuplicateError(`scope ${scope.name}`);
        }
        return true;
      },
      async remove(identifier) {
        await q.changed('removeResourceScopesFromGrants', { identifier });
        await q.changed('removeResourceScopesFromClients', { identifier });
        return changedAny('removeResource', { identifier });
      },
    },
  };
}
