/**
 * What an operator noun is, written once: one row per field, from which every door
 * derives what it needs. The admin API's request and response schemas, the console's form
 * codec and the `tessera` command's options and usage all read the same table, so a field
 * added here is in every door, and a door that leaves one out fails the drift test
 * (test/operator-fields.test.ts).
 *
 * A row holds the protocol name (RFC 7591 §2 for clients, OIDC Core §5.1 for users), the
 * kind of value and its bounds, which operations take it, the command-line option and the
 * form control with its label's message key. The rules a value must follow beyond its kind
 * and bounds stay in the operation (flows/manage/*.ts): a table says what a field is, an
 * operation what it may be. The operations hold the lists' and pairs' bounds the rows state
 * (`checkBounds`), which the admin API's schema states too, so no door passes them.
 */

import { field, invalid } from '../errors.ts';

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
  | { readonly kind: 'members'; readonly members: readonly Member[] }
  /** A whole number from `min` to `max`; `nullable`: null is the server's default. */
  | { readonly kind: 'integer'; readonly min: number; readonly max: number; readonly nullable?: true }
  /**
   * Pairs typed `KEY=VALUE` (on the command line and one a line in a form): on the wire an
   * array of objects whose two members `members` names (an API's scopes: name and description),
   * or without `members` an object from key to value (a provider's claim mapping).
   */
  | { readonly kind: 'pairs'; readonly maxItems: number; readonly keyMax: number; readonly valueMax: number; readonly members?: readonly [string, string] };

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
  /**
   * The value is read from the file the option names: as JSON (`--jwks-file FILE`), or
   * (`text`) as the file's text (a SAML metadata document, a PEM certificate).
   */
  readonly file?: true | 'text';
  /** No `--no-OPTION`: a null value means nothing to the operation (keys go with the auth method). */
  readonly noClear?: true;
  /** The option that clears the value on update, when not `no-OPTION` (`default-access-token-ttl`). */
  readonly clear?: string;
  /** A list given on update replaces the old one (`--scope …`), instead of `--add-`/`--remove-`. */
  readonly replaces?: true;
  /** A secret: the option is a flag (`--client-secret-stdin`) and the value is read from standard input, never an argument. */
  readonly stdin?: true;
}

/** The console's form control of a field and its label (a console message key). */
export interface FormSpec {
  /**
   * `secret`: a password input, never filled in (empty: unchanged); `number`: a whole number;
   * `members`: a fieldset of the members' inputs, each labelled by the message `LABEL.MEMBER`.
   * `localized`: an object of claims by language tag (OIDC Core §5.2), typed a line each as the
   * claim is named, `CLAIM#TAG=VALUE` (`name#ja-Kana-JP=ヤマダ タロウ`); what the lines leave out
   * of the values as read is removed, so the text is the whole of it.
   */
  readonly control: 'text' | 'area' | 'select' | 'check' | 'checks' | 'secret' | 'number' | 'members' | 'localized';
  readonly label: string;
  /** Checkboxes shown together under the form's options heading. */
  readonly group?: 'options';
  /** Required in the form (the browser says so before posting). */
  readonly required?: true;
  /** A select's choices in words: the message `PREFIX.CHOICE` for each (else its protocol name); a nullable one's empty choice is `LABEL.any`. */
  readonly choiceLabels?: string;
  /** A console message key: a line under the control saying what to type. */
  readonly hint?: string;
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
  /**
   * The kinds of the noun it applies to (a provider's `oidc`, `github`, `ldap`); absent: every
   * kind. The operation refuses it for another kind; the command's usage and the console's form
   * show it for these.
   */
  readonly kinds?: readonly string[];
  /** Must be given to create one of these kinds (the operation says so: one schema serves every kind). */
  readonly requiredKinds?: readonly string[];
  /** Given, never answered (a secret): not in the admin API's answers, `writeOnly` in its requests. */
  readonly writeOnly?: true;
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
    case 'integer':
      return { type: type.nullable ? ['integer', 'null'] : 'integer', minimum: type.min, maximum: type.max };
    case 'pairs': {
      const text = (max: number) => ({ type: 'string', minLength: 1, maxLength: max });
      if (type.members === undefined) return { type: 'object', maxProperties: type.maxItems, additionalProperties: text(type.valueMax) };
      const [key, value] = type.members;
      return {
        type: 'array',
        ...(field.required ? { minItems: 1 } : {}),
        maxItems: type.maxItems,
        items: { type: 'object', additionalProperties: false, properties: { [key]: text(type.keyMax), [value]: text(type.valueMax) }, required: [key, value] },
      };
    }
  }
}

