/**
 * RFC 7644 §3.4.2 and §3.4.3: a list (`GET /Users`, `POST /Users/.search`, and the root's
 * `/.search` over both) answered by the database where the query maps to what it holds: a
 * filter over `id`, `userName`, `externalId`, `active`, `displayName`, `emails`, `members`
 * and `meta.created`/`meta.lastModified` (every operator, `and`, `or`, `not`), sorted by one
 * of the single-valued ones, becomes one SELECT of the page and one count. What does not map
 * (`name.familyName co "x"`, `emails[type eq "work"]`, sorting by `title`) is evaluated here
 * over the resources the mappable part of the filter leaves, at most `MAX_IN_MEMORY` of them;
 * past that, `400 tooMany` (Table 9: "more results than the server is willing to calculate").
 */
import type { GroupSearchField, ScimCondition, ScimSearch, UserSearchField } from '../../store/types.ts';
import { ScimError } from './errors.ts';
import type { AttrPath, Filter } from './filter.ts';
import { groupResourcesOf } from './groups.ts';
import { type ListQuery, listResponse, type ParsedQuery, pageResponse, parseQuery } from './query.ts';
import { GROUP_KIND, LIST_SCHEMA, type ResourceKind, USER_KIND } from './schema.ts';
import { type ScimDeps, userResourcesOf } from './users.ts';

/** The most resources a filter or sort the database cannot answer is evaluated over, here. */
export const MAX_IN_MEMORY = 10_000;

type Json = Record<string, unknown>;

/** A field the database holds, and how its values compare. */
interface Mapped<F extends string> {
  readonly field: F;
  readonly type: 'text' | 'boolean' | 'time';
  /** Several values (sorting by one is by its primary value, done here). */
  readonly multi: boolean;
}

/** The path relative to the resource's own schema, in lower case: `name` or `name.sub`; null for an extension's. */
function localPath(path: AttrPath, coreSchema: string): string | null {
  if (path.uri !== null && path.uri.toLowerCase() !== coreSchema.toLowerCase()) return null;
  return `${path.name}${path.sub === null ? '' : `.${path.sub}`}`.toLowerCase();
}

const USER_FIELDS: Readonly<Record<string, Mapped<UserSearchField>>> = {
  id: { field: 'id', type: 'text', multi: false },
  username: { field: 'userName', type: 'text', multi: false },
  externalid: { field: 'externalId', type: 'text', multi: false },
  active: { field: 'active', type: 'boolean', multi: false },
  displayname: { field: 'displayName', type: 'text', multi: false },
  emails: { field: 'emails', type: 'text', multi: true },
  'emails.value': { field: 'emails', type: 'text', multi: true },
  'meta.created': { field: 'created', type: 'time', multi: false },
  'meta.lastmodified': { field: 'lastModified', type: 'time', multi: false },
};

const GROUP_FIELDS: Readonly<Record<string, Mapped<GroupSearchField>>> = {
  id: { field: 'id', type: 'text', multi: false },
  displayname: { field: 'displayName', type: 'text', multi: false },
  externalid: { field: 'externalId', type: 'text', multi: false },
  members: { field: 'members', type: 'text', multi: true },
  'members.value': { field: 'members', type: 'text', multi: true },
  'meta.created': { field: 'created', type: 'time', multi: false },
  'meta.lastmodified': { field: 'lastModified', type: 'time', multi: false },
};

/** The fields the database holds, by the path that names them, for each resource type. */
export const FIELDS = { users: USER_FIELDS, groups: GROUP_FIELDS } as const;

/**
 * The condition `filter` is, over the fields the database holds; null when some part of it
 * names what the database does not hold, or compares in a way it does not (`co` on a time).
 * The filter has been checked (query.ts): each value is of its attribute's type.
 */
