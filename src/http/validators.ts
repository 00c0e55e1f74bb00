/**
 * Fastify's validator compilers, compiling each route's validator on its first request and
 * keeping it for the life of the process.
 *
 * Only the admin API's routes have JSON schemas (the OAuth endpoints parse their forms
 * themselves), and compiling its 55 validators was most of the time of building an app:
 * about 170 ms of every start, for an API most instances are never called on. Compiled on
 * first use, a route's validator costs its first request a few milliseconds instead, and Ajv
 * itself (88 modules) is loaded then.
 *
 * Fastify also compiles every schema again for every app it builds, with a new Ajv instance
 * each time, though an app built again in the same process (a restart in a test, the many
 * servers of a test file) declares the same schemas. Validators are pure functions of their
 * schema and of the Ajv options, so one compiled for an equal schema under the same options
 * serves every app.
 *
 * With a factory of its own, Fastify hands a `headers` schema over as written, without
 * lower-casing its names: no route declares one.
 */
import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type BuildValidator = NonNullable<CompilersFactory['buildValidator']>;
type ValidatorCompiler = ReturnType<BuildValidator>;

/** What Fastify reads of a validator: Ajv's validate function, its `errors` and `schemaEnv`. */
interface Validator {
  (data: unknown, context?: unknown): unknown;
  readonly errors?: unknown;
  readonly schemaEnv?: unknown;
}

/**
 * Fastify's own factory (@fastify/ajv-compiler), whose pool gives one compiler (one Ajv) per
 * set of external schemas and options; loaded synchronously when the first validator compiles.
 */
let pool: BuildValidator | undefined;
const load = createRequire(import.meta.url);

function ajvCompilers(): BuildValidator {
  return (pool ??= (load('@fastify/ajv-compiler') as typeof import('@fastify/ajv-compiler')).AjvCompiler());
}

/** The schema's JSON, under its compiler's external schemas and options, to its validator. */
const known = new Map<string, Validator>();

/**
 * A validator that compiles on its first use and then is that compiled validator: the call,
 * and the `errors` and `schemaEnv` Fastify reads (before the call, for `schemaEnv`), go to it.
 */
function onFirstUse(compile: () => Validator): Validator {
  let validator: Validator | undefined;
  const get = () => (validator ??= compile());
  return Object.defineProperties((data: unknown, context?: unknown) => get()(data, context), {
    errors: { get: () => get().errors },
    schemaEnv: { get: () => get().schemaEnv },
  }) as Validator;
}

export const buildValidator: BuildValidator = (externalSchemas, options) => {
  // The pool's own key: the external schemas and Ajv's options (the app sets no plugins).
  const compiler = `${JSON.stringify(externalSchemas)}${JSON.stringify(options?.customOptions)}`;
  // Fastify calls it with the route's schema definition ({ schema, method, url, httpPart }),
  // not the bare schema its type names.
  return ((definition: { readonly schema: unknown }) => {
    const key = `${compiler}${JSON.stringify(definition.schema)}`;
    let validator = known.get(key);
    if (validator === undefined) {
      const compile = () => (ajvCompilers()(externalSchemas, options) as unknown as (definition: unknown) => Validator)(definition);
      known.set(key, (validator = onFirstUse(compile)));
    }
    return validator;
  }) as unknown as ValidatorCompiler;
};
