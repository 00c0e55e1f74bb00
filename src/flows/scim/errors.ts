/**
 * RFC 7644 §3.12, error responses: one error type for the SCIM service, rendered in the error
 * schema (`urn:ietf:params:scim:api:messages:2.0:Error`) with the HTTP status as a string and,
 * for a 400 or 409, the `scimType` Table 9 names.
 */

/** RFC 7644 §3.12 Table 9, and `invalidToken` for a refused bearer token (RFC 6750 §3.1). */
export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers'
  | 'sensitive';

export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

export class ScimError extends Error {
  readonly status: number;
  readonly scimType: ScimType | null;
  /** Seconds a 429 or 503 asks the caller to wait. */
  readonly retryAfterSeconds: number | undefined;

  constructor(status: number, scimType: ScimType | null, detail: string, retryAfterSeconds?: number) {
    super(detail);
    this.name = 'ScimError';
    this.status = status;
    this.scimType = scimType;
    this.retryAfterSeconds = retryAfterSeconds;
  }

  /** §3.12: the body of the error response. */
  toJSON(): Record<string, unknown> {
    return { schemas: [SCIM_ERROR_SCHEMA], status: String(this.status), ...(this.scimType === null ? {} : { scimType: this.scimType }), detail: this.message };
  }
}

export const invalidValue = (detail: string) => new ScimError(400, 'invalidValue', detail);
export const notFound = (detail: string) => new ScimError(404, null, detail);

/**
 * How deep a SCIM body's JSON may nest. A PATCH in a bulk request, the deepest there is, reaches
 * under ten; the resources' checks walk what they are given recursively, and a body nested
 * thousands deep would end them in a stack overflow, a 500.
 */
const MAX_JSON_DEPTH = 64;

/**
 * A SCIM body (a resource, a bulk request) holds no NUL character in a string or a member's
 * name: no attribute means one, and PostgreSQL's text and jsonb cannot keep it (the write would
 * fail as a 500, not as the client's error). Nor does it nest deeper than `MAX_JSON_DEPTH`.
 * Checked before anything else walks the body.
 */
export function checkScimJson(body: unknown): void {
  checkNested(body, 1);
}

function checkNested(value: unknown, depth: number): void {
  if (typeof value === 'string') {
    if (value.includes('\u0000')) throw invalidValue('the body holds a NUL character (\\u0000), which no attribute may');
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if (depth > MAX_JSON_DEPTH) throw invalidValue(`the body nests deeper than ${MAX_JSON_DEPTH} levels, which no resource does`);
  for (const [key, item] of Object.entries(value)) {
    checkNested(key, depth);
    checkNested(item, depth + 1);
  }
}