export function exactCondition<F extends string>(filter: Filter, fields: Readonly<Record<string, Mapped<F>>>, coreSchema: string): ScimCondition<F> | null {
  const mapped = (path: AttrPath) => {
    const local = localPath(path, coreSchema);
    return local === null ? undefined : fields[local];
  };
  switch (filter.kind) {
    case 'and':
    case 'or': {
      const left = exactCondition(filter.left, fields, coreSchema);
      const right = left === null ? null : exactCondition(filter.right, fields, coreSchema);
      return left === null || right === null ? null : { kind: filter.kind, left, right };
    }
    case 'not': {
      const inner = exactCondition(filter.filter, fields, coreSchema);
      return inner === null ? null : { kind: 'not', condition: inner };
    }
    case 'valuePath':
      return null;
    case 'present': {
      const field = mapped(filter.path);
      return field === undefined ? null : { kind: 'present', field: field.field };
    }
    case 'compare': {
      const field = mapped(filter.path);
      if (field === undefined) return null;
      const { op, value } = filter;
      // PostgreSQL's text holds no NUL: such a value is compared here, where it matches what it matches.
      if (typeof value === 'string' && value.includes('\u0000')) return null;
      // `eq null`: not there; `ne null`: there (filter.ts compare).
      if (value === null) return op === 'eq' ? { kind: 'not', condition: { kind: 'present', field: field.field } } : { kind: 'present', field: field.field };
      if (field.type === 'time') {
        if (op === 'co' || op === 'sw' || op === 'ew' || typeof value !== 'string') return null;
        return { kind: 'compare', field: field.field, op, value: Date.parse(value) };
      }
      if (field.type === 'boolean')
        return typeof value === 'boolean' && (op === 'eq' || op === 'ne') ? { kind: 'compare', field: field.field, op, value } : null;
      return typeof value === 'string' ? { kind: 'compare', field: field.field, op, value } : null;
    }
  }
}

/** A condition every resource `filter` matches holds for (the parts of an `and` the database can answer); null: any. */
export function narrowingCondition<F extends string>(filter: Filter, fields: Readonly<Record<string, Mapped<F>>>, coreSchema: string): ScimCondition<F> | null {
  const exact = exactCondition(filter, fields, coreSchema);
  if (exact !== null || filter.kind !== 'and') return exact;
  const left = narrowingCondition(filter.left, fields, coreSchema);
  const right = narrowingCondition(filter.right, fields, coreSchema);
  return left === null ? right : right === null ? left : { kind: 'and', left, right };
}

/** What a list is over: its kind, the fields the database holds, and one page of its resources as SCIM renders them. */
interface Listed<F extends string> {
  readonly kind: ResourceKind;
  readonly fields: Readonly<Record<string, Mapped<F>>>;
  readonly search: (search: ScimSearch<F>) => Promise<{ readonly total: number; readonly resources: Json[] }>;
}

async function list<F extends string>(listed: Listed<F>, parsed: ParsedQuery): Promise<Json> {
  const { kind, fields } = listed;
  const where = parsed.filter === null ? null : exactCondition(parsed.filter, fields, kind.core.id);
  const sortField = parsed.sort === null ? undefined : fields[localPath(parsed.sort.path, kind.core.id) ?? ''];
  const sortable = parsed.sort === null || (sortField !== undefined && !sortField.multi);
  if ((parsed.filter === null || where !== null) && sortable) {
    const { total, resources } = await listed.search({
      where,
      sortBy: sortField?.field ?? null,
      descending: parsed.sort?.descending ?? false,
      offset: parsed.start - 1,
      limit: parsed.count,
    });
    return pageResponse(kind, resources, total, parsed);
  }
  const narrowed = parsed.filter === null ? null : narrowingCondition(parsed.filter, fields, kind.core.id);
  const { total, resources } = await listed.search({ where: narrowed, sortBy: null, descending: false, offset: 0, limit: MAX_IN_MEMORY });
  if (total > MAX_IN_MEMORY)
    throw new ScimError(
      400,
      'tooMany',
      `the filter or sortBy is evaluated by the server over at most ${MAX_IN_MEMORY} resources, and leaves ${total}: narrow it with userName, externalId, emails, displayName, active, id or meta.lastModified`,
    );
  return listResponse(kind, resources, parsed);
}

const users = (deps: Pick<ScimDeps, 'store' | 'base'>): Listed<UserSearchField> => ({
  kind: USER_KIND,
  fields: USER_FIELDS,
  search: async (search) => {
    const found = await deps.store.scimUsers.search(search);
    return { total: found.total, resources: await userResourcesOf(deps, found.users) };
  },
});

const groups = (deps: Pick<ScimDeps, 'store' | 'base'>): Listed<GroupSearchField> => ({
  kind: GROUP_KIND,
  fields: GROUP_FIELDS,
  search: async (search) => {
    const found = await deps.store.groups.search(search);
    return { total: found.total, resources: await groupResourcesOf(deps, found.groups) };
  },
});

/** `GET /Users`, `POST /Users/.search`. */
export const listUsers = (deps: Pick<ScimDeps, 'store' | 'base'>, query: ListQuery): Promise<Json> => list(users(deps), parseQuery(USER_KIND, query));
/** `GET /Groups`, `POST /Groups/.search`. */
export const listGroups = (deps: Pick<ScimDeps, 'store' | 'base'>, query: ListQuery): Promise<Json> => list(groups(deps), parseQuery(GROUP_KIND, query));

