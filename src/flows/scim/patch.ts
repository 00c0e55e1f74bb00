/**
 * RFC 7644 §3.5.2, modifying with PATCH: the operations applied, in order, to a resource as
 * SCIM renders it, all or nothing (the result is then checked and written whole, as a PUT
 * would be). Besides the RFC's own forms, the ones Entra ID and Okta send:
 * - `"op": "Replace"`, `"Add"`, `"Remove"`: the op without regard to case (Entra ID);
 * - an `add` or `replace` without a path whose value names attributes by path
 *   (`{"name.givenName": "Ada"}`, `{"urn:…:enterprise:2.0:User:department": "R&D"}`);
 * - `replace` of `emails[type eq "work"].value` when there is no work address yet: one is
 *   added with `type` work (Entra ID's mapping of `mail`), rather than `noTarget`;
 * - `remove` of `members` with the members to remove as its value (Entra ID, Okta);
 * - booleans as the strings "True" and "False" (Entra ID's `active`), read by the schema.
 */
import { checkScimJson, ScimError } from './errors.ts';
import { attributeOf, matches, member, parsePatchPath, type AttrPath, type Filter, type FilterContext, type PatchPath } from './filter.ts';
import { definitionOf, ruleOf, type AttributeDef, type ResourceKind } from './schema.ts';

/** At most this many operations in one PATCH. */
export const MAX_PATCH_OPERATIONS = 1000;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);
const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The key `name` has in `object` (its spelling there, else as given). */
function keyOf(object: Json, name: string): string {
  return Object.keys(object).find((key) => same(key, name)) ?? name;
}

/** A string "true" or "false" (any case) where the schema says boolean, as Entra ID sends `active`. */
export function coerce(def: AttributeDef, value: unknown): unknown {
  if (def.type === 'boolean' && typeof value === 'string' && /^(true|false)$/i.test(value)) return value.toLowerCase() === 'true';
  if (def.type === 'complex' && def.subAttributes !== undefined) {
    const one = (item: unknown) => {
      if (!isObject(item)) return item;
      const out: Json = {};
      for (const [key, inner] of Object.entries(item)) {
        const sub = def.subAttributes!.find((candidate) => same(candidate.name, key));
        out[key] = sub === undefined ? inner : coerce(sub, inner);
      }
      return out;
    };
    return Array.isArray(value) ? value.map(one) : one(value);
  }
  if (def.multiValued && Array.isArray(value)) return value.map((item) => coerce({ ...def, multiValued: false }, item));
  return value;
}

export interface PatchOperation {
  readonly op: 'add' | 'replace' | 'remove';
  readonly path: PatchPath | null;
  readonly value: unknown;
}

/** The operations of a PatchOp body (§3.5.2), each checked: an op, a path that parses, a value where one is needed. */
export function readOperations(body: unknown): PatchOperation[] {
  const operations = isObject(body) ? (body['Operations'] ?? member(body, 'Operations')) : undefined;
  if (!Array.isArray(operations) || operations.length === 0)
    throw new ScimError(400, 'invalidSyntax', 'a PatchOp has Operations: a list of at least one operation');
  if (operations.length > MAX_PATCH_OPERATIONS) throw new ScimError(400, 'tooMany', `at most ${MAX_PATCH_OPERATIONS} operations in one PATCH`);
  // Before applyPatch and coerce walk the values, recursively.
  checkScimJson(operations);
  return operations.map((raw, i) => {
    if (!isObject(raw)) throw new ScimError(400, 'invalidSyntax', `Operations[${i}] is not an object`);
    const op = member(raw, 'op');
    if (typeof op !== 'string' || !['add', 'replace', 'remove'].includes(op.toLowerCase()))
      throw new ScimError(400, 'invalidSyntax', `Operations[${i}].op: add, replace or remove`);
    const rawPath = member(raw, 'path');
    if (rawPath !== undefined && rawPath !== null && typeof rawPath !== 'string') throw new ScimError(400, 'invalidPath', `Operations[${i}].path is not text`);
    const path = typeof rawPath === 'string' && rawPath !== '' ? parsePatchPath(rawPath) : null;
    const value = member(raw, 'value');
    const kind = op.toLowerCase() as PatchOperation['op'];
    // §3.5.2.3: "If 'path' is unspecified, the operation fails with HTTP status code 400 and a 'scimType' error code of 'noTarget'."
    if (kind === 'remove' && path === null) throw new ScimError(400, 'noTarget', `Operations[${i}]: remove needs a path`);
    if (kind !== 'remove' && value === undefined) throw new ScimError(400, 'invalidValue', `Operations[${i}]: ${kind} needs a value`);
    return { op: kind, path, value };
  });
}

