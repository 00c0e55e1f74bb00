/**
 * Fastify's validator compilers, with each compiled validator kept for the life of the
 * process. Fastify compiles every route's schemas for every app it builds, with a new Ajv
 * instance each time, though an app built again (a restart in the same process, or one of
 * the many servers of a test file) declares the same schemas: compiling them was most of the
 * time of building an app. Validators are pure functions of their schema and of the Ajv
 * options, so one compiled for an equal schema under the same options serves every app.
 *
 * With a factory of its own, Fastify hands a `headers` schema over as written, without
 * lower-casing its names: no route declares one.
 */
import { AjvCompiler } from '@fastify/ajv-compiler';
import type { FastifyServerOptions } from 'fastify';

type CompilersFactory = NonNullable<NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']>;
type BuildValidator = NonNullable<CompilersFactory['buildValidator']>;
type ValidatorCompiler = ReturnType<BuildValidator>;

/** Fastify's own factory, whose pool gives one compiler (one Ajv) per set of options. */
const pool: BuildValidator = AjvCompiler();

/** Per compiler: the schema's JSON to its validator. */
const compiled = new WeakMap<ValidatorCompiler, Map<string, ReturnType<ValidatorCompiler>>>();

export const buildValidator: BuildValidator = (externalSchemas, options) => {
  const compile = pool(externalSchemas, options);
  let validators = compiled.get(compile);
  if (validators === undefined) compiled.set(compile, (validators = new Map()));
  const known = validators;
  // Fastify calls it with the route's schema definition ({ schema, method, url, httpPart }),
  // not the bare schema its type names.
  return ((definition: { readonly schema: unknown }) => {
    const key = JSON.stringify(definition.schema);
    let validator = known.get(key);
    if (validator === undefined) known.set(key, (validator = (compile as (definition: unknown) => ReturnType<ValidatorCompiler>)(definition)));
    return validator;
  }) as ValidatorCompiler;
};
