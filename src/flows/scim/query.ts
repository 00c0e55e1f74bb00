/**
 * RFC 7644 §3.4.2 and §3.9: a list's query (filter, sortBy, sortOrder, startIndex, count) and
 * the attributes an answer holds (`attributes`, `excludedAttributes`), over resources as SCIM
 * renders them.
 */
import { ScimError } from './errors.ts';
import { type AttrPath, attributeOf, checkFilter, type Filter, matches, member, parseAttrPath, parseFilter, type FilterContext } from './filter.ts';
import { definitionOf, LIST_SCHEMA, ruleOf, type ResourceKind } from './schema.ts';

/** A page holds at most this many resources (§3.4.2.4 `count`; ServiceProviderConfig filter.maxResults). */
export const MAX_RESULTS = 200;
/** A page without `count` holds this many. */
export const DEFAULT_COUNT = 100;

type Json = Record<string, unknown>;

export interface ListQuery {
  readonly filter?: string | undefined;
  readonly sortBy?: string | undefined;
  readonly sortOrder?: string | undefined;
  readonly startIndex?: string | undefined;
  readonly count?: string | undefined;
  readonly attributes?: string | undefined;
  readonly excludedAttributes?: string | undefined;
}

const contextOf = (kind: ResourceKind): FilterContext => ({ coreSchema: kind.core.id, rule: (path) => ruleOf(kind, path) });

/** §3.4.2.4: "A value less than 1 SHALL be interpreted as 1"; a count below 0 as 0, and above the bound as the bound. */
function integer(raw: string | undefined, name: string): number | null {
  if (raw === undefined || raw === '') return null;
  if (!/^-?\d{1,15}$/.test(raw)) throw new ScimError(400, 'invalidValue', `${name}: a whole number`);
  return Number(raw);
}

/** The names of an `attributes` or `excludedAttributes` parameter, each an attribute of the resource kind. */
function attributeList(kind: ResourceKind, raw: string | undefined, name: string): string[] {
  if (raw === undefined || raw.trim() === '') return [];
  const names = raw
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  if (names.length > 100) throw new ScimError(400, 'invalidValue', `${name}: at most 100 attributes`);
  for (const item of names) {
    let path;
    try {
      path = parseAttrPath(item, 'invalidFilter');
    } catch {
      throw new ScimError(400, 'invalidValue', `${name}: ${JSON.stringify(item.slice(0, 100))} is not an attribute`);
    }
    if (definitionOf(kind, path) === undefined && !kind.extensions.some((schema) => schema.id.toLowerCase() === item.toLowerCase())) {
      throw new ScimError(400, 'invalidValue', `${name}: ${JSON.stringify(item.slice(0, 100))} is not an attribute of a ${kind.name}`);
    }
  }
  return names;
}

/**
 * RFC 7644 §3.9: the resource with only the attributes asked for (and those always returned:
 * `id`, `schemas`, `meta`... §3.9 lets `meta` follow the request too, but clients rely on its
 * version), or without those excluded.
 */
