/**
 * RFC 7644 §3.4.2.2, filtering: a tokenizer and a recursive-descent parser for the filter
 * grammar (Figure 1), the attribute paths of PATCH (§3.5.2, Figure 5), and the evaluation of a
 * parsed filter over a resource as SCIM renders it. Anything the grammar does not allow is
 * `invalidFilter` (or `invalidPath` for a PATCH path), never an exception of another kind.
 *
 *   FILTER    = attrExp / logExp / valuePath / *1"not" "(" FILTER ")"
 *   valuePath = attrPath "[" valFilter "]"
 *   valFilter = attrExp / logExp / *1"not" "(" valFilter ")"
 *   attrPath  = [URI ":"] ATTRNAME *1subAttr
 *   attrExp   = (attrPath SP "pr") / (attrPath SP compareOp SP compValue)
 *   logExp    = FILTER SP ("and" / "or") SP FILTER
 *
 * "The operators 'and', 'or' and 'not' ... evaluated in the following order of precedence:
 * grouping ..., logical 'not', logical 'and', logical 'or'". Operators and attribute names
 * are case-insensitive (§3.4.2.2: "Attribute names and attribute operators used in filters are
 * case insensitive").
 */
import { ScimError } from './errors.ts';

export const COMPARE_OPS = ['eq', 'ne', 'co', 'sw', 'ew', 'gt', 'lt', 'ge', 'le'] as const;
export type CompareOp = (typeof COMPARE_OPS)[number];
export type CompValue = string | number | boolean | null;

/** `[URI ":"] ATTRNAME *1subAttr`: the schema URI (null: the resource's own), the attribute and a sub-attribute. */
export interface AttrPath {
  readonly uri: string | null;
  readonly name: string;
  readonly sub: string | null;
}

export type Filter =
  | { readonly kind: 'present'; readonly path: AttrPath }
  | { readonly kind: 'compare'; readonly op: CompareOp; readonly path: AttrPath; readonly value: CompValue }
  | { readonly kind: 'and' | 'or'; readonly left: Filter; readonly right: Filter }
  | { readonly kind: 'not'; readonly filter: Filter }
  /** `emails[type eq "work"]`: the values of a multi-valued attribute the inner filter holds for. */
  | { readonly kind: 'valuePath'; readonly path: AttrPath; readonly filter: Filter };

/** A PATCH path (§3.5.2): `attrPath`, or `valuePath [subAttr]`. */
export interface PatchPath {
  readonly path: AttrPath;
  /** The values a `[…]` selects, relative to the attribute. */
  readonly filter: Filter | null;
  /** After `]`: the sub-attribute of the selected values (`emails[type eq "work"].value`). */
  readonly subAfter: string | null;
}

/** A filter longer than this is refused before it is read: no provisioning system sends one. */
export const MAX_FILTER_LENGTH = 4096;
/** Nesting deeper than this is refused: the parser recurses once per level. */
const MAX_DEPTH = 50;

type Token =
  | { readonly type: '(' | ')' | '[' | ']'; readonly at: number }
  | { readonly type: 'word'; readonly text: string; readonly at: number }
  | { readonly type: 'string'; readonly value: string; readonly at: number }
  | { readonly type: 'number'; readonly value: number; readonly at: number };

const WORD = /[A-Za-z0-9:._$-]/;
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;
const ATTRNAME = /^[A-Za-z][A-Za-z0-9_$-]*$/;

/** The tokens of `text`: brackets, JSON strings, numbers and words (attribute paths, operators, literals). */
export function tokenize(text: string, scimType: 'invalidFilter' | 'invalidPath' = 'invalidFilter'): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i += 1;
    } else if (c === '(' || c === ')' || c === '[' || c === ']') {
      tokens.push({ type: c, at: i });
      i += 1;
    } else if (c === '"') {
      // §3.4.2.2 compValue: a JSON string (RFC 7159 §7), escapes and all.
      let j = i + 1;
      while (j < text.length && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (j >= text.length) throw new ScimError(400, scimType, `the string at ${i} is not closed`);
      let value: unknown;
      try {
        value = JSON.parse(text.slice(i, j + 1));
      } catch {
        throw new ScimError(400, scimType, `the string at ${i} is not a JSON string`);
      }
      tokens.push({ type: 'string', value: value as string, at: i });
      i = j + 1;
    } else if (WORD.test(c)) {
      let j = i;
      while (j < text.length && WORD.test(text[j]!)) j += 1;
      const word = text.slice(i, j);
      if (NUMBER.test(word)) tokens.push({ type: 'number', value: Number(word), at: i });
      else tokens.push({ type: 'word', text: word, at: i });
      i = j;
    } else {
      throw new ScimError(400, scimType, `unexpected ${JSON.stringify(c)} at ${i}`);
    }
  }
  return tokens;
}

