/**
 * What an API's registration is (RFC 8707 resources, and the scopes they define): the one
 * table the admin API's schemas, the console's API form and `tessera resource add` / `update`
 * derive from (fields/field.ts). The rules each value must follow are
 * flows/manage/resources.ts's.
 */
import {
  ACCESS_TOKEN_TTL_RANGE,
  API_SIGNING_ALGORITHMS,
  MAX_RESOURCE_IDENTIFIER,
  MAX_RESOURCE_NAME,
  MAX_RESOURCE_SCOPES,
  MAX_SCOPE_DESCRIPTION,
} from '../resources.ts';
import type { Field } from './field.ts';

export const RESOURCE_FIELDS = [
  {
    name: 'identifier',
    type: { kind: 'text', max: MAX_RESOURCE_IDENTIFIER },
    description: 'Its absolute URI (RFC 8707 §2): the audience of its access tokens; it cannot change',
    create: true,
    update: false,
    required: true,
    cli: { option: 'identifier', value: 'URI' },
    form: { control: 'text', label: 'console.api.identifier', required: true, hint: 'console.api.identifier.hint' },
  },
  {
    name: 'name',
    type: { kind: 'text', max: MAX_RESOURCE_NAME },
    description: 'What people see on the consent page',
    create: true,
    update: true,
    required: true,
    cli: { option: 'name', value: 'NAME' },
    form: { control: 'text', label: 'console.api.name', required: true },
  },
  {
    name: 'scopes',
    type: { kind: 'pairs', maxItems: MAX_RESOURCE_SCOPES, keyMax: 128, valueMax: MAX_SCOPE_DESCRIPTION, members: ['name', 'description'] },
    description:
      'Its scopes and what each lets an app do; names unique across the server. On update the list replaces the old one (a scope a client is registered with cannot be removed)',
    create: true,
    update: true,
    required: true,
    cli: { option: 'scope', value: 'NAME=DESCRIPTION', replaces: true },
    form: { control: 'area', label: 'console.api.scopes', hint: 'console.api.scopes.hint' },
  },
  {
    name: 'access_token_ttl',
    type: { kind: 'integer', min: ACCESS_TOKEN_TTL_RANGE.min, max: ACCESS_TOKEN_TTL_RANGE.max, nullable: true },
    description: "Its access tokens' lifetime in seconds; null: the server's default",
    create: true,
    update: true,
    cli: { option: 'access-token-ttl', value: 'SECONDS', clear: 'default-access-token-ttl' },
    form: { control: 'number', label: 'console.api.ttl', hint: 'console.api.ttl.hint' },
  },
  {
    name: 'signing_alg',
    type: { kind: 'choice', choices: API_SIGNING_ALGORITHMS },
    description: 'What its access tokens are signed with (RS256 unless given; RFC 9068 §2.1)',
    create: true,
    update: true,
    cli: { option: 'signing-alg', value: 'RS256|ES256' },
    form: { control: 'select', label: 'console.api.signingAlg' },
  },
  {
    // Asked for when registering; the answer has the secret itself, once (RESOURCE_SECRET).
    name: 'introspection_secret',
    type: { kind: 'flag' },
    description: 'Give it a secret its resource server introspects tokens with, in this answer only',
    create: true,
    update: false,
    writeOnly: true,
    cli: { option: 'introspection-secret' },
    form: { control: 'check', label: 'console.api.introspection' },
  },
  // Read only.
  { name: 'introspection', type: { kind: 'flag' }, description: 'Whether it has an introspection secret', create: false, update: false, cli: null, form: null },
] as const satisfies readonly Field[];

/** The fields every answer about an API has. */
export const RESOURCE_ALWAYS = ['identifier', 'name', 'scopes', 'access_token_ttl', 'signing_alg', 'introspection'] as const;
