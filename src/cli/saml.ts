/** `tessera saml sp …`: arguments in, src/flows/manage/saml-service-providers.ts, text out (docs/saml.md). */
import type { Config } from '../config/index.ts';
import { cliOptions } from '../flows/manage/fields/field.ts';
import { SAML_SP_FIELDS } from '../flows/manage/fields/saml-service-providers.ts';
import { addSamlSp, getSamlSp, listSamlSps, removeSamlSp, samlSpJson, updateSamlSp, type SamlSpInput } from '../flows/manage/saml-service-providers.ts';
import { samlEndpoints } from '../core/endpoints.ts';
import { operatorDeps, parse, UsageError, withStore, type Io } from './common.ts';
import { inputFromOptions, type OptionValues } from './fields.ts';

const ADD_OPTIONS = { ...cliOptions(SAML_SP_FIELDS, 'create').options, json: { type: 'boolean' } } as const;
const UPDATE_OPTIONS = { ...cliOptions(SAML_SP_FIELDS, 'update').options, json: { type: 'boolean' } } as const;

/** The SP as an operator reads it: one `key: value` line each, lists joined. */
function describe(json: Record<string, unknown>): string {
  const lines = Object.entries(json)
    .filter(([key]) => key !== 'id' && key !== 'entity_id')
    .map(([key, value]) => {
      const shown = Array.isArray(value)
        ? value.length
          ? value.join(' ')
          : '(none)'
        : value !== null && typeof value === 'object'
          ? Object.entries(value)
              .map(([name, claim]) => `${name}=${String(claim)}`)
              .join(' ') || '(none)'
          : typeof value === 'string' && value.includes('\n')
            ? '(given)'
            : String(value ?? '(none)');
      return `  ${key.replaceAll('_', ' ')}: ${shown}\n`;
    });
  return `${String(json['id'])}  ${String(json['entity_id'])}\n${lines.join('')}`;
}

async function spAdd(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, ADD_OPTIONS);
  const input = (await inputFromOptions(SAML_SP_FIELDS, 'create', values as OptionValues)) as SamlSpInput;
  const sp = await withStore(config, (store) => addSamlSp(operatorDeps(config, store, io), input));
  if (values.json) {
    io.stdout(`${JSON.stringify(samlSpJson(sp))}\n`);
    return;
  }
  const idp = samlEndpoints(config.issuer);
  io.stdout(`Added SAML service provider ${sp.entityId} (${sp.id}).\nGive it the IdP's metadata: ${idp.metadata}\n`);
}

async function spList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const sps = await withStore(config, (store) => listSamlSps({ store }));
  if (values.json) {
    io.stdout(`${JSON.stringify(sps.map(samlSpJson))}\n`);
    return;
  }
  if (sps.length === 0) io.stdout('No SAML service providers.\n');
  for (const sp of sps) io.stdout(`${sp.id}  ${sp.entityId}${sp.name === null ? '' : `  ${sp.name}`}\n`);
}

async function spShow(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, 1);
  const json = samlSpJson(await withStore(config, (store) => getSamlSp({ store }, positionals[0]!)));
  io.stdout(values.json ? `${JSON.stringify(json)}\n` : describe(json));
}

async function spUpdate(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, UPDATE_OPTIONS, 1);
  const input = (await inputFromOptions(SAML_SP_FIELDS, 'update', values as OptionValues)) as SamlSpInput;
  const sp = await withStore(config, (store) => updateSamlSp(operatorDeps(config, store, io), positionals[0]!, input));
  io.stdout(values.json ? `${JSON.stringify(samlSpJson(sp))}\n` : `Updated SAML service provider ${sp.entityId}.\n`);
}

async function spRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  await withStore(config, (store) => removeSamlSp(operatorDeps(config, store, io), positionals[0]!));
  io.stdout(`Removed SAML service provider ${positionals[0]!}: it is sent no more assertions.\n`);
}

const SP_COMMANDS: Readonly<Record<string, (config: Config, args: string[], io: Io) => Promise<void>>> = {
  add: spAdd,
  list: spList,
  show: spShow,
  update: spUpdate,
  remove: spRemove,
};

/** `saml sp COMMAND …`: the service providers' commands, one word deeper than the others. */
async function samlSp(config: Config, args: string[], io: Io): Promise<void> {
  const [sub = '', ...rest] = args;
  const command = SP_COMMANDS[sub];
  if (command === undefined)
    throw new UsageError(
      sub === '' || sub.startsWith('-') ? `saml sp needs a command: ${Object.keys(SP_COMMANDS).join(', ')}` : `unknown command "saml sp ${sub}"`,
    );
  await command(config, rest, io);
}

export const SAML_COMMANDS = {
  'saml sp': samlSp,
};
