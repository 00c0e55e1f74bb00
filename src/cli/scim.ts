/** `tessera scim token …`: arguments in, src/flows/manage/scim-tokens.ts, text out (docs/scim.md). */
import type { Config } from '../config/index.ts';
import { cliOptions } from '../flows/manage/fields/field.ts';
import { SCIM_TOKEN_FIELDS } from '../flows/manage/fields/scim-tokens.ts';
import { addScimToken, listScimTokens, removeScimToken, scimTokenJson } from '../flows/manage/scim-tokens.ts';
import { operatorDeps, parse, UsageError, when, withStore, type Io } from './common.ts';
import { inputFromOptions } from './fields.ts';

async function tokenAdd(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { ...cliOptions(SCIM_TOKEN_FIELDS, 'create').options, json: { type: 'boolean' } });
  const input = await inputFromOptions(SCIM_TOKEN_FIELDS, 'create', values);
  const { record, token } = await withStore(config, (store) => addScimToken(operatorDeps(config, store, io), input));
  if (values.json) {
    io.stdout(`${JSON.stringify({ ...scimTokenJson(record), token })}\n`);
    return;
  }
  io.stdout(
    `SCIM token ${record.id} for ${record.name}:\n  ${token}\nGive the provisioning system:\n  Tenant URL: ${config.issuer}/scim/v2\n  Secret token: the token above (Authorization: Bearer <token>)\nIt is shown only now; Tessera keeps only its hash.\n`,
  );
}

async function tokenList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const tokens = await withStore(config, (store) => listScimTokens({ store }));
  if (values.json) {
    io.stdout(`${JSON.stringify(tokens.map(scimTokenJson))}\n`);
    return;
  }
  if (tokens.length === 0) io.stdout('No SCIM tokens.\n');
  for (const token of tokens) io.stdout(`${token.id}  ${token.name}  made ${when(token.createdAt)}  last used ${when(token.lastUsedAt)}\n`);
}

async function tokenRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  await withStore(config, (store) => removeScimToken(operatorDeps(config, store, io), positionals[0]!));
  io.stdout(`Removed SCIM token ${positionals[0]!}: the next request made with it is refused.\n`);
}

const TOKEN_COMMANDS: Readonly<Record<string, (config: Config, args: string[], io: Io) => Promise<void>>> = {
  add: tokenAdd,
  list: tokenList,
  remove: tokenRemove,
  revoke: tokenRemove,
};

/** `scim token add|list|remove`: the third word picks the command. */
async function scimToken(config: Config, args: string[], io: Io): Promise<void> {
  const [verb = '', ...rest] = args;
  const command = TOKEN_COMMANDS[verb];
  if (command === undefined)
    throw new UsageError(verb === '' || verb.startsWith('-') ? 'scim token needs a command: add, list, remove' : `unknown command "scim token ${verb}"`);
  await command(config, rest, io);
}

export const SCIM_COMMANDS = { 'scim token': scimToken };
