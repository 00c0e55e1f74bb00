/**
 * What an operator noun is, written once (issue 42): one row per field, from which every door
 * derives what it needs. The admin API's request and response schemas, the console's form
 * codec and the `tessera` command's options and usage all read the same table, so a field
 * added here is in every door, and a door that leaves one out fails the drift test
 * (test/operator-fields.test.ts).
 *
 * A row holds the protocol name (RFC 7591 §2 for clients, OIDC Core §5.1 for users), the
 * kind of value and its bounds, which operations take it, the command-line option and the
 * form control with its label's message key. The rules a value must follow beyond its kind
 * and bounds stay in the operation (flows/manage/*.ts): a table says what a field is, an
 * operation what it may be.
 */

/** The kinds of value a field holds, as the wire (JSON) has them. */
export type FieldKind =
  /** A string; `nullable`: null clears it. */
  | { readonly kind: 'text'; readonly max: number; readonly nullable?: true }
  /** One of `choices` (and, on the wire, any of `aliases`' keys, read as their value). */
  | { readonly kind: 'choice'; readonly choices: readonly string[]; readonly nullable?: true }
  /** Several of `choices`, each once. */
  | { readonly kind: 'choices'; readonly choices: readonly string[]; readonly aliases?: Readonly<Record<string, string>> }
  /** A list of strings (URIs, origins, networks): one a line in a form. */
  | { readonly kind: 'list'; readonly maxItems: number; readonly max: number }
  | { readonly kind: 'flag' }
  /** A JSON object (a JWK Set), its members as `schema` says (else any). */
  | { readonly kind: 'object'; readonly max: number; readonly schema?: JsonSchema }
  /** A JSON object of named text members, each optional (OIDC Core §5.1.1 `address`); null clears it. */
  | { readonly kind: 'members'; readonly members: readonly Member[] };

/** A text member of a `members` field: its name, bound, and whether it may hold several lines. */
export interface Member {
  readonly name: string;
  readonly max: number;
  readonly lines?: true;
}

/** The command-line option of a field: `--OPTION VALUE`, derived per kind (see `cliOptions`). */
export interface CliSpec {
  readonly option: string;
  /** What the value is called in the usage text (`URI`, `NAME`). */
  readonly value?: string;
  /** The value is read as JSON from the file the option names (`--jwks-file FILE`). */
  readonly file?: true;
  /** No `--no-OPTION`: a null value means nothing to the operation (keys go with the auth method). */
  readonly noClear?: true;
}

/** The console's form control of a field and its label (a console message key). */
export interface FormSpec {
  /** `members`: a fieldset of the members' inputs, each labelled by the message `LABEL.MEMBER`. */
  readonly control: 'text' | 'area' | 'select' | 'check' | 'checks' | 'members';
  readonly label: string;
  /** Checkboxes shown together under the form's options heading. */
  readonly group?: 'options';
  /** Required in the form (the browser says so before posting). */
  readonly required?: true;
  /** A select's choices in words: the message `PREFIX.CHOICE` for each (else its protocol name); a nullable one's empty choice is `LABEL.any`. */
  readonly choiceLabels?: string;
}

export interface Field {
  /** The protocol name: the admin API's JSON key, the form's input name, the operation's input. */
  readonly name: string;
  readonly type: FieldKind;
  /** One line: the OpenAPI document's description and the usage text's gloss. */
  readonly description: string;
  /** Which operations take it: registering (`create`) and changing (`update`). Neither: read only. */
  readonly create: boolean;
  readonly update: boolean;
  /** Must be given to create. */
  readonly required?: true;
  /** Null: not on the command line (`verified` is its own toggle there too: see its row). */
  readonly cli: CliSpec | null;
  /** Null: not in the console's form. */
  readonly form: FormSpec | null;
}

/** A table of fields whose names are unique. */
export type FieldTable = readonly Field[];

/** A JSON schema (draft 2020-12, as OpenAPI 3.1 and Fastify's Ajv read it). */
export type JsonSchema = Readonly<Record<string, unknown>>;