export function project(kind: ResourceKind, resource: Json, attributes: readonly string[], excluded: readonly string[]): Json {
  if (attributes.length === 0 && excluded.length === 0) return resource;
  const always = ['schemas', 'id', 'meta'];
  const out: Json = {};
  const keep = (include: (top: string, sub: string | null, uri: string | null) => boolean | 'partial', subs: (top: string, uri: string | null) => string[]) => {
    for (const [key, value] of Object.entries(resource)) {
      const extension = kind.extensions.find((schema) => schema.id === key);
      if (extension !== undefined && value !== null && typeof value === 'object') {
        const inner: Json = {};
        for (const [innerKey, innerValue] of Object.entries(value as Json)) if (include(innerKey, null, extension.id) === true) inner[innerKey] = innerValue;
        if (Object.keys(inner).length > 0) out[key] = inner;
        continue;
      }
      const verdict = always.includes(key) ? true : include(key, null, null);
      if (verdict === true) out[key] = value;
      else if (verdict === 'partial') {
        const names = subs(key, null);
        const pick = (item: unknown) =>
          item !== null && typeof item === 'object'
            ? Object.fromEntries(Object.entries(item as Json).filter(([sub]) => names.some((name) => name.toLowerCase() === sub.toLowerCase())))
            : item;
        out[key] = Array.isArray(value) ? value.map(pick) : pick(value);
      }
    }
  };
  const same = (a: string | null, b: string | null) => (a ?? '').toLowerCase() === (b ?? '').toLowerCase();
  /**
   * The names of `attributes` or `excludedAttributes` as this kind reads them: an extension
   * named by its URI (the whole of it), and the paths of the others, with the core schema's URI
   * or without (urn:…:core:2.0:User:title is title), a sub-attribute by its path (name.givenName).
   */
  const namesOf = (names: readonly string[]) => {
    const extensions = names.filter((name) => kind.extensions.some((schema) => same(schema.id, name)));
    const paths = names
      .filter((name) => !extensions.includes(name))
      .map((name) => parseAttrPath(name))
      .map((path) => ({ ...path, uri: same(path.uri, kind.core.id) ? null : path.uri }));
    return {
      wholeExtension: (uri: string) => extensions.some((name) => same(name, uri)),
      /** The paths naming attribute `name` of the extension `uri` (null: the core schema's). */
      of: (uri: string | null, name: string) => paths.filter((path) => same(path.uri, uri) && same(path.name, name)),
    };
  };
  if (attributes.length > 0) {
    const wanted = namesOf(attributes);
    keep(
      (top, _sub, uri) => {
        if (uri !== null && wanted.wholeExtension(uri)) return true;
        const hits = wanted.of(uri, top);
        if (hits.some((path) => path.sub === null)) return true;
        return hits.length > 0 ? 'partial' : false;
      },
      (top, uri) => wanted.of(uri, top).flatMap((path) => (path.sub === null ? [] : [path.sub])),
    );
    return out;
  }
  const dropped = namesOf(excluded);
  /** `value` without what is dropped of it; null when nothing is left (all of it dropped, or every sub-attribute it had). */
  const without = (uri: string | null, name: string, value: unknown): unknown => {
    const hits = dropped.of(uri, name);
    if (hits.length === 0) return value;
    if (hits.some((path) => path.sub === null)) return null;
    const trim = (item: unknown): unknown => {
      if (item === null || typeof item !== 'object' || Array.isArray(item)) return item;
      const left = Object.entries(item as Json).filter(([sub]) => !hits.some((path) => same(path.sub, sub)));
      return left.length === 0 ? null : Object.fromEntries(left);
    };
    if (!Array.isArray(value)) return trim(value);
    const items = value.map(trim).filter((item) => item !== null);
    return items.length === 0 ? null : items;
  };
  for (const [key, value] of Object.entries(resource)) {
    if (always.includes(key)) {
      out[key] = value;
      continue;
    }
    const extension = kind.extensions.find((schema) => schema.id === key);
    if (extension !== undefined && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      if (dropped.wholeExtension(extension.id)) continue;
      const inner: Json = {};
      for (const [innerKey, innerValue] of Object.entries(value as Json)) {
        const kept = without(extension.id, innerKey, innerValue);
        if (kept !== null) inner[innerKey] = kept;
      }
      if (Object.keys(inner).length > 0) out[key] = inner;
      continue;
    }
    const kept = without(null, key, value);
    if (kept !== null) out[key] = kept;
  }
  return out;
}

/** The value a resource sorts by (§3.4.2.3): a multi-valued attribute by its primary value (else its first). */
function sortValue(resource: Json, kind: ResourceKind, path: AttrPath): string | number | boolean | null {
  const attribute = attributeOf(resource, { ...path, sub: null }, kind.core.id);
  let value: unknown = attribute;
  if (Array.isArray(attribute)) {
    const primary = attribute.find((item) => member(item, 'primary') === true) ?? attribute[0];
    value = primary;
  }
  const sub = path.sub ?? (value !== null && typeof value === 'object' ? 'value' : null);
  if (sub !== null) value = member(value, sub);
  // §3.4.2.3: "String type attributes are case insensitive by default, unless the attribute
  // type is defined as a caseExact string" (id, externalId, a member's value).
  if (typeof value === 'string') return ruleOf(kind, path)?.caseExact ? value : value.toLowerCase();
  return typeof value === 'number' || typeof value === 'boolean' ? value : null;
}

