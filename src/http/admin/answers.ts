/**
 * The admin API's answers, typed (a generated client learns what each answer holds).
 * Each schema lists what the operation's JSON function writes (flows/manage/*.ts `…Json`);
 * Fastify serializes answers through them, so a field left out here is left out of the answer,
 * and the admin API tests read the fields they check.
 */
import type { JsonSchema } from '../../flows/manage/fields/field.ts';

const string = { type: 'string' } as const;
const nullableString = { type: ['string', 'null'] } as const;
const time = { type: 'string', format: 'date-time' } as const;
const nullableTime = { type: ['string', 'null'], format: 'date-time' } as const;
const integer = { type: 'integer' } as const;
const boolean = { type: 'boolean' } as const;

/** An object whose every property is always present. */
export const object = (properties: Readonly<Record<string, JsonSchema>>, description?: string): JsonSchema => ({
  type: 'object',
  ...(description === undefined ? {} : { description }),
  properties,
  required: Object.keys(properties),
});

/** A list answer: the items under `name`, and where the next page starts, if it is paged. */
export const listOf = (name: string, item: JsonSchema, paged: 'offset' | 'cursor' | null = null): JsonSchema =>
  object({
    [name]: { type: 'array', items: item },
    ...(paged === 'offset' ? { next_offset: { type: ['integer', 'null'], description: 'The offset of the next page; null on the last' } } : {}),
    ...(paged === 'cursor' ? { next: { type: ['string', 'null'], description: 'The `after` of the next page; null on the last' } } : {}),
  });

export const EVENT = object(
  {
    id: string,
    type: string,
    at: time,
    user_id: nullableString,
    username: nullableString,
    client_id: nullableString,
    grant_id: nullableString,
    ip: nullableString,
    user_agent: nullableString,
    detail: { type: 'object', additionalProperties: true, description: 'What the event type records (docs/operations.md)' },
  },
  'One entry of the audit trail',
);

export const KEY = object(
  {
    kid: string,
    alg: string,
    created_at: nullableTime,
    activates_at: nullableTime,
    retires_at: nullableTime,
    expires_at: nullableTime,
    state: { type: 'string', description: 'signing; published, signs from TIME; retired, published until TIME; or withdrawn' },
  },
  'A published signing key: public facts only',
);

export const ROTATED_KEY = object({ kid: string, alg: string, activates_at: time });

export const PENDING_DEVICE = object(
  {
    user_code: string,
    client_id: string,
    client_name: string,
    scope: string,
    ip: nullableString,
    user_agent: nullableString,
    created_at: time,
    expires_at: time,
  },
  'A device request waiting for a person (never its device code)',
);

export const DENIED_DEVICE = object({ user_code: string, client_id: string, status: string });

const REGISTRATION_TOKEN_FIELDS = { id: string, created_at: time, expires_at: time, max_uses: { type: ['integer', 'null'] }, uses: integer } as const;

export const REGISTRATION_TOKEN = object(REGISTRATION_TOKEN_FIELDS, 'An initial access token (never the token)');

export const NEW_REGISTRATION_TOKEN = object(
  { ...REGISTRATION_TOKEN_FIELDS, token: { type: 'string', description: 'The token: in this answer only' } },
  'A new initial access token',
);

export const LOCKOUT = object(
  {
    key: string,
    kind: { type: 'string', enum: ['sign-in', 'one-time-code', 'user-code'] },
    scope: { type: 'string', enum: ['user-address', 'address', 'user', 'browser', 'network'] },
    username: nullableString,
    ip: nullableString,
    failures: integer,
    limit: integer,
    locked: boolean,
    until: time,
  },
  "A guessing limit's open counter",
);

export const GRANT = object(
  {
    grant_id: string,
    client_id: string,
    client_name: string,
    scope: string,
    apis: { type: 'array', items: object({ identifier: string, name: string, scopes: { type: 'array', items: string } }) },
    grant_type: string,
    approved_at: time,
    last_used_at: nullableTime,
    active: boolean,
    device: { type: ['object', 'null'], properties: { ip: nullableString, user_agent: nullableString, requested_at: time } },
  },
  'What a person approved',
);

export const SESSION = object(
  { sid: string, created_at: time, auth_time: time, expires_at: time, amr: { type: 'array', items: string } },
  'A live browser session',
);