/** Reads `[URI ":"] ATTRNAME *1subAttr` from a word. */
export function parseAttrPath(word: string, scimType: 'invalidFilter' | 'invalidPath' = 'invalidFilter'): AttrPath {
  const colon = word.lastIndexOf(':');
  const uri = colon === -1 ? null : word.slice(0, colon);
  const rest = word.slice(colon + 1);
  if (uri !== null && !/^urn:[A-Za-z0-9][A-Za-z0-9:._-]*$/i.test(uri))
    throw new ScimError(400, scimType, `${JSON.stringify(word.slice(0, 100))}: not an attribute path`);
  const parts = rest.split('.');
  if (parts.length > 2 || !parts.every((part) => ATTRNAME.test(part)))
    throw new ScimError(400, scimType, `${JSON.stringify(word.slice(0, 100))}: not an attribute path`);
  return { uri, name: parts[0]!, sub: parts[1] ?? null };
}

class Parser {
  readonly #tokens: readonly Token[];
  readonly #scimType: 'invalidFilter' | 'invalidPath';
  #at = 0;
  #depth = 0;

  constructor(tokens: readonly Token[], scimType: 'invalidFilter' | 'invalidPath') {
    this.#tokens = tokens;
    this.#scimType = scimType;
  }

  get done(): boolean {
    return this.#at >= this.#tokens.length;
  }

  peek(): Token | undefined {
    return this.#tokens[this.#at];
  }

  fail(message: string): never {
    throw new ScimError(400, this.#scimType, message);
  }

  #where(): string {
    const token = this.peek();
    return token === undefined ? 'at the end' : `at ${token.at}`;
  }

