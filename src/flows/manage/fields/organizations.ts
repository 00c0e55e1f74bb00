/**
 * What an organization is (docs/organizations.md): the one table the admin API's schemas, the
 * console's form and `tessera org add|update` derive from (fields/field.ts), and the table of
 * a membership (`tessera org member add`, the admin API's members, the console's member form).
 * The rules each value must follow are flows/manage/organizations.ts's.
 */
import { ORGANIZATION_ROLES } from '../../../store/organizations.ts';
import type { Field } from './field.ts';

export const ORGANIZATION_FIELDS = [
  {
    name: 'id',
    type: { kind: 'text', max: 200 },
    description: 'Its id, given by the server: the org_id claim',
    create: false,
    update: false,
    cli: null,
    form: null,
  },
  {
    name: 'name',
    type: { kind: 'text', max: 200 },
    description: 'Its name, unique without regard to case: the org_name claim, and what the consent page shows',
    create: true,
    update: true,
    required: true,
    cli: { option: 'name', value: 'NAME' },
    form: { control: 'text', label: 'console.org.name', required: true },
  },
  {
    name: 'domain',
    type: { kind: 'text', max: 253, nullable: true },
    description: "Its e-mail domain (example.com); verified, it sends its people's sign-in to its provider",
    create: true,
    update: true,
    cli: { option: 'domain', value: 'DOMAIN' },
    form: { control: 'text', label: 'console.org.domain', hint: 'console.org.domain.hint' },
  },
  {
    name: 'domain_verified',
    type: { kind: 'flag' },
    description: 'The operator vouches that the domain is the organization’s: only a verified domain routes sign-in, and to one organization',
    create: true,
    update: true,
    cli: { option: 'verified' },
    form: { control: 'check', label: 'console.org.verified', group: 'options' },
  },
  {
    name: 'provider',
    type: { kind: 'text', max: 200, nullable: true },
    description: 'The upstream identity provider (its id) that people of the verified domain sign in through',
    create: true,
    update: true,
    cli: { option: 'provider', value: 'ID' },
    form: { control: 'text', label: 'console.org.provider', hint: 'console.org.provider.hint' },
  },
  {
    name: 'require_passkey',
    type: { kind: 'flag' },
    description: 'Its members approve apps only after signing in with a passkey',
    create: true,
    update: true,
    cli: { option: 'require-passkey' },
    form: { control: 'check', label: 'console.org.requirePasskey', group: 'options' },
  },
  {
    name: 'require_second_factor',
    type: { kind: 'flag' },
    description: 'Its members approve apps only after a sign-in with a second factor (a passkey, or a password and a one-time code)',
    create: true,
    update: true,
    cli: { option: 'require-second-factor' },
    form: { control: 'check', label: 'console.org.requireSecondFactor', group: 'options' },
  },
  { name: 'created_at', type: { kind: 'text', max: 40 }, description: 'When it was added', create: false, update: false, cli: null, form: null },
  { name: 'updated_at', type: { kind: 'text', max: 40 }, description: 'When it last changed', create: false, update: false, cli: null, form: null },
] as const satisfies readonly Field[];

/** What every answer about an organization holds. */
export const ORGANIZATION_ALWAYS = [
  'id',
  'name',
  'domain',
  'domain_verified',
  'provider',
  'require_passkey',
  'require_second_factor',
  'created_at',
  'updated_at',
] as const;

/** A membership: who, and with which role. */
export const ORGANIZATION_MEMBER_FIELDS = [
  {
    name: 'username',
    type: { kind: 'text', max: 64 },
    description: 'The person, by username',
    create: true,
    update: false,
    required: true,
    cli: null,
    form: { control: 'text', label: 'console.org.member.username', required: true },
  },
  {
    name: 'role',
    type: { kind: 'choice', choices: ORGANIZATION_ROLES },
    description: 'What they may do there: owner and admin manage it, member belongs (member unless given)',
    create: true,
    update: true,
    cli: { option: 'role', value: 'ROLE' },
    form: { control: 'select', label: 'console.org.member.role', choiceLabels: 'console.org.role' },
  },
  { name: 'user_id', type: { kind: 'text', max: 200 }, description: 'The person’s id (the sub claim)', create: false, update: false, cli: null, form: null },
  { name: 'created_at', type: { kind: 'text', max: 40 }, description: 'When they joined', create: false, update: false, cli: null, form: null },
] as const satisfies readonly Field[];

export const ORGANIZATION_MEMBER_ALWAYS = ['username', 'role', 'user_id', 'created_at'] as const;