function valueSchema(field: Field): JsonSchema {
  const type = field.type;
  switch (type.kind) {
    case 'text':
      return { type: type.nullable ? ['string', 'null'] : 'string', ...(field.required ? { minLength: 1 } : {}), maxLength: type.max };
    case 'choice':
      return { type: type.nullable ? ['string', 'null'] : 'string', enum: [...type.choices, ...(type.nullable ? [null] : [])] };
    case 'choices':
      return { type: 'array', maxItems: type.choices.length, items: { type: 'string', enum: [...type.choices, ...Object.keys(type.aliases ?? {})] } };
    case 'list':
      return { type: 'array', maxItems: type.maxItems, items: { type: 'string', minLength: 1, maxLength: type.max } };
    case 'flag':
      return { type: 'boolean' };
    case 'object':
      // Its members are whatever the object holds (a JWK Set's keys), passed through whole.
      return type.schema ?? { type: 'object', additionalProperties: true };
    case 'members':
      return {
        type: ['object', 'null'],
        additionalProperties: false,
        properties: Object.fromEntries(type.members.map((member) => [member.name, { type: 'string', maxLength: member.max }])),
      };
  }
}

/** The form's input names of a field: its own, or one per member (`address.locality`). */
export function formNames(field: Field): string[] {
  return field.type.kind === 'members' ? field.type.members.map((member) => `${field.name}.${member.name}`) : [field.name];
}

/** Every form input name of a table's fields in the form. */
export const formKeys = (table: FieldTable): string[] => table.filter((field) => field.form !== null).flatMap(formNames);

/**
 * The admin API's request body for an operation: the fields it takes, unknown ones refused
 * (additionalProperties false), the required ones required when registering.
 */
export function requestSchema(table: FieldTable, operation: 'create' | 'update', extra: Readonly<Record<string, JsonSchema>> = {}): JsonSchema {
  const fields = table.filter((field) => field[operation]);
  return {
    type: 'object',
    additionalProperties: false,
    properties: { ...Object.fromEntries(fields.map((field) => [field.name, { ...valueSchema(field), description: field.description }])), ...extra },
    required: operation === 'create' ? fields.filter((field) => field.required).map((field) => field.name) : [],
  };
}

/**
 * The admin API's answer: every field of the table, the read-only ones marked so. `required`
 * names those every answer has; the others appear when set.
 */
export function responseSchema(table: FieldTable, required: readonly string[], extra: Readonly<Record<string, JsonSchema>> = {}): JsonSchema {
  return {
    type: 'object',
    properties: {
      ...Object.fromEntries(
        table.map((field) => {
          const schema = { ...valueSchema(field), description: field.description };
          // An answer's values were checked when written: only the shape is promised.
          delete (schema as Record<string, unknown>)['minLength'];
          return [field.name, field.create || field.update ? schema : { ...schema, readOnly: true }];
        }),
      ),
      ...extra,
    },
    required: [...required],
  };
}

// The console's form codec.

/** A field's value in a form: text (a list one a line), the checked choices, or a checkbox. */
export type FormValue = string | readonly string[] | boolean;
export type FormValues = Readonly<Record<string, FormValue>>;

/** The form's values of a registration as the admin API gives it (its JSON). */
export function formValues(table: FieldTable, wire: Readonly<Record<string, unknown>>): Record<string, FormValue> {
  const values: Record<string, FormValue> = {};
  for (const field of table) {
    if (field.form === null) continue;
    const value = wire[field.name];
    const type = field.type;
    switch (type.kind) {
      case 'list':
        values[field.name] = Array.isArray(value) ? value.join('\n') : '';
        break;
      case 'choices':
        values[field.name] = Array.isArray(value) ? value.map((choice: string) => type.aliases?.[choice] ?? choice) : [];
        break;
      case 'flag':
        values[field.name] = value === true;
        break;
      case 'object':
        values[field.name] = value === undefined || value === null ? '' : JSON.stringify(value);
        break;
      case 'members':
        for (const member of type.members) {
          const text = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[member.name] : undefined;
          values[`${field.name}.${member.name}`] = typeof text === 'string' ? text : '';
        }
        break;
      default:
        values[field.name] = typeof value === 'string' ? value : '';
    }
  }
  return values;
}