/** Where an attribute lives: the resource itself, or its extension's object (made when `create`). */
function holderOf(resource: Json, kind: ResourceKind, path: AttrPath, create: boolean): Json | null {
  const found = definitionOf(kind, path);
  if (found === undefined || found.schema === kind.core) return resource;
  const key = keyOf(resource, found.schema.id);
  if (!isObject(resource[key])) {
    if (!create) return null;
    resource[key] = {};
  }
  return resource[key] as Json;
}

/** The definition of a path, or `invalidPath`; a read-only attribute is `mutability`. */
function writable(kind: ResourceKind, path: AttrPath): { attribute: AttributeDef; sub: AttributeDef | null } {
  const found = definitionOf(kind, path);
  if (found === undefined) throw new ScimError(400, 'invalidPath', `${describePath(path)}: no such attribute`);
  const def = found.sub ?? found.attribute;
  if (found.attribute.mutability === 'readOnly' || def.mutability === 'readOnly') {
    throw new ScimError(400, 'mutability', `${describePath(path)} is read-only`);
  }
  return found;
}

const describePath = (path: AttrPath) => `${path.uri === null ? '' : `${path.uri}:`}${path.name}${path.sub === null ? '' : `.${path.sub}`}`.slice(0, 200);

/** Sets (or, for `add` on a multi-valued attribute, appends to) the attribute a plain path names. */
function setAt(resource: Json, kind: ResourceKind, path: AttrPath, value: unknown, op: 'add' | 'replace'): void {
  const { attribute, sub } = writable(kind, path);
  const holder = holderOf(resource, kind, path, true)!;
  const key = keyOf(holder, attribute.name);
  if (sub !== null) {
    // name.givenName: a sub-attribute of a singular complex attribute (of each value of a multi-valued one).
    const coerced = coerce(sub, value);
    if (attribute.multiValued) {
      const values = Array.isArray(holder[key]) ? (holder[key] as unknown[]) : [];
      for (const item of values) if (isObject(item)) item[keyOf(item, sub.name)] = coerced;
      return;
    }
    const inner = isObject(holder[key]) ? (holder[key] as Json) : {};
    inner[keyOf(inner, sub.name)] = coerced;
    holder[key] = inner;
    return;
  }
  const coerced = coerce(attribute, value);
  if (attribute.multiValued) {
    const given = Array.isArray(coerced) ? coerced : [coerced];
    const kept = op === 'add' && Array.isArray(holder[key]) ? (holder[key] as unknown[]) : [];
    // §3.5.2.1: added values already there are not added twice.
    const fresh = given.filter((item) => !kept.some((old) => JSON.stringify(old) === JSON.stringify(item)));
    holder[key] = [...kept, ...fresh];
    return;
  }
  if (attribute.type === 'complex' && isObject(coerced) && isObject(holder[key])) {
    // §3.5.2.1/§3.5.2.3: a complex value's sub-attributes given replace those, the others stay.
    holder[key] = { ...(holder[key] as Json), ...coerced };
    return;
  }
  holder[key] = coerced;
}

/** The values of a multi-valued attribute a `[…]` selects. */
function selected(values: unknown[], filter: Filter, kind: ResourceKind, path: AttrPath): Json[] {
  const context: FilterContext = {
    coreSchema: kind.core.id,
    rule: (inner) => ruleOf(kind, { uri: path.uri, name: path.name, sub: inner.sub === null ? inner.name : `${inner.name}.${inner.sub}` }),
  };
  return values.filter((value): value is Json => isObject(value) && matches(value, filter, context));
}

/** `type eq "work"` (and such joined by `and`): the value a filter asks for, to make one when none matches. */
function equalities(filter: Filter): Json | null {
  if (filter.kind === 'compare' && filter.op === 'eq' && filter.path.sub === null && filter.path.uri === null) return { [filter.path.name]: filter.value };
  if (filter.kind === 'and') {
    const [left, right] = [equalities(filter.left), equalities(filter.right)];
    return left === null || right === null ? null : { ...left, ...right };
  }
  return null;
}

