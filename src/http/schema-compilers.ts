/**
 * Fastify's schema compilers (request validators with Ajv, response serializers with
 * fast-json-stringify), compiling each route's function on its first request and keeping it
 * for the life of the process.
 *
 * Only the admin API's routes have JSON schemas (the OAuth endpoints parse their forms
 * themselves), and compiling its 55 validators was most of the time of building an app:
 * about 170 ms of every start, for an API most instances are never called on. Compiled on
 * first use, a route's validator costs its first request a few milliseconds instead, and Ajv
 * (88 modules) and fast-json-stringify are loaded then.
 *
 * Fastify also compiles every schema again for every app it builds, with new compilers each
 * time, though an app built again in the same process (a restart in a test, the many servers
 * of a test file) declares the same schemas. A compiled function depends on its schema, the
 * external schemas and the compiler's options alone, so one compiled for equal ones serves
 * every app.
 *
 * With a validator factory of its own, Fastify hands a `headers` schema over as written,
 * without lower-casing its names: no route declares one.
 */
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type BuildValidator = NonNullable<CompilersFactory['buildValidator']>;
type BuildSerializer = NonNullable<CompilersFactory['buildSerializer']>;

/** What Fastify reads of a validator: Ajv's validate function, its `errors` and `schemaEnv`. */
interface Validator {
  (data: unknown, context?: unknown): unknown;
  readonly errors?: unknown;
  readonly schemaEnv?: unknown;
}

type Serializer = (data: unknown) => string;

/** A compiler as Fastify calls it: with the route's schema definition, not the bare schema its types name. */
type Compile<T> = (definition: { readonly schema: unknown }) => T;

const load = createRequire(import.meta.url);

/** Fastify's own factories, loaded synchronously when the first function of their kind compiles. */
let validators: BuildValidator | undefined;
let serializers: BuildSerializer | undefined;

/** Each compiler's key (the external schemas and options) and schema's JSON, to its function. */
const known = new Map<string, unknown>();

/**
 * A function that compiles on its first use and then is that compiled function: the call, and
 * the properties Fastify reads (before the call, for a validator's `schemaEnv`), go to it.
 */
function onFirstUse<T extends (...args: never[]) => unknown>(compile: () => T, properties: readonly string[]): T {
  let compiled: T | undefined;
  const get = () => (compiled ??= compile());
  const call = (...args: Parameters<T>) => get()(...args);
  return Object.defineProperties(
    call,
    Object.fromEntries(properties.map((name) => [name, { get: () => (get() as unknown as Record<string, unknown>)[name] }])),
  ) as unknown as T;
}

/** A factory whose compilers answer every definition with a function compiled on first use, one per distinct schema. */
function lazily<T extends (...args: never[]) => unknown>(
  kind: string,
  factory: () => (externalSchemas: never, options: never) => Compile<T>,
  properties: readonly string[],
) {
  return (externalSchemas: unknown, options: unknown): Compile<T> => {
    const compiler = `${kind}${JSON.stringify(externalSchemas)}${JSON.stringify(options)}`;
    return (definition) => {
      const key = `${compiler}${JSON.stringify(definition.schema)}`;
      let compiled = known.get(key) as T | undefined;
      if (compiled === undefined) {
        known.set(key, (compiled = onFirstUse(() => factory()(externalSchemas as never, options as never)(definition), properties)));
      }
      return compiled;
    };
  };
}

export const buildValidator = lazily<Validator>(
  'validator',
  () =>
    (validators ??= (load('@fastify/ajv-compiler') as typeof import('@fastify/ajv-compiler')).AjvCompiler()) as unknown as (
      externalSchemas: never,
      options: never,
    ) => Compile<Validator>,
  ['errors', 'schemaEnv'],
) as unknown as BuildValidator;

export const buildSerializer = lazily<Serializer>(
  'serializer',
  () =>
    (serializers ??= (
      load('@fastify/fast-json-stringify-compiler') as typeof import('@fastify/fast-json-stringify-compiler')
    ).SerializerSelector()) as unknown as (externalSchemas: never, options: never) => Compile<Serializer>,
  [],
) as unknown as BuildSerializer;