/** A form post's parameters: each one value or several. */
export type RawForm = Readonly<Record<string, string | readonly string[] | undefined>>;

const one = (form: RawForm, name: string): string => {
  const value = form[name];
  return typeof value === 'string' ? value : Array.isArray(value) ? (value[0] ?? '') : '';
};

/** A form as posted: each field's value, bounded as its kind is (a list's text by its items' bounds). */
export function postedValues(table: FieldTable, form: RawForm): Record<string, FormValue> {
  const values: Record<string, FormValue> = {};
  for (const field of table) {
    if (field.form === null) continue;
    const type = field.type;
    switch (type.kind) {
      case 'flag':
        values[field.name] = one(form, field.name) === 'on';
        break;
      case 'choices': {
        const raw = form[field.name];
        values[field.name] = (raw === undefined ? [] : typeof raw === 'string' ? [raw] : [...raw]).slice(0, type.choices.length);
        break;
      }
      case 'list':
        values[field.name] = one(form, field.name).slice(0, type.maxItems * (type.max + 2));
        break;
      case 'text':
      case 'object':
        values[field.name] = one(form, field.name).slice(0, type.max).trim();
        break;
      case 'choice':
        values[field.name] = one(form, field.name).slice(0, 100);
        break;
      case 'members':
        for (const member of type.members) {
          const key = `${field.name}.${member.name}`;
          values[key] = one(form, key).slice(0, member.max).replace(/\r\n?/g, '\n').trim();
        }
    }
  }
  return values;
}

/** Lines of a list's text, trimmed, blank ones dropped. */
export const lines = (text: string): string[] => text.split(/\r?\n/).map((line) => line.trim()).filter(Boolean);

/** Thrown for a form value that cannot be read as its field's kind (JSON that is not JSON). */
export class FormValueError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(message);
    this.name = 'FormValueError';
    this.field = field;
  }
}

/**
 * The operation's input of the form's values, for the fields `names` (those a new
 * registration gives, or those an edit changed): a list's lines, null for an empty nullable
 * value, a JSON object parsed.
 */
export function inputOf(table: FieldTable, values: FormValues, names: readonly string[]): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const field of table) {
    if (field.form === null || !formNames(field).some((name) => names.includes(name))) continue;
    const value = values[field.name];
    const type = field.type;
    switch (type.kind) {
      case 'members': {
        // The whole object: each member given, none at all clearing it.
        const given = type.members.map((member) => [member.name, String(values[`${field.name}.${member.name}`] ?? '')] as const).filter(([, text]) => text !== '');
        input[field.name] = given.length === 0 ? null : Object.fromEntries(given);
        break;
      }
      case 'list':
        input[field.name] = lines(String(value ?? ''));
        break;
      case 'object':
        if (value === '' || value === undefined) break;
        try {
          input[field.name] = JSON.parse(String(value)) as unknown;
        } catch {
          throw new FormValueError(field.name, 'not JSON');
        }
        break;
      case 'text':
      case 'choice':
        input[field.name] = value === '' && type.nullable ? null : value;
        break;
      default:
        input[field.name] = value;
    }
  }
  return input;
}

/** Whether two form values are the same (choices in any order). */
export function sameValue(a: FormValue | undefined, b: FormValue | undefined): boolean {
  return Array.isArray(a) && Array.isArray(b) ? [...a].sort().join(' ') === [...b].sort().join(' ') : a === b;
}

// The command line.

/** One option of node:util parseArgs. */
export interface CliOption {
  readonly type: 'string' | 'boolean';
  readonly multiple?: boolean;
}