/** The form's input names of a field: its own, or one per member (`address.locality`). */
export function formNames(field: Field): string[] {
  return field.type.kind === 'members' ? field.type.members.map((member) => `${field.name}.${member.name}`) : [field.name];
}

/** Every form input name of a table's fields in the form. */
export const formKeys = (table: FieldTable): string[] => table.filter((field) => field.form !== null).flatMap(formNames);

/** Whether a field applies to a noun of `kind` (any field, when no kind is named). */
export const appliesTo = (field: Field, kind?: string): boolean => kind === undefined || field.kinds === undefined || field.kinds.includes(kind);

/** A field's line in the OpenAPI document: its description, and the kinds it applies to. */
const describeField = (field: Field): string => (field.kinds === undefined ? field.description : `${field.description} (${field.kinds.join(', ')} only)`);

/**
 * The admin API's request body for an operation: the fields it takes, unknown ones refused
 * (additionalProperties false), the required ones required when registering.
 */
export function requestSchema(table: FieldTable, operation: 'create' | 'update', extra: Readonly<Record<string, JsonSchema>> = {}): JsonSchema {
  const fields = table.filter((field) => field[operation]);
  return {
    type: 'object',
    additionalProperties: false,
    properties: {
      ...Object.fromEntries(
        fields.map((field) => [field.name, { ...valueSchema(field), description: describeField(field), ...(field.writeOnly ? { writeOnly: true } : {}) }]),
      ),
      ...extra,
    },
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
        table
          .filter((field) => !field.writeOnly)
          .map((field) => {
            const schema = { ...valueSchema(field), description: describeField(field) };
            // An answer's values were checked when written: only the shape is promised.
            delete (schema as Record<string, unknown>)['minLength'];
            delete (schema as Record<string, unknown>)['minItems'];
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
        values[field.name] = field.form.control === 'localized' ? localizedLines(value) : value === undefined || value === null ? '' : JSON.stringify(value);
        break;
      case 'integer':
        values[field.name] = typeof value === 'number' ? String(value) : '';
        break;
      case 'pairs':
        values[field.name] = pairsOf(type, value)
          .map(([key, item]) => `${key}=${item}`)
          .join('\n');
        break;
      case 'members':
        for (const member of type.members) {
          const text = typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[member.name] : undefined;
          values[`${field.name}.${member.name}`] = typeof text === 'string' ? text : '';
        }
        break;
      default:
        // A secret is never shown: its field is empty, and left empty it stays as it is.
        values[field.name] = typeof value === 'string' && field.form.control !== 'secret' ? value : '';
    }
  }
  return values;
}

/** Claims by language tag as `CLAIM#TAG=VALUE` lines, by tag, each tag's claims in the order kept. */
function localizedLines(value: unknown): string {
  if (value === null || typeof value !== 'object') return '';
  return Object.entries(value as Record<string, Record<string, unknown> | null>)
    .sort(([a], [b]) => a.localeCompare(b))
    .flatMap(([tag, claims]) =>
      Object.entries(claims ?? {})
        .filter(([, text]) => typeof text === 'string' && text !== '')
        .map(([claim, text]) => `${claim}#${tag}=${String(text)}`),
    )
    .join('\n');
}

/** `CLAIM#TAG=VALUE` lines read back into claims by tag; a line of another shape is refused. */
function localizedObject(field: Field, text: string): Record<string, Record<string, string>> {
  const object: Record<string, Record<string, string>> = {};
  for (const line of lines(text)) {
    const match = /^([a-z_]+)#([^=\s]+)\s*=\s*(.*)$/.exec(line);
    if (!match)
      throw new FormValueError(field.name, `each line is CLAIM#TAG=VALUE, such as name#ja-Kana-JP=ヤマダ タロウ (${JSON.stringify(line.slice(0, 40))} is not)`);
    const [, claim, tag, item] = match as unknown as [string, string, string, string];
    object[tag] = { ...object[tag], [claim]: item };
  }
  return object;
}

type PairsKind = Extract<FieldKind, { kind: 'pairs' }>;

/** The key and value of each pair of a wire value. */
function pairsOf(type: PairsKind, value: unknown): [string, string][] {
  if (type.members === undefined)
    return value !== null && typeof value === 'object' && !Array.isArray(value) ? Object.entries(value).map(([key, item]) => [key, String(item)]) : [];
  const [key, item] = type.members;
  return Array.isArray(value) ? value.map((pair: Record<string, unknown>) => [String(pair[key] ?? ''), String(pair[item] ?? '')]) : [];
}

/**
 * The wire value of pairs typed `KEY=VALUE`, each trimmed on both sides of the first `=`; one
 * without `=` has an empty value, which the operation refuses by its key.
 */
export function pairsValue(type: PairsKind, typed: readonly string[]): unknown {
  const pairs = typed.map((line): [string, string] => {
    const at = line.indexOf('=');
    return at === -1 ? [line.trim(), ''] : [line.slice(0, at).trim(), line.slice(at + 1).trim()];
  });
  if (type.members === undefined) return Object.fromEntries(pairs);
  const [key, item] = type.members;
  return pairs.map(([name, value]) => ({ [key]: name, [item]: value }));
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
      case 'pairs':
        // Lines trimmed and blank ones dropped, so that retyping the same pairs is no change.
        values[field.name] = lines(one(form, field.name).slice(0, type.maxItems * (type.keyMax + type.valueMax + 4))).join('\n');
        break;
      case 'integer':
        values[field.name] = one(form, field.name).slice(0, 20).trim();
        break;
      case 'text':
      case 'object':
        // A line each, trimmed, so that retyping the same names is no change.
        values[field.name] =
          field.form.control === 'localized' ? lines(one(form, field.name).slice(0, type.max)).join('\n') : one(form, field.name).slice(0, type.max).trim();
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
export const lines = (text: string): string[] =>
  text
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter(Boolean);

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
 * value, a JSON object parsed. `before`, the values as read for an edit, is what a `localized`
 * field's operation lays the new lines over: what they leave out of it is removed.
 */
export function inputOf(table: FieldTable, values: FormValues, names: readonly string[], before?: FormValues): Record<string, unknown> {
  const input: Record<string, unknown> = {};
  for (const field of table) {
    if (field.form === null || !formNames(field).some((name) => names.includes(name))) continue;
    const value = values[field.name];
    const type = field.type;
    switch (type.kind) {
      case 'members': {
        // The whole object: each member given, none at all clearing it.
        const given = type.members
          .map((member) => [member.name, String(values[`${field.name}.${member.name}`] ?? '')] as const)
          .filter(([, text]) => text !== '');
        input[field.name] = given.length === 0 ? null : Object.fromEntries(given);
        break;
      }
      case 'list':
        input[field.name] = lines(String(value ?? ''));
        break;
      case 'object':
        if (field.form.control === 'localized') {
          const now: Record<string, Record<string, string> | null> = localizedObject(field, String(value ?? ''));
          // Each claim read before and not typed now is emptied, each language left out removed.
          for (const [tag, claims] of Object.entries(localizedObject(field, String(before?.[field.name] ?? '')))) {
            const kept = now[tag];
            if (kept === undefined || kept === null) now[tag] = null;
            else for (const claim of Object.keys(claims)) kept[claim] ??= '';
          }
          input[field.name] = now;
          break;
        }
        if (value === '' || value === undefined) break;
        try {
          input[field.name] = JSON.parse(String(value)) as unknown;
        } catch {
          throw new FormValueError(field.name, 'not JSON');
        }
        break;
      case 'pairs':
        input[field.name] = pairsValue(type, lines(String(value ?? '')));
        break;
      case 'integer':
        // Empty: the default (null) where there is one, else not given; anything else the operation checks.
        if (value === '' || value === undefined) {
          if (type.nullable) input[field.name] = null;
        } else {
          input[field.name] = Number(value);
        }
        break;
      case 'text':
      case 'choice':
        // A secret left empty is not given: the stored one stays.
        if (value === '' && field.form.control === 'secret') break;
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

/** The option that clears a field's value on update, or null when none does: a flag's `--no-`, a nullable value's. */
export function clearOption(field: Field): string | null {
  const cli = field.cli;
  if (cli === null || cli.noClear || cli.stdin) return null;
  const type = field.type;
  const clearable = type.kind === 'flag' || ((type.kind === 'text' || type.kind === 'choice' || type.kind === 'integer') && type.nullable === true);
  return clearable ? (cli.clear ?? `no-${cli.option}`) : null;
}

/** Whether an update edits the list with `--add-`/`--remove-` (else the option sets it whole). */
const edited = (field: Field, operation: 'create' | 'update') => operation === 'update' && field.type.kind === 'list' && !field.cli?.replaces;

/**
 * The options of a command over the table (for a noun of `kind`, those that apply to it):
 * `--OPTION` for each field the operation takes; a list is repeated when registering and
 * edited (`--add-`, `--remove-`) when changing, unless it `replaces`; a flag or a nullable value
 * is cleared by `--no-OPTION` (or its `clear`) when changing; a secret's option is a flag.
 */
export function cliOptions(
  table: FieldTable,
  operation: 'create' | 'update',
  kind?: string,
): { readonly options: Record<string, CliOption>; readonly bindings: Readonly<Record<string, CliBinding>> } {
  const options: Record<string, CliOption> = {};
  const bindings: Record<string, CliBinding> = {};
  for (const field of table) {
    if (field.cli === null || !field[operation] || !appliesTo(field, kind)) continue;
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
    if (edited(field, operation)) {
      options[`add-${option}`] = { type: 'string', multiple: true };
      bindings[`add-${option}`] = { field, effect: 'add' };
      options[`remove-${option}`] = { type: 'string', multiple: true };
      bindings[`remove-${option}`] = { field, effect: 'remove' };
      continue;
    }
    options[option] = {
      type: type.kind === 'flag' || field.cli.stdin ? 'boolean' : 'string',
      ...(type.kind === 'list' || type.kind === 'choices' || type.kind === 'pairs' ? { multiple: true } : {}),
    };
    bindings[option] = { field, effect: 'set' };
    const clear = clearOption(field);
    if (operation === 'update' && clear !== null) {
      options[clear] = { type: 'boolean' };
      bindings[clear] = { field, effect: 'clear' };
    }
  }
  return { options, bindings };
}

/** The usage text's options for a command over the table, in table order: `[--name NAME]`, `[--redirect-uri URI …]`. */
export function cliUsageParts(table: FieldTable, operation: 'create' | 'update', kind?: string): string[] {
  const parts: string[] = [];
  for (const field of table) {
    if (field.cli === null || !field[operation] || !appliesTo(field, kind)) continue;
    const { option, file } = field.cli;
    const value = file ? 'FILE' : (field.cli.value ?? 'VALUE');
    const type = field.type;
    const required = operation === 'create' && (field.required === true || (kind !== undefined && field.requiredKinds?.includes(kind) === true));
    const wrap = (text: string) => (required ? text : `[${text}]`);
    const clear = operation === 'update' ? clearOption(field) : null;
    if (type.kind === 'members')
      parts.push(
        ...type.members.map((member) => `[--${memberOption(option, member)} ${member.lines ? 'LINES' : 'TEXT'}]`),
        ...(operation === 'update' ? [`[--no-${option}]`] : []),
      );
    else if (field.cli.stdin) parts.push(wrap(`--${option}`));
    else if (type.kind === 'flag') parts.push(operation === 'update' ? `[--[no-]${option}]` : `[--${option}]`);
    else if (edited(field, operation)) parts.push(`[--add-${option} ${value} …]`, `[--remove-${option} ${value} …]`);
    else if (type.kind === 'list' || type.kind === 'choices' || type.kind === 'pairs') parts.push(wrap(`--${option} ${value} …`));
    else if (clear !== null) parts.push(`[--${option} ${value} | --${clear}]`);
    else parts.push(wrap(`--${option} ${value}`));
  }
  return parts;
}

export function cliUsage(table: FieldTable, operation: 'create' | 'update', kind?: string): string {
  return cliUsageParts(table, operation, kind).join(' ');
}

/**
 * The bounds of the lists and pairs `input` gives (how many, and each one's length), as
 * `table`'s rows state them. Called by the operations, so that every door meets the bounds
 * the admin API's schema states: `tessera` and the console as much as the API. A value of
 * another type is left to the operation, which says what it must be.
 */
export function checkBounds(table: FieldTable, input: object): void {
  for (const row of table) {
    const value: unknown = (input as Readonly<Record<string, unknown>>)[row.name];
    const type = row.type;
    if (type.kind === 'list' && Array.isArray(value)) {
      if (value.length > type.maxItems) throw invalid`${field(row.name)}: at most ${type.maxItems} values, not ${value.length}`;
      if (value.some((item) => typeof item === 'string' && item.length > type.max)) throw invalid`${field(row.name)}: each at most ${type.max} characters`;
    } else if (type.kind === 'pairs' && value !== null && typeof value === 'object') {
      const count = Array.isArray(value) ? value.length : Object.keys(value).length;
      if (count > type.maxItems) throw invalid`${field(row.name)}: at most ${type.maxItems} values, not ${count}`;
    }
  }
}
