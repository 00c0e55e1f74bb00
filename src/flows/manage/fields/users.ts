/**
 * What a person's account is (OIDC Core §5.1 claim names, and Tessera's own for what it
 * adds): the one table the admin API's user schemas, the console's profile form and
 * `tessera user add` / `update` derive from (fields/field.ts). The rules each value must
 * follow are flows/profile.ts's.
 */
import { OPERATOR_ROLES } from '../../../core/scopes.ts';
import { ADDRESS_MEMBERS } from '../../../store/users.ts';
import { ADDRESS_BOUNDS } from '../../profile.ts';
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
    name: 'username',
    type: { kind: 'text', max: 64 },
    description: 'What the person signs in with (preferred_username); 1-64 letters, digits or . _ @ + -',
    create: true,
    update: false,
    required: true,
    cli: { option: 'username', value: 'NAME' },
    form: null,
  },
  {
    name: 'name',
    type: { kind: 'text', max: NAME, nullable: true },
    description: 'Full name, as the person writes it',
    create: true,
    update: true,
    cli: { option: 'name', value: '"Full Name"' },
    form: { control: 'text', label: 'console.user.name' },
  },
  {
    name: 'given_name',
    type: { kind: 'text', max: NAME, nullable: true },
    description: 'Given name(s) or first name(s)',
    create: true,
    update: true,
    cli: { option: 'given-name', value: 'NAME' },
    form: { control: 'text', label: 'console.user.givenName' },
  },
  {
    name: 'family_name',
    type: { kind: 'text', max: NAME, nullable: true },
    description: 'Surname(s) or last name(s)',
    create: true,
    update: true,
    cli: { option: 'family-name', value: 'NAME' },
    form: { control: 'text', label: 'console.user.familyName' },
  },
  {
    name: 'middle_name',
    type: { kind: 'text', max: NAME, nullable: true },
    description: 'Middle name(s)',
    create: true,
    update: true,
    cli: { option: 'middle-name', value: 'NAME' },
    form: { control: 'text', label: 'console.user.middleName' },
  },
  {
    name: 'nickname',
    type: { kind: 'text', max: NAME, nullable: true },
    description: 'Casual name, which may or may not be the given name',
    create: true,
    update: true,
    cli: { option: 'nickname', value: 'NAME' },
    form: { control: 'text', label: 'console.user.nickname' },
  },
  {
    name: 'profile',
    type: { kind: 'text', max: URL, nullable: true },
    description: 'URL of their profile page (http or https)',
    create: true,
    update: true,
    cli: { option: 'profile', value: 'URL' },
    form: { control: 'text', label: 'console.user.profile' },
  },
  {
    name: 'picture',
    type: { kind: 'text', max: URL, nullable: true },
    description: 'URL of their profile picture (http or https)',
    create: true,
    update: true,
    cli: { option: 'picture', value: 'URL' },
    form: { control: 'text', label: 'console.user.picture' },
  },
  {
    name: 'website',
    type: { kind: 'text', max: URL, nullable: true },
    description: 'URL of their web page or blog (http or https)',
    create: true,
    update: true,
    cli: { option: 'website', value: 'URL' },
    form: { control: 'text', label: 'console.user.website' },
  },
  {
    name: 'email',
    type: { kind: 'text', max: 320, nullable: true },
    description: 'Their e-mail address',
    create: true,
    update: true,
    cli: { option: 'email', value: 'ADDRESS' },
    form: { control: 'text', label: 'console.user.email' },
  },
  {
    name: 'email_verified',
    type: { kind: 'flag' },
    description: 'The e-mail address is known to be theirs',
    create: true,
    update: true,
    cli: { option: 'email-verified' },
    form: { control: 'check', label: 'console.user.emailVerified' },
  },
  {
    name: 'gender',
    type: { kind: 'text', max: 64, nullable: true },
    description: 'female, male, or another word they choose',
    create: true,
    update: true,
    cli: { option: 'gender', value: 'GENDER' },
    form: { control: 'text', label: 'console.user.gender' },
  },
  {
    name: 'birthdate',
    type: { kind: 'text', max: 10, nullable: true },
    description: 'Birthday as YYYY-MM-DD (0000 for a year left out), or a year as YYYY',
    create: true,
    update: true,
    cli: { option: 'birthdate', value: 'YYYY-MM-DD' },
    form: { control: 'text', label: 'console.user.birthdate' },
  },
  {
    name: 'zoneinfo',
    type: { kind: 'text', max: 64, nullable: true },
    description: 'Their time zone (IANA), e.g. Europe/Paris',
    create: true,
    update: true,
    cli: { option: 'zoneinfo', value: 'ZONE' },
    form: { control: 'text', label: 'console.user.zoneinfo' },
  },
  {
    name: 'locale',
    type: { kind: 'text', max: 35, nullable: true },
    description: 'Their language (BCP 47), e.g. en-GB',
    create: true,
    update: true,
    cli: { option: 'locale', value: 'TAG' },
    form: { control: 'text', label: 'console.user.locale' },
  },
  {
    name: 'phone_number',
    type: { kind: 'text', max: 64, nullable: true },
    description: 'Phone number with its country code (E.164), e.g. +1 (425) 555-1212;ext=5678',
    create: true,
    update: true,
    cli: { option: 'phone-number', value: 'NUMBER' },
    form: { control: 'text', label: 'console.user.phoneNumber' },
  },
  {
    name: 'phone_number_verified',
    type: { kind: 'flag' },
    description: 'The phone number is known to be theirs',
    create: true,
    update: true,
    cli: { option: 'phone-number-verified' },
    form: { control: 'check', label: 'console.user.phoneNumberVerified' },
  },
  {
    name: 'address',
    type: { kind: 'members', members: ADDRESS_MEMBERS.map((member) => ({ name: member, ...ADDRESS_BOUNDS[member] })) },
    description:
      'OIDC Core §5.1.1: their postal address by its members (formatted, street_address, locality, region, postal_code, country), given whole; null clears it',
    create: true,
    update: true,
    cli: { option: 'address', value: 'TEXT' },
    form: { control: 'members', label: 'console.user.address' },
  },
  {
    // The command line gives them as --name-in TAG=NAME and its given and family kin (cli/users.ts).
    name: 'localized_names',
    type: { kind: 'object', max: 8192, schema: LOCALIZED_NAMES },
    description: 'OIDC Core §5.2: names in other languages and scripts by BCP 47 tag, laid over those kept; null or "" removes one',
    create: true,
    update: true,
    cli: null,
    form: { control: 'localized', label: 'console.user.localizedNames', hint: 'console.user.localizedNamesHint' },
  },
  {
    // The console gives a role with a form of its own, offering only the roles the operator may give.
    name: 'role',
    type: { kind: 'choice', choices: OPERATOR_ROLES, nullable: true },
    description: 'Their operator console role; null: none (a role needs a token holding every scope it allows)',
    create: false,
    update: true,
    cli: { option: 'role', value: 'admin|support|viewer|none', noClear: true },
    form: null,
  },
  // Read only: what the server says of an account.
  {
    name: 'sub',
    type: { kind: 'text', max: 64 },
    description: 'Their subject identifier: stable, never reassigned',
    create: false,
    update: false,
    cli: null,
    form: null,
  },
  { name: 'disabled', type: { kind: 'flag' }, description: 'Disabled: no sign-in, no working token', create: false, update: false, cli: null, form: null },
  { name: 'created_at', type: { kind: 'text', max: 40 }, description: 'When the account was made', create: false, update: false, cli: null, form: null },
  {
    name: 'updated_at',
    type: { kind: 'text', max: 40 },
    description: 'When the profile last changed; the version an update names (ETag)',
    create: false,
    update: false,
    cli: null,
    form: null,
  },
] as const satisfies readonly Field[];

/** Every answer about a user has every field: an unset one is null, never absent. */
export const USER_ALWAYS: readonly string[] = USER_FIELDS.map((field) => field.name);
