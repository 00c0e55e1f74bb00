/** `tessera trust …`: arguments in, src/flows/manage/trusted-issuers.ts, text out (docs/agents.md). */
import type { Config } from '../config/index.ts';
import { cliOptions } from '../flows/manage/fields/field.ts';
import { TRUSTED_ISSUER_FIELDS } from '../flows/manage/fields/trusted-issuers.ts';
import { addTrustedIssuer, getTrustedIssuer, listTrustedIssuers, removeTrustedIssuer, trustedIssuerJson } from '../flows/manage/trusted-issuers.ts';
import type { TrustedIssuerRecord } from '../store/types.ts';
import { operatorDeps, parse, when, withStore, type Io } from './common.ts';
import { inputFromOptions } from './fields.ts';

const keysOf = (record: TrustedIssuerRecord) => record.jwksUri ?? `a JWK Set of ${((record.jwks as { keys?: unknown[] } | null)?.keys ?? []).length} key(s)`;

async function trustAdd(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { ...cliOptions(TRUSTED_ISSUER_FIELDS, 'create').options, json: { type: 'boolean' } });
  const input = await inputFromOptions(TRUSTED_ISSUER_FIELDS, 'create', values);
  const added = await withStore(config, (store) => addTrustedIssuer(operatorDeps(config, store, io), input));
  if (values.json) {
    io.stdout(`${JSON.stringify(trustedIssuerJson(added))}\n`);
    return;
  }
  io.stdout(
    `Trusting ID-JAGs from ${added.issuer}, signed by ${keysOf(added)}.\nClients redeem them with the jwt-bearer grant (tessera client add --grant jwt-bearer).\n`,
  );
}

async function trustList(config: Config, args: string[], io: Io): Promise<void> {
  const { values } = parse(args, { json: { type: 'boolean' } });
  const records = await withStore(config, (store) => listTrustedIssuers({ store }));
  if (values.json) {
    io.stdout(`${JSON.stringify(records.map(trustedIssuerJson))}\n`);
    return;
  }
  if (records.length === 0) io.stdout('No trusted issuers.\n');
  for (const record of records) io.stdout(`${record.issuer}  ${keysOf(record)}\n`);
}

async function trustShow(config: Config, args: string[], io: Io): Promise<void> {
  const { values, positionals } = parse(args, { json: { type: 'boolean' } }, 1);
  const record = await withStore(config, (store) => getTrustedIssuer({ store }, positionals[0]!));
  if (values.json) {
    io.stdout(`${JSON.stringify(trustedIssuerJson(record))}\n`);
    return;
  }
  io.stdout(
    `issuer:   ${record.issuer}\nkeys:     ${keysOf(record)}\nadded:    ${when(record.createdAt)}${record.addedByOwner ? '' : ' (through the admin API or the console)'}\n`,
  );
}

async function trustRemove(config: Config, args: string[], io: Io): Promise<void> {
  const { positionals } = parse(args, {}, 1);
  await withStore(config, (store) => removeTrustedIssuer(operatorDeps(config, store, io), positionals[0]!));
  io.stdout(`No longer trusting ${positionals[0]!}: its ID-JAGs are refused, and the tokens issued from them end.\n`);
}

export const TRUST_COMMANDS = {
  'trust add': trustAdd,
  'trust list': trustList,
  'trust show': trustShow,
  'trust remove': trustRemove,
};