/** A list's query, read and checked (§3.4.2): every refusal comes before anything is read. */
export interface ParsedQuery {
  readonly filter: Filter | null;
  readonly sort: { readonly path: AttrPath; readonly descending: boolean } | null;
  /** 1-based (§3.4.2.4). */
  readonly start: number;
  readonly count: number;
  readonly attributes: readonly string[];
  readonly excluded: readonly string[];
}

export function parseQuery(kind: ResourceKind, query: ListQuery): ParsedQuery {
  const context = contextOf(kind);
  const filter = query.filter === undefined ? null : parseFilter(query.filter);
  if (filter !== null) checkFilter(filter, context);
  const attributes = attributeList(kind, query.attributes, 'attributes');
  const excluded = attributeList(kind, query.excludedAttributes, 'excludedAttributes');
  let sort: ParsedQuery['sort'] = null;
  if (query.sortBy !== undefined && query.sortBy !== '') {
    let path;
    try {
      path = parseAttrPath(query.sortBy);
    } catch {
      throw new ScimError(400, 'invalidValue', `sortBy ${JSON.stringify(query.sortBy.slice(0, 100))}: not an attribute`);
    }
    if (definitionOf(kind, path) === undefined)
      throw new ScimError(400, 'invalidValue', `sortBy ${JSON.stringify(query.sortBy.slice(0, 100))}: not an attribute of a ${kind.name}`);
    const order = (query.sortOrder ?? 'ascending').toLowerCase();
    if (order !== 'ascending' && order !== 'descending') throw new ScimError(400, 'invalidValue', 'sortOrder: ascending or descending');
    sort = { path, descending: order === 'descending' };
  }
  const start = Math.max(1, integer(query.startIndex, 'startIndex') ?? 1);
  const count = Math.min(MAX_RESULTS, Math.max(0, integer(query.count, 'count') ?? DEFAULT_COUNT));
  return { filter, sort, start, count, attributes, excluded };
}

/** §3.4.2: a ListResponse of one page, `total` the resources the query finds in all. */
export function pageResponse(kind: ResourceKind, page: readonly Json[], total: number, parsed: ParsedQuery): Json {
  return {
    schemas: [LIST_SCHEMA],
    totalResults: total,
    startIndex: parsed.start,
    itemsPerPage: page.length,
    Resources: page.map((resource) => project(kind, resource, parsed.attributes, parsed.excluded)),
  };
}

/** §3.4.2: the page of `resources` the query asks for, filtered and sorted here, as a ListResponse. */
export function listResponse(kind: ResourceKind, resources: readonly Json[], parsed: ParsedQuery): Json {
  const context = contextOf(kind);
  const { filter, sort } = parsed;
  let found = filter === null ? [...resources] : resources.filter((resource) => matches(resource, filter, context));
  if (sort !== null) {
    const keyed = found.map((resource) => ({ resource, key: sortValue(resource, kind, sort.path) }));
    // §3.4.2.3: "if there is no data for the specified "sortBy" value, they are sorted via the
    // "sortOrder" parameter, i.e., they are ordered last if ascending and first if descending":
    // no value sorts after every value, and the order turns it round. Ties keep the list's order.
    const ascending = (a: (typeof keyed)[number], b: (typeof keyed)[number]) =>
      a.key === null ? (b.key === null ? 0 : 1) : b.key === null ? -1 : a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
    keyed.sort((a, b) => ascending(a, b) * (sort.descending ? -1 : 1));
    found = keyed.map((item) => item.resource);
  }
  return pageResponse(kind, found.slice(parsed.start - 1, parsed.start - 1 + parsed.count), found.length, parsed);
}