function applyFiltered(resource: Json, kind: ResourceKind, target: PatchPath, filter: Filter, operation: PatchOperation): void {
  const { attribute } = writable(kind, target.path);
  if (!attribute.multiValued || attribute.type !== 'complex')
    throw new ScimError(400, 'invalidPath', `${describePath(target.path)}: "[…]" selects values of a multi-valued complex attribute`);
  const sub = target.subAfter === null ? null : attribute.subAttributes?.find((candidate) => same(candidate.name, target.subAfter!));
  if (target.subAfter !== null && sub === undefined)
    throw new ScimError(400, 'invalidPath', `${describePath(target.path)}.${target.subAfter.slice(0, 100)}: no such sub-attribute`);
  // RFC 7643 §7: a readOnly sub-attribute "SHALL NOT be modified", through a filter as without one.
  if (sub?.mutability === 'readOnly') throw new ScimError(400, 'mutability', `${describePath(target.path)}.${sub.name} is read-only`);
  const holder = holderOf(resource, kind, target.path, operation.op !== 'remove');
  if (holder === null) return;
  const key = keyOf(holder, attribute.name);
  const values = Array.isArray(holder[key]) ? (holder[key] as unknown[]) : [];
  const hits = selected(values, filter, kind, target.path);
  if (operation.op === 'remove') {
    if (sub === null || sub === undefined) holder[key] = values.filter((value) => !hits.includes(value as Json));
    else for (const hit of hits) delete hit[keyOf(hit, sub.name)];
    return;
  }
  if (hits.length === 0) {
    // Entra ID replaces emails[type eq "work"].value for a person who has no work address yet: make it.
    const made = equalities(filter);
    if (made === null) throw new ScimError(400, 'noTarget', `${describePath(target.path)}: no value matches the path's filter`);
    const value =
      sub === null || sub === undefined ? { ...made, ...(isObject(operation.value) ? operation.value : {}) } : { ...made, [sub.name]: operation.value };
    holder[key] = [...values, coerce({ ...attribute, multiValued: false }, value)];
    return;
  }
  for (const hit of hits) {
    if (sub !== null && sub !== undefined) {
      hit[keyOf(hit, sub.name)] = coerce(sub, operation.value);
    } else {
      if (!isObject(operation.value))
        throw new ScimError(400, 'invalidValue', `${describePath(target.path)}: the value of a selected value is an object of its sub-attributes`);
      const coerced = coerce({ ...attribute, multiValued: false }, operation.value) as Json;
      if (operation.op === 'replace') for (const name of Object.keys(hit)) delete hit[name];
      Object.assign(hit, coerced);
    }
  }
}

function removeAt(resource: Json, kind: ResourceKind, path: AttrPath, value: unknown): void {
  const { attribute, sub } = writable(kind, path);
  const holder = holderOf(resource, kind, path, false);
  if (holder === null) return;
  const key = keyOf(holder, attribute.name);
  if (sub !== null) {
    const values = attribute.multiValued ? (Array.isArray(holder[key]) ? (holder[key] as unknown[]) : []) : [holder[key]];
    for (const item of values) if (isObject(item)) delete item[keyOf(item, sub.name)];
    return;
  }
  if (attribute.multiValued && value !== undefined && value !== null && Array.isArray(holder[key])) {
    // Entra ID and Okta: `remove` of `members` with `value: [{"value": id}]` removes those members.
    const given = (Array.isArray(value) ? value : [value]).map((item) => (isObject(item) ? member(item, 'value') : item));
    holder[key] = (holder[key] as unknown[]).filter(
      (item) => !given.some((gone) => gone !== undefined && gone === (isObject(item) ? member(item, 'value') : item)),
    );
    return;
  }
  delete holder[key];
}

/** Applies the operations to `resource` (a copy is changed and returned). */
export function applyPatch(resource: Readonly<Json>, kind: ResourceKind, operations: readonly PatchOperation[]): Json {
  const result = structuredClone(resource) as Json;
  for (const operation of operations) {
    const target = operation.path;
    if (target === null) {
      // §3.5.2.1/§3.5.2.3 without a path: the value is an object of attributes; its keys may be paths (Entra ID).
      if (!isObject(operation.value)) throw new ScimError(400, 'invalidValue', `${operation.op} without a path takes an object of attributes`);
      for (const [name, value] of Object.entries(operation.value)) {
        if (same(name, 'schemas')) continue;
        const found = definitionOf(kind, { uri: null, name, sub: null });
        const extension = kind.extensions.find((schema) => same(schema.id, name));
        if (extension !== undefined && isObject(value)) {
          for (const [inner, innerValue] of Object.entries(value))
            setAt(result, kind, { uri: extension.id, name: inner, sub: null }, innerValue, operation.op as 'add' | 'replace');
          continue;
        }
        // RFC 7643 §7 readOnly: "any values provided SHALL be ignored" (Okta sends the group's id in its replace).
        if (found !== undefined && found.attribute.mutability === 'readOnly') continue;
        const path = found !== undefined ? { uri: null, name, sub: null } : parsePatchPath(name).path;
        setAt(result, kind, path, value, operation.op as 'add' | 'replace');
      }
      continue;
    }
    if (target.filter !== null) {
      applyFiltered(result, kind, target, target.filter, operation);
      continue;
    }
    if (operation.op === 'remove') removeAt(result, kind, target.path, operation.value);
    else setAt(result, kind, target.path, operation.value, operation.op);
  }
  return result;
}

/** The attribute a path names in a resource, for tests and for reading a PATCH's effect. */
export function valueAt(resource: Readonly<Json>, kind: ResourceKind, path: string): unknown {
  return attributeOf(resource, parsePatchPath(path).path, kind.core.id);
}
