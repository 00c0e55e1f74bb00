/**
 * What a SCIM token is (docs/scim.md): the one table the admin API's schemas, the console's
 * form and `tessera scim token add` derive from (fields/field.ts). A token is not changed once
 * made: to replace one, add another and remove it.
 */
import type { Field } from './field.ts';

export const SCIM_TOKEN_FIELDS = [
  { name: 'id', type: { kind: 'text', max: 200 }, description: 'Its id, given by the server', create: false, update: false, cli: null, form: null },
  {
    name: 'name',
    type: { kind: 'text', max: 100 },
    description: 'Who calls with it: the provisioning system (Entra ID, Okta); unique',
    create: true,
    update: false,
    required: true,
    cli: { option: 'name', value: 'NAME' },
    form: { control: 'text', label: 'console.scimToken.name', required: true },
  },
  { name: 'created_at', type: { kind: 'text', max: 40 }, description: 'When it was made', create: false, update: false, cli: null, form: null },
  {
    name: 'last_used_at',
    type: { kind: 'text', max: 40, nullable: true },
    description: 'When it was last accepted, to the minute (null: never)',
    create: false,
    update: false,
    cli: null,
    form: null,
  },
] as const satisfies readonly Field[];

/** What every answer about a SCIM token holds. */
export const SCIM_TOKEN_ALWAYS = ['id', 'name', 'created_at', 'last_used_at'] as const;