/** The SearchRequest schema of §3.4.3. */
export const SEARCH_REQUEST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:SearchRequest';

/**
 * §3.4.3: a SearchRequest body as a list's query: `attributes` and `excludedAttributes` are
 * lists of names, `filter`, `sortBy` and `sortOrder` text, `startIndex` and `count` numbers.
 */
export function searchQuery(body: unknown): ListQuery {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    throw new ScimError(400, 'invalidSyntax', 'the body is not a SearchRequest (a JSON object)');
  const request = body as Json;
  const schemas = request['schemas'];
  if (!Array.isArray(schemas) || !schemas.some((schema) => schema === SEARCH_REQUEST_SCHEMA))
    throw new ScimError(400, 'invalidSyntax', `schemas must name ${SEARCH_REQUEST_SCHEMA}`);
  const known = ['schemas', 'attributes', 'excludedAttributes', 'filter', 'sortBy', 'sortOrder', 'startIndex', 'count'];
  const unknown = Object.keys(request).find((key) => !known.includes(key));
  if (unknown !== undefined) throw new ScimError(400, 'invalidSyntax', `${JSON.stringify(unknown.slice(0, 100))} is not a member of a SearchRequest`);
  const text = (name: string): string | undefined => {
    const value = request[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') throw new ScimError(400, 'invalidValue', `${name}: text`);
    return value;
  };
  const names = (name: string): string | undefined => {
    const value = request[name];
    if (value === undefined || value === null) return undefined;
    // A comma-separated string is taken too: some clients send the query parameter's form.
    if (typeof value === 'string') return value;
    if (!Array.isArray(value) || !value.every((item) => typeof item === 'string'))
      throw new ScimError(400, 'invalidValue', `${name}: a list of attribute names`);
    if (value.some((item) => item.includes(','))) throw new ScimError(400, 'invalidValue', `${name}: each item one attribute name`);
    return value.join(',');
  };
  const number = (name: string): string | undefined => {
    const value = request[name];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'number' || !Number.isInteger(value)) throw new ScimError(400, 'invalidValue', `${name}: a whole number`);
    return String(value);
  };
  return {
    filter: text('filter'),
    sortBy: text('sortBy'),
    sortOrder: text('sortOrder'),
    startIndex: number('startIndex'),
    count: number('count'),
    attributes: names('attributes'),
    excludedAttributes: names('excludedAttributes'),
  };
}

/**
 * §3.4.3 at the root (`POST /.search`): "across all resource types", here Users, then Groups.
 * A type whose attributes the filter or sortBy does not name finds nothing (`userName eq
 * "ada"` finds no Group); one that neither type has is refused as each type refuses it. The
 * page is taken over Users then Groups.
 */
export async function searchAll(deps: Pick<ScimDeps, 'store' | 'base'>, query: ListQuery): Promise<Json> {
  const parsed = (kind: ResourceKind): ParsedQuery | ScimError => {
    try {
      return parseQuery(kind, query);
    } catch (error) {
      if (error instanceof ScimError) return error;
      throw error;
    }
  };
  const [forUsers, forGroups] = [parsed(USER_KIND), parsed(GROUP_KIND)];
  if (forUsers instanceof ScimError && forGroups instanceof ScimError) throw forUsers;
  const some = forUsers instanceof ScimError ? (forGroups as ParsedQuery) : forUsers;
  const { start, count } = some;
  // How many Users the query finds, then the part of the page each type fills.
  const userTotal = forUsers instanceof ScimError ? 0 : ((await list(users(deps), { ...forUsers, start: 1, count: 0 }))['totalResults'] as number);
  const userPage =
    forUsers instanceof ScimError || start > userTotal
      ? []
      : ((await list(users(deps), { ...forUsers, start, count: Math.min(count, userTotal - start + 1) }))['Resources'] as Json[]);
  const groupPage =
    forGroups instanceof ScimError ? null : await list(groups(deps), { ...forGroups, start: Math.max(1, start - userTotal), count: count - userPage.length });
  const resources = [...userPage, ...((groupPage?.['Resources'] as Json[] | undefined) ?? [])];
  return {
    schemas: [LIST_SCHEMA],
    totalResults: userTotal + ((groupPage?.['totalResults'] as number | undefined) ?? 0),
    startIndex: start,
    itemsPerPage: resources.length,
    Resources: resources,
  };
}