/** How an option maps back to its field: set it, add to or remove from a list, or clear it. */
export interface CliBinding {
  readonly field: Field;
  readonly effect: 'set' | 'add' | 'remove' | 'clear' | 'member';
  /** The member a `member` option sets. */
  readonly member?: string;
}

/** The option of a member of a `members` field: `--address-postal-code`. */
const memberOption = (option: string, member: Member) => `${option}-${member.name.replaceAll('_', '-')}`;

/**
 * The options of a command over the table: `--OPTION` for each field the operation takes;
 * a list is repeated when registering and edited (`--add-`, `--remove-`) when changing; a flag
 * or a nullable value is cleared by `--no-OPTION` when changing.
 */
export function cliOptions(table: FieldTable, operation: 'create' | 'update'): { readonly options: Record<string, CliOption>; readonly bindings: Readonly<Record<string, CliBinding>> } {
  const options: Record<string, CliOption> = {};
  const bindings: Record<string, CliBinding> = {};
  for (const field of table) {
    if (field.cli === null || !field[operation]) continue;
    const { option } = field.cli;
    const type = field.type;
    if (type.kind === 'members') {
      for (const member of type.members) {
        options[memberOption(option, member)] = { type: 'string' };
        bindings[memberOption(option, member)] = { field, effect: 'member', member: member.name };
      }
      if (operation === 'update') {
        options[`no-${option}`] = { type: 'boolean' };
        bindings[`no-${option}`] = { field, effect: 'clear' };
      }
      continue;
    }
    if (type.kind === 'list' && operation === 'update') {
      options[`add-${option}`] = { type: 'string', multiple: true };
      bindings[`add-${option}`] = { field, effect: 'add' };
      options[`remove-${option}`] = { type: 'string', multiple: true };
      bindings[`remove-${option}`] = { field, effect: 'remove' };
      continue;
    }
    options[option] = { type: type.kind === 'flag' ? 'boolean' : 'string', ...(type.kind === 'list' || type.kind === 'choices' ? { multiple: true } : {}) };
    bindings[option] = { field, effect: 'set' };
    const clearable = !field.cli.noClear && (type.kind === 'flag' || ((type.kind === 'text' || type.kind === 'choice') && type.nullable === true));
    if (operation === 'update' && clearable) {
      options[`no-${option}`] = { type: 'boolean' };
      bindings[`no-${option}`] = { field, effect: 'clear' };
    }
  }
  return { options, bindings };
}

/** The usage text's options for a command over the table, in table order: `[--name NAME] [--redirect-uri URI …]`. */
export function cliUsage(table: FieldTable, operation: 'create' | 'update'): string {
  return cliUsageParts(table, operation).join(' ');
}

/** `cliUsage`'s parts, one an option, for a usage text to wrap. */
export function cliUsageParts(table: FieldTable, operation: 'create' | 'update'): string[] {
  const parts: string[] = [];
  for (const field of table) {
    if (field.cli === null || !field[operation]) continue;
    const { option, file } = field.cli;
    const value = file ? 'FILE' : (field.cli.value ?? 'VALUE');
    const type = field.type;
    const required = operation === 'create' && field.required === true;
    const wrap = (text: string) => (required ? text : `[${text}]`);
    if (type.kind === 'members') parts.push(...type.members.map((member) => `[--${memberOption(option, member)} ${member.lines ? 'LINES' : 'TEXT'}]`), ...(operation === 'update' ? [`[--no-${option}]`] : []));
    else if (type.kind === 'flag') parts.push(operation === 'update' ? `[--[no-]${option}]` : `[--${option}]`);
    else if (type.kind === 'list' && operation === 'update') parts.push(`[--add-${option} ${value} …]`, `[--remove-${option} ${value} …]`);
    else if (type.kind === 'list' || type.kind === 'choices') parts.push(`[--${option} ${value} …]`);
    else if (operation === 'update' && (type.kind === 'text' || type.kind === 'choice') && type.nullable && !field.cli.noClear) parts.push(`[--${option} ${value} | --no-${option}]`);
    else parts.push(wrap(`--${option} ${value}`));
  }
  return parts;
}
