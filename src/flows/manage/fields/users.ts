/**
 * What a person's account is (OIDC Core §5.1 claim names, and Tessera's own for what it
 * adds): the one table the admin API's user schemas, the console's profile form and
 * `tessera user add` / `update` derive from (fields/field.ts). The rules each value must
 * follow are flows/profile.ts's.
 */
import { OPERATOR_ROLES } from '../../../core/scopes.ts';
import type { Field } from './field.ts';

const NAME = 200;
const URL = 2048;

/** OIDC Core §5.2: names in other languages and scripts, by BCP 47 tag; null or "" removes one. */
const LOCALIZED_NAMES = {
  type: 'object',
  maxProperties: 20,
  propertyNames: { type: 'string', maxLength: 35 },
  additionalProperties: {
    type: ['object', 'null'],
    additionalProperties: false,
    properties: {
      name: { type: ['string', 'null'], maxLength: NAME },
      given_name: { type: ['string', 'null'], maxLength: NAME },
      family_name: { type: ['string', 'null'], maxLength: NAME },
    },
  },
} as const;

export const USER_FIELDS = [
  {
    name: 'username', type: { kind: 'text', max: 64 }, description: 'What the person signs in with (preferred_username); 1-64 letters, digits or . _ @ + -',
    create: true, update: false, required: true, cli: { option: 'username', value: 'NAME' }, form: null,
  },
  {
    name: 'name', type: { kind: 'text', max: NAME, nullable: true }, description: 'Full name, as the person writes it',
    create: true, update: true, cli: { option: 'name', value: '"Full Name"' }, form: { control: 'text', label: 'console.user.name' },
  },
  {
    name: 'given_name', type: { kind: 'text', max: NAME, nullable: true }, description: 'Given name(s) or first name(s)',
    create: true, update: true, cli: { option: 'given-name', value: 'NAME' }, form: { control: 'text', label: 'console.user.givenName' },
  },
  {
    name: 'family_name', type: { kind: 'text', max: NAME, nullable: true }, description: 'Surname(s) or last name(s)',
    create: true, update: true, cli: { option: 'family-name', value: 'NAME' }, form: { control: 'text', label: 'console.user.familyName' },
  },
  {
    name: 'picture', type: { kind: 'text', max: URL, nullable: true }, description: 'URL of their profile picture (http or https)',
    create: true, update: true, cli: { option: 'picture', value: 'URL' }, form: { control: 'text', label: 'console.user.picture' },
  },
  {
    name: 'email', type: { kind: 'text', max: 320, nullable: true }, description: 'Their e-mail address',
    create: true, update: true, cli: { option: 'email', value: 'ADDRESS' }, form: { control: 'text', label: 'console.user.email' },
  },
  {
    name: 'email_verified', type: { kind: 'flag' }, description: 'The e-mail address is known to be theirs',
    create: true, update: true, cli: { option: 'email-verified' }, form: { control: 'check', label: 'console.user.emailVerified' },
  },
  {
    name: 'zoneinfo', type: { kind: 'text', max: 64, nullable: true }, description: 'Their time zone (IANA), e.g. Europe/Paris',
    create: true, update: true, cli: { option: 'zoneinfo', value: 'ZONE' }, form: { control: 'text', label: 'console.user.zoneinfo' },
  },
  {
    name: 'locale', type: { kind: 'text', max: 35, nullable: true }, description: 'Their language (BCP 47), e.g. en-GB',
    create: true, update: true, cli: { option: 'locale', value: 'TAG' }, form: { control: 'text', label: 'console.user.locale' },
  },
  {
    // The command line gives them as --name-in TAG=NAME and its given and family kin (cli/users.ts).
    name: 'localized_names', type: { kind: 'object', max: 8192, schema: LOCALIZED_NAMES }, description: 'OIDC Core §5.2: names in other languages and scripts by BCP 47 tag, laid over those kept; null or "" removes one',
    create: true, update: true, cli: null, form: null,
  },
  {
    // The console gives a role with a form of its own, offering only the roles the operator may give.
    name: 'role', type: { kind: 'choice', choices: OPERATOR_ROLES, nullable: true }, description: 'Their operator console role; null: none (a role needs a token holding every scope it allows)',
    create: false, update: true, cli: { option: 'role', value: 'admin|support|viewer|none', noClear: true }, form: null,
  },
  // Read only: what the server says of an account.
  { name: 'sub', type: { kind: 'text', max: 64 }, description: 'Their subject identifier: stable, never reassigned', create: false, update: false, cli: null, form: null },
  { name: 'disabled', type: { kind: 'flag' }, description: 'Disabled: no sign-in, no working token', create: false, update: false, cli: null, form: null },
  { name: 'created_at', type: { kind: 'text', max: 40 }, description: 'When the account was made', create: false, update: false, cli: null, form: null },
  { name: 'updated_at', type: { kind: 'text', max: 40 }, description: 'When the profile last changed; the version an update names (ETag)', create: false, update: false, cli: null, form: null },
] as const satisfies readonly Field[];

/** Every answer about a user has every field: an unset one is null, never absent. */
export const USER_ALWAYS: readonly string[] = USER_FIELDS.map((field) => field.name);
