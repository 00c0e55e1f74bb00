/** `tessera org …`: arguments in, src/flows/manage/organizations.ts, text out (docs/organizations.md). */
import type { Config } from '../config/index.ts';
import { cliOptions } from '../flows/manage/fields/field.ts';
import { ORGANIZATION_FIELDS, ORGANIZATION_MEMBER_FIELDS } from '../flows/manage/fields/organizations.ts';
import {
  addOrganization,
  getOrganization,
  listOrganizationMembers,
  listOrganizations,
  organizationJson,
  removeOrganization,
  removeOrganizationMember,
  setOrganizationMember,
  updateOrganization,
  type OrganizationInput,
} from '../flows/manage/organizations.ts';
import { operatorDeps, parse, UsageError, withStore, type Io } from './common.ts';
import { inputFromOptions, type OptionValues } from './fields.ts';

const ADD_OPTIONS = { ...cliOptions(ORGANIZATION_FIELDS, 'create').options, json: { type: 'boolean' } } as const;
const UPDATE_OPTIONS = { ...cliOptions(ORGANIZATION_FIELDS, 'update').options, json: { type: 'boolean' } } as const;
const MEMBER_OPTIONS = { ...cliOptions(ORGANIZATION_MEMBER_FIELDS, 'create').options, json: { type: 'boolean' } } as const;

/** The organization as an operator reads it: one `key: value` line each. */
function describe(json: Record<string, unknown>): string {
  const lines = Object.entries(json)
    .filter(([key]) => key !== 'id' && key !== 'name')
    .map(([key, value]) => `  ${key.replaceAll('_', ' ')}: ${String(value ?? '(none)')}\n`);
  return `${String(json['id'])}  ${String(json['name'])}\n${lines.join('')}`;
}

async function orgAdd(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, ADD_OPTIONS);
  const input = (await inputFromOptions(ORGANIZATION_FIELDS, 'create', values as OptionValues)) as OrganizationInput;
  const organization = await withStore(config, (store) => addOrganization(operatorDeps(config, store, io), input));
  io.stdout(values.json ? `${JSON.stringify(organizationJson(organization))}\n` : `Added organization ${organization.name} (${organization.id}).\n`);
}

async function orgList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const organizations = await withStore(config, (store) => listOrganizations({ store }));
  if (values.json) {
    io.stdout(`${JSON.stringify(organizations.map(organizationJson))}\n`);
    return;
  }
  if (organizations.length === 0) io.stdout('No organizations.\n');
  for (const organization of organizations)
    io.stdout(
      `${organization.id}  ${organization.name}${organization.domain === null ? '' : `  ${organization.domain}${organization.domainVerified ? ' (verified)' : ''}`}\n`,
    );
}

async function orgShow(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, 1);
  const json = organizationJson(await withStore(config, (store) => getOrganization({ store }, positionals[0]!)));
  io.stdout(values.json ? `${JSON.stringify(json)}\n` : describe(json));
}

async function orgUpdate(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, UPDATE_OPTIONS, 1);
  const input = (await inputFromOptions(ORGANIZATION_FIELDS, 'update', values as OptionValues)) as OrganizationInput;
  const organization = await withStore(config, (store) => updateOrganization(operatorDeps(config, store, io), positionals[0]!, input));
  io.stdout(values.json ? `${JSON.stringify(organizationJson(organization))}\n` : `Updated organization ${organization.name}.\n`);
}

async function orgRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  await withStore(config, (store) => removeOrganization(operatorDeps(config, store, io), positionals[0]!));
  io.stdout(`Removed organization ${positionals[0]!} and its memberships.\n`);
}

async function memberAdd(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, MEMBER_OPTIONS, 2);
  const input = await inputFromOptions(ORGANIZATION_MEMBER_FIELDS, 'create', values as OptionValues);
  const member = await withStore(config, (store) =>
    setOrganizationMember(operatorDeps(config, store, io), positionals[0]!, { ...input, username: positionals[1]! }),
  );
  io.stdout(values.json ? `${JSON.stringify(member)}\n` : `${member.username} is a member of ${positionals[0]!}, as ${member.role}.\n`);
}

async function memberList(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, 1);
  const members = await withStore(config, (store) => listOrganizationMembers({ store }, positionals[0]!));
  if (values.json) {
    io.stdout(`${JSON.stringify(members)}\n`);
    return;
  }
  if (members.length === 0) io.stdout('No members.\n');
  for (const member of members) io.stdout(`${member.username}  ${member.role}\n`);
}

async function memberRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 2);
  await withStore(config, (store) => removeOrganizationMember(operatorDeps(config, store, io), positionals[0]!, positionals[1]!));
  io.stdout(`${positionals[1]!} is no longer a member of ${positionals[0]!}.\n`);
}

const MEMBER_COMMANDS: Readonly<Record<string, (config: Config, args: string[], io: Io) => Promise<void>>> = {
  add: memberAdd,
  list: memberList,
  remove: memberRemove,
};

/** `org member COMMAND …`: the memberships' commands, one word deeper than the others. */
async function orgMember(config: Config, args: string[], io: Io): Promise<void> {
  const [sub = '', ...rest] = args;
  const command = MEMBER_COMMANDS[sub];
  if (command === undefined)
    throw new UsageError(
      sub === '' || sub.startsWith('-') ? `org member needs a command: ${Object.keys(MEMBER_COMMANDS).join(', ')}` : `unknown command "org member ${sub}"`,
    );
  await command(config, rest, io);
}

export const ORGANIZATION_COMMANDS = {
  'org add': orgAdd,
  'org list': orgList,
  'org show': orgShow,
  'org update': orgUpdate,
  'org remove': orgRemove,
  'org member': orgMember,
};
