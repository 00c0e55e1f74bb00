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

/** Whether a JSON value holds a NUL character in a string or a member's name. */
function holdsNul(value: unknown, depth = 0): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (value === null || typeof value !== 'object' || depth > 64) return false;
  if (Array.isArray(value)) return value.some((item) => holdsNul(item, depth + 1));
  return Object.entries(value).some(([key, item]) => key.includes('\u0000') || holdsNul(item, depth + 1));
}

/**
 * A resource given holds no NUL character: no attribute means one, and PostgreSQL's text and
 * jsonb cannot keep it (the write would fail as a 500, not as the client's error).
 */
export function checkNoNul(resource: unknown): void {
  if (holdsNul(resource)) throw invalidValue('the resource holds a NUL character (\\u0000), which no attribute may');
}