  #keyword(token: Token | undefined, ...words: string[]): string | null {
    if (token?.type !== 'word') return null;
    const lower = token.text.toLowerCase();
    return words.includes(lower) ? lower : null;
  }

  expect(type: '(' | ')' | '[' | ']'): void {
    if (this.peek()?.type !== type) this.fail(`expected "${type}" ${this.#where()}`);
    this.#at += 1;
  }

  /** FILTER, lowest precedence first: or, then and, then not and the rest. */
  filter(): Filter {
    if (++this.#depth > MAX_DEPTH) this.fail(`nested deeper than ${MAX_DEPTH}`);
    let left = this.#and();
    while (this.#keyword(this.peek(), 'or') !== null) {
      this.#at += 1;
      left = { kind: 'or', left, right: this.#and() };
    }
    this.#depth -= 1;
    return left;
  }

  #and(): Filter {
    let left = this.#unary();
    while (this.#keyword(this.peek(), 'and') !== null) {
      this.#at += 1;
      left = { kind: 'and', left, right: this.#unary() };
    }
    return left;
  }

  #unary(): Filter {
    const token = this.peek();
    if (token === undefined) this.fail('a filter expression is missing at the end');
    if (token.type === '(') {
      this.#at += 1;
      const inner = this.filter();
      this.expect(')');
      return inner;
    }
    // `not` followed by "(": the grammar's *1"not" "(" FILTER ")"; else it is an attribute named not.
    if (this.#keyword(token, 'not') !== null && this.#tokens[this.#at + 1]?.type === '(') {
      this.#at += 2;
      const inner = this.filter();
      this.expect(')');
      return { kind: 'not', filter: inner };
    }
    if (token.type !== 'word') this.fail(`expected an attribute ${this.#where()}`);
    this.#at += 1;
    const path = parseAttrPath(token.text, this.#scimType);
    if (this.peek()?.type === '[') {
      if (path.sub !== null) this.fail(`${token.text}: a "[" follows an attribute, not a sub-attribute`);
      this.#at += 1;
      const inner = this.filter();
      this.expect(']');
      return { kind: 'valuePath', path, filter: inner };
    }
    const op = this.#keyword(this.peek(), 'pr', ...COMPARE_OPS);
    if (op === null) this.fail(`expected an operator (pr, ${COMPARE_OPS.join(', ')}) after ${token.text.slice(0, 100)} ${this.#where()}`);
    this.#at += 1;
    if (op === 'pr') return { kind: 'present', path };
    return { kind: 'compare', op: op as CompareOp, path, value: this.#value() };
  }

  /** compValue = false / null / true / number / string */
  #value(): CompValue {
    const token = this.peek();
    this.#at += 1;
    if (token?.type === 'string' || token?.type === 'number') return token.value;
    const literal = this.#keyword(token, 'true', 'false', 'null');
    if (literal === 'true') return true;
    if (literal === 'false') return false;
    if (literal === 'null') return null;
    this.#at -= 1;
    return this.fail(`expected a value (a "string", a number, true, false or null) ${this.#where()}`);
  }
}

/** Parses a `filter` query parameter (§3.4.2.2); `invalidFilter` when it is not one. */
export function parseFilter(text: string): Filter {
  if (text.length > MAX_FILTER_LENGTH) throw new ScimError(400, 'invalidFilter', `the filter is longer than ${MAX_FILTER_LENGTH} characters`);
  const parser = new Parser(tokenize(text), 'invalidFilter');
  if (parser.done) throw new ScimError(400, 'invalidFilter', 'the filter is empty');
  const filter = parser.filter();
  if (!parser.done) parser.fail(`unexpected ${JSON.stringify(describe(parser.peek()!))} at ${parser.peek()!.at}`);
  return filter;
}

/** Parses a PATCH operation's `path` (§3.5.2: `PATH = attrPath / valuePath [subAttr]`); `invalidPath` when it is not one. */
export function parsePatchPath(text: string): PatchPath {
  if (text.length > MAX_FILTER_LENGTH) throw new ScimError(400, 'invalidPath', `the path is longer than ${MAX_FILTER_LENGTH} characters`);
  const tokens = tokenize(text, 'invalidPath');
  const first = tokens[0];
  if (first?.type !== 'word') throw new ScimError(400, 'invalidPath', 'the path names no attribute');
  const path = parseAttrPath(first.text, 'invalidPath');
  if (tokens.length === 1) return { path, filter: null, subAfter: null };
  if (tokens[1]!.type !== '[' || path.sub !== null) throw new ScimError(400, 'invalidPath', `${JSON.stringify(text.slice(0, 100))}: not an attribute path`);
  // The inner filter runs to the matching "]"; after it, at most ".subAttr".
  let depth = 0;
  let close = -1;
  for (let i = 1; i < tokens.length; i += 1) {
    const type = tokens[i]!.type;
    if (type === '[') depth += 1;
    if (type === ']' && --depth === 0) {
      close = i;
      break;
    }
  }
  if (close === -1) throw new ScimError(400, 'invalidPath', `${JSON.stringify(text.slice(0, 100))}: "[" is not closed`);
  const parser = new Parser(tokens.slice(2, close), 'invalidPath');
  if (parser.done) throw new ScimError(400, 'invalidPath', 'the "[…]" of the path is empty');
  const filter = parser.filter();
  if (!parser.done) parser.fail(`unexpected ${JSON.stringify(describe(parser.peek()!))} in the path's filter`);
  const after = tokens.slice(close + 1);
  if (after.length === 0) return { path, filter, subAfter: null };
  const sub = after[0];
  if (after.length !== 1 || sub?.type !== 'word' || !/^\.[A-Za-z][A-Za-z0-9_$-]*$/.test(sub.text))
    throw new ScimError(400, 'invalidPath', `${JSON.stringify(text.slice(0, 100))}: after "]" only ".subAttribute"`);
  return { path, filter, subAfter: sub.text.slice(1) };
}

function describe(token: Token): string {
  switch (token.type) {
    case 'word':
      return token.text.slice(0, 100);
    case 'string':
      return JSON.stringify(token.value.slice(0, 100));
    case 'number':
      return String(token.value);
    default:
      return token.type;
  }
}

// Evaluation.

/** How an attribute compares: its type, and whether case matters (RFC 7643 §2.2 `caseExact`). */
export interface AttributeRule {
  readonly type: 'string' | 'boolean' | 'decimal' | 'integer' | 'dateTime' | 'reference' | 'complex' | 'binary';
  readonly caseExact: boolean;
}

/**
 * What a filter is evaluated with: the resource's own schema URI (a path naming it is the
 * resource's own attribute), and the rule of each attribute path (`emails.value`,
 * `urn:…:enterprise:2.0:User:department`), or undefined for an attribute there is not.
 */
export interface FilterContext {
  readonly coreSchema: string;
  readonly rule: (path: AttrPath) => AttributeRule | undefined;
}

const lower = (value: string) => value.toLowerCase();

/** The member of `object` named `name`, without regard to case. */
export function member(object: unknown, name: string): unknown {
  if (object === null || typeof object !== 'object' || Array.isArray(object)) return undefined;
  const key = Object.keys(object).find((candidate) => lower(candidate) === lower(name));
  return key === undefined ? undefined : (object as Record<string, unknown>)[key];
}

/** The attribute a path names in `resource` (its extension's, for a schema URI other than the core one). */
export function attributeOf(resource: Readonly<Record<string, unknown>>, path: AttrPath, coreSchema: string): unknown {
  const holder = path.uri === null || lower(path.uri) === lower(coreSchema) ? resource : member(resource, path.uri);
  return member(holder, path.name);
}

/** The values a path names: a multi-valued attribute's each; a sub-attribute of each complex value. */
function valuesAt(resource: Readonly<Record<string, unknown>>, path: AttrPath, context: FilterContext): unknown[] {
  const attribute = attributeOf(resource, path, context.coreSchema);
  const values = Array.isArray(attribute) ? attribute : attribute === undefined || attribute === null ? [] : [attribute];
  // §3.4.2.2: a complex multi-valued attribute compared as a whole is compared by its `value`.
  const sub = path.sub ?? (values.some((value) => typeof value === 'object' && value !== null) ? 'value' : null);
  if (sub === null) return values;
  return values.map((value) => member(value, sub)).filter((value) => value !== undefined && value !== null);
}

function present(value: unknown): boolean {
  return !(
    value === undefined ||
    value === null ||
    value === '' ||
    (Array.isArray(value) && value.length === 0) ||
    (typeof value === 'object' && Object.keys(value).length === 0)
  );
}

function compare(op: CompareOp, actual: unknown, expected: CompValue, rule: AttributeRule, path: string): boolean {
  if (expected === null) {
    // `eq null`: not there; `ne null`: there. Nothing else orders null.
    if (op === 'eq') return !present(actual);
    if (op === 'ne') return present(actual);
    throw new ScimError(400, 'invalidFilter', `${path} ${op} null: only eq and ne compare with null`);
  }
  if (rule.type === 'boolean') {
    if (op !== 'eq' && op !== 'ne') throw new ScimError(400, 'invalidFilter', `${path} is a boolean: only eq, ne and pr apply`);
    if (typeof expected !== 'boolean') throw new ScimError(400, 'invalidFilter', `${path} is a boolean: compare it with true or false`);
    return (actual === expected) === (op === 'eq');
  }
  if (rule.type === 'decimal' || rule.type === 'integer') {
    if (typeof expected !== 'number') throw new ScimError(400, 'invalidFilter', `${path} is a number: compare it with a number`);
    if (typeof actual !== 'number') return op === 'ne';
    switch (op) {
      case 'eq':
        return actual === expected;
      case 'ne':
        return actual !== expected;
      case 'gt':
        return actual > expected;
      case 'ge':
        return actual >= expected;
      case 'lt':
        return actual < expected;
      case 'le':
        return actual <= expected;
      default:
        throw new ScimError(400, 'invalidFilter', `${path} is a number: ${op} applies to text only`);
    }
  }
  if (rule.type === 'complex' || rule.type === 'binary')
    throw new ScimError(400, 'invalidFilter', `${path} cannot be compared: name one of its sub-attributes`);
  if (typeof expected !== 'string') throw new ScimError(400, 'invalidFilter', `${path} is text: compare it with a "string"`);
  if (typeof actual !== 'string') return op === 'ne';
  let a = actual;
  let e = expected;
  if (rule.type === 'dateTime') {
    // §3.4.2.2: "gt" etc. on a dateTime compare as times, not as text.
    const [ta, te] = [Date.parse(actual), Date.parse(expected)];
    if (Number.isNaN(te)) throw new ScimError(400, 'invalidFilter', `${path} is a time: ${JSON.stringify(expected.slice(0, 40))} is not one (xsd:dateTime)`);
    switch (op) {
      case 'eq':
        return ta === te;
      case 'ne':
        return ta !== te;
      case 'gt':
        return ta > te;
      case 'ge':
        return ta >= te;
      case 'lt':
        return ta < te;
      case 'le':
        return ta <= te;
      default:
        break;
    }
  } else if (!rule.caseExact) {
    a = lower(a);
    e = lower(e);
  }
  switch (op) {
    case 'eq':
      return a === e;
    case 'ne':
      return a !== e;
    case 'co':
      return a.includes(e);
    case 'sw':
      return a.startsWith(e);
    case 'ew':
      return a.endsWith(e);
    case 'gt':
      return a > e;
    case 'ge':
      return a >= e;
    case 'lt':
      return a < e;
    case 'le':
      return a <= e;
  }
}

const pathText = (path: AttrPath) => `${path.uri === null ? '' : `${path.uri}:`}${path.name}${path.sub === null ? '' : `.${path.sub}`}`;

/** The rule of a path, or `invalidFilter` for an attribute the resource does not have. */
function ruleOf(context: FilterContext, path: AttrPath): AttributeRule {
  const rule = context.rule(path);
  if (rule === undefined) throw new ScimError(400, 'invalidFilter', `${pathText(path).slice(0, 200)}: no such attribute`);
  return rule;
}

/**
 * Checks that every attribute a filter names exists, and that each comparison applies to it,
 * before any resource is read: a filter that could never be evaluated is refused whole, even
 * over an empty list.
 */
export function checkFilter(filter: Filter, context: FilterContext, within: AttrPath | null = null): void {
  const inside = (path: AttrPath): AttrPath =>
    within === null ? path : { uri: within.uri, name: within.name, sub: path.sub === null ? path.name : `${path.name}.${path.sub}` };
  switch (filter.kind) {
    case 'and':
    case 'or':
      checkFilter(filter.left, context, within);
      checkFilter(filter.right, context, within);
      return;
    case 'not':
      checkFilter(filter.filter, context, within);
      return;
    case 'valuePath':
      if (within !== null) throw new ScimError(400, 'invalidFilter', 'a "[…]" inside another');
      ruleOf(context, filter.path);
      checkFilter(filter.filter, context, filter.path);
      return;
    case 'present':
      ruleOf(context, inside(filter.path));
      return;
    case 'compare': {
      const path = inside(filter.path);
      // A probe of the comparison on a value of the attribute's kind finds a comparison that never applies.
      const rule = ruleOf(context, path);
      const probe = rule.type === 'boolean' ? true : rule.type === 'decimal' || rule.type === 'integer' ? 0 : '1970-01-01T00:00:00Z';
      compare(filter.op, probe, filter.value, rule, pathText(path));
    }
  }
}

/** Whether `resource` matches `filter` (§3.4.2.2); `within`: the complex value a `[…]` is evaluated over. */
export function matches(resource: Readonly<Record<string, unknown>>, filter: Filter, context: FilterContext): boolean {
  switch (filter.kind) {
    case 'and':
      return matches(resource, filter.left, context) && matches(resource, filter.right, context);
    case 'or':
      return matches(resource, filter.left, context) || matches(resource, filter.right, context);
    case 'not':
      return !matches(resource, filter.filter, context);
    case 'valuePath': {
      const attribute = attributeOf(resource, filter.path, context.coreSchema);
      const values = Array.isArray(attribute) ? attribute : attribute === undefined || attribute === null ? [] : [attribute];
      const innerContext: FilterContext = {
        coreSchema: context.coreSchema,
        rule: (path) => context.rule({ uri: filter.path.uri, name: filter.path.name, sub: path.sub === null ? path.name : `${path.name}.${path.sub}` }),
      };
      return values.some((value) => typeof value === 'object' && value !== null && matches(value as Record<string, unknown>, filter.filter, innerContext));
    }
    case 'present':
      return valuesAt(resource, filter.path, context).some(present);
    case 'compare': {
      const rule = ruleOf(context, filter.path);
      const values = valuesAt(resource, filter.path, context);
      // `eq null`: no value there; `ne null`: one there (an attribute that is not there is null, not unequal to it).
      if (filter.value === null) return (filter.op === 'eq') !== values.some(present);
      // A multi-valued attribute matches when any of its values does (`ne`: when none equals).
      if (filter.op === 'ne') return !values.some((value) => compare('eq', value, filter.value, rule, pathText(filter.path)));
      if (values.length === 0) return filter.value === null && filter.op === 'eq';
      return values.some((value) => compare(filter.op, value, filter.value, rule, pathText(filter.path)));
    }
  }
}
