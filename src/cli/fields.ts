/**
 * A noun's command-line options from its field table (flows/manage/fields/): parsed values
 * in, the operation's input (protocol names) out. `--OPTION` sets, `--add-OPTION` and
 * `--remove-OPTION` edit a list, `--no-OPTION` turns a flag off or clears a value, and an
 * option that names a file (`--jwks-file`) gives the JSON in it.
 */
import { readFile } from 'node:fs/promises';
import { cliOptions, pairsValue, type FieldTable } from '../flows/manage/fields/field.ts';
import { UsageError } from './common.ts';

/** What node:util parseArgs gives for the table's options. */
export type OptionValues = Readonly<Record<string, string | boolean | readonly string[] | undefined>>;

/** The JSON in the file an option names. */
async function jsonFile(option: string, file: string): Promise<unknown> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as unknown;
  } catch (error) {
    throw new UsageError(`--${option} ${file}: ${error instanceof SyntaxError ? 'not JSON' : 'cannot be read'}`);
  }
}

/** The text of the file an option names. */
async function textFile(option: string, file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    throw new UsageError(`--${option} ${file}: cannot be read`);
  }
}

/** A whole number as typed; anything else is refused here, by its option. */
function wholeNumberOption(option: string, value: string): number {
  if (!/^\d{1,15}$/.test(value.trim())) throw new UsageError(`--${option} ${value}: a whole number`);
  return Number(value.trim());
}

/** What else a noun's options may need: its kind (the options that apply to it) and standard input, for a secret. */
export interface OptionContext {
  readonly kind?: string;
  readonly stdin?: () => Promise<string>;
}

/**
 * The operation's input of the options given. `current` is the registration as it is (its
 * admin API JSON), for the lists an update edits; `normalize` tells a list item as stored
 * from one as typed (a web origin with a trailing slash). A secret comes from standard input,
 * one at a time, its line ending dropped.
 */
export async function inputFromOptions(
  table: FieldTable,
  operation: 'create' | 'update',
  values: OptionValues,
  current: Readonly<Record<string, unknown>> = {},
  normalize: Readonly<Record<string, (item: string) => string>> = {},
  context: OptionContext = {},
): Promise<Record<string, unknown>> {
  const { bindings } = cliOptions(table, operation, context.kind);
  const secrets = Object.entries(bindings)
    .filter(([option, binding]) => binding.field.cli!.stdin && values[option] === true)
    .map(([option]) => `--${option}`);
  if (secrets.length > 1) throw new UsageError(`${secrets.join(' and ')}: only one secret can come from standard input at a time`);
  const input: Record<string, unknown> = {};
  const edits = new Map<string, { add: string[]; remove: string[] }>();
  const members = new Map<string, Record<string, string>>();
  for (const [option, binding] of Object.entries(bindings)) {
    const value = values[option];
    if (value === undefined || value === false) continue;
    const { field, effect } = binding;
    const name = field.name;
    if (effect === 'member') {
      // A member given changes that member of the object as it is; "" removes it.
      const object = members.get(name) ?? { ...(typeof current[name] === 'object' && current[name] !== null ? (current[name] as Record<string, string>) : {}) };
      if (value === '') delete object[binding.member!];
      else object[binding.member!] = value as string;
      members.set(name, object);
    } else if (effect === 'clear') {
      if (values[field.cli!.option] !== undefined && values[field.cli!.option] !== false)
        throw new UsageError(`--${field.cli!.option} and --${option}: give one`);
      const member = Object.entries(bindings).find(([other, b]) => b.field === field && b.effect === 'member' && values[other] !== undefined);
      if (member !== undefined) throw new UsageError(`--${member[0]} and --${option}: give one`);
      input[name] = field.type.kind === 'flag' ? false : null;
    } else if (effect === 'add' || effect === 'remove') {
      const edit = edits.get(name) ?? { add: [], remove: [] };
      edit[effect].push(...(value as readonly string[]).map(normalize[name] ?? ((item: string) => item)));
      edits.set(name, edit);
    } else if (field.cli!.file) {
      input[name] = field.cli!.file === 'text' ? await textFile(option, value as string) : await jsonFile(option, value as string);
    } else if (field.cli!.stdin) {
      if (context.stdin === undefined) throw new UsageError(`--${option}: standard input cannot be read here`);
      input[name] = (await context.stdin()).replace(/\r?\n$/, '');
    } else if (field.type.kind === 'integer') {
      input[name] = wholeNumberOption(option, value as string);
    } else if (field.type.kind === 'pairs') {
      input[name] = pairsValue(field.type, value as readonly string[]);
    } else {
      input[name] = value;
    }
  }
  for (const [name, object] of members) input[name] = Object.keys(object).length === 0 ? null : object;
  for (const [name, edit] of edits) {
    const registered = Array.isArray(current[name]) ? (current[name] as string[]) : [];
    const option = table.find((field) => field.name === name)!.cli!.option;
    const missing = edit.remove.filter((item) => !registered.includes(item));
    if (missing.length > 0) throw new UsageError(`--remove-${option} ${missing.join(', ')}: not registered for this client`);
    input[name] = [...registered.filter((item) => !edit.remove.includes(item)), ...edit.add];
  }
  return input;
}
