/**
 * RFC 7644 §3.7, bulk operations: up to `MAX_BULK_OPERATIONS` operations on Users and Groups
 * in one request, each made as its own request would be (each its own transaction: §3.7 does
 * not make a bulk request atomic), in order, `bulkId:` references to resources made earlier in
 * the request resolved in paths and data; `failOnErrors` stops after that many errors.
 */
import { checkScimJson, ScimError } from './errors.ts';
import { member } from './filter.ts';
import { BULK_RESPONSE_SCHEMA } from './schema.ts';

/** §3.7: "maxOperations" and "maxPayloadSize" (RFC 7643 §5), the latter the bound on every SCIM body. */
export const MAX_BULK_OPERATIONS = 100;
export const MAX_PAYLOAD_BYTES = 1_048_576;

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === 'object' && value !== null && !Array.isArray(value);

/** One request the bulk operation stands for; answers the resource made or changed (null: none), or throws a ScimError. */
export type BulkDispatch = (method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, data: unknown, version: string | undefined) => Promise<Json | null>;

/** `bulkId:ID` in any string of `value`, replaced by the id the resource made under that bulkId got. */
function resolve(value: unknown, ids: ReadonlyMap<string, string>): unknown {
  if (typeof value === 'string') {
    return value.replace(/bulkId:([A-Za-z0-9._~-]{1,100})/g, (whole, bulkId: string) => {
      const id = ids.get(bulkId);
      if (id === undefined) throw new ScimError(409, 'invalidValue', `${whole}: no resource was made under that bulkId before this operation`);
      return id;
    });
  }
  if (Array.isArray(value)) return value.map((item) => resolve(item, ids));
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([key, inner]) => [key, resolve(inner, ids)]));
  return value;
}

export async function bulk(body: unknown, dispatch: BulkDispatch): Promise<Json> {
  if (!isObject(body)) throw new ScimError(400, 'invalidSyntax', 'the body is not a BulkRequest');
  // Before resolve walks the operations' data, recursively.
  checkScimJson(body);
  const operations = member(body, 'Operations');
  if (!Array.isArray(operations)) throw new ScimError(400, 'invalidSyntax', 'a BulkRequest has Operations: a list');
  // §3.7.4: "the service provider MUST respond with a 413 ... if the number of operations exceeds maxOperations".
  if (operations.length > MAX_BULK_OPERATIONS) throw new ScimError(413, null, `at most ${MAX_BULK_OPERATIONS} operations in one bulk request`);
  const failOnErrors = member(body, 'failOnErrors');
  if (failOnErrors !== undefined && !(Number.isInteger(failOnErrors) && (failOnErrors as number) >= 1))
    throw new ScimError(400, 'invalidValue', 'failOnErrors: a whole number from 1');
  const ids = new Map<string, string>();
  const results: Json[] = [];
  let errors = 0;
  for (const [i, raw] of operations.entries()) {
    if (failOnErrors !== undefined && errors >= (failOnErrors as number)) break;
    const method = isObject(raw) ? member(raw, 'method') : undefined;
    const bulkId = isObject(raw) ? member(raw, 'bulkId') : undefined;
    const base = { ...(typeof method === 'string' ? { method: method.toUpperCase() } : {}), ...(typeof bulkId === 'string' ? { bulkId } : {}) };
    try {
      if (!isObject(raw) || typeof method !== 'string' || !['POST', 'PUT', 'PATCH', 'DELETE'].includes(method.toUpperCase()))
        throw new ScimError(400, 'invalidSyntax', `Operations[${i}].method: POST, PUT, PATCH or DELETE`);
      const path = member(raw, 'path');
      if (typeof path !== 'string' || !/^\/(Users|Groups)(\/[^/?#]{1,300})?$/.test(resolve(path, ids) as string))
        throw new ScimError(400, 'invalidPath', `Operations[${i}].path: /Users, /Groups, /Users/ID or /Groups/ID`);
      const upper = method.toUpperCase() as 'POST' | 'PUT' | 'PATCH' | 'DELETE';
      if (upper === 'POST' && typeof bulkId !== 'string') throw new ScimError(400, 'invalidValue', `Operations[${i}]: a POST has a bulkId`);
      const version = member(raw, 'version');
      const resource = await dispatch(
        upper,
        resolve(path, ids) as string,
        resolve(member(raw, 'data'), ids),
        typeof version === 'string' ? version : undefined,
      );
      const meta = resource === null ? null : (resource['meta'] as Json | undefined);
      if (upper === 'POST' && resource !== null && typeof bulkId === 'string') ids.set(bulkId, String(resource['id']));
      results.push({
        ...base,
        ...(meta ? { location: meta['location'], version: meta['version'] } : {}),
        status: upper === 'POST' ? '201' : upper === 'DELETE' ? '204' : '200',
      });
    } catch (error) {
      if (!(error instanceof ScimError)) throw error;
      errors += 1;
      results.push({ ...base, status: String(error.status), response: error.toJSON() });
    }
  }
  return { schemas: [BULK_RESPONSE_SCHEMA], Operations: results };
}
