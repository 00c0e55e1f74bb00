/**
 * What a trusted issuer is: an identity provider whose Identity Assertion JWT Authorization
 * Grants (ID-JAGs) this server redeems, and where its keys are. The one table the admin API's
 * schemas, the console's form and `tessera trust add` derive from (fields/field.ts); the rules
 * each value must follow are flows/manage/trusted-issuers.ts's. Not changed once added: to
 * point at other keys, remove it and add it again.
 */
import type { Field } from './field.ts';

export const TRUSTED_ISSUER_FIELDS = [
  {
    name: 'issuer',
    type: { kind: 'text', max: 2048 },
    description: 'Its issuer identifier: the iss of its ID-JAGs, exactly (https; http only on loopback)',
    create: true,
    update: false,
    required: true,
    cli: { option: 'issuer', value: 'URL' },
    form: { control: 'text', label: 'console.trust.issuer', required: true },
  },
  {
    name: 'jwks_uri',
    type: { kind: 'text', max: 2048, nullable: true },
    description: 'Where its JWK Set is fetched (or give jwks)',
    create: true,
    update: false,
    cli: { option: 'jwks-uri', value: 'URL', noClear: true },
    form: { control: 'text', label: 'console.trust.jwksUri' },
  },
  {
    name: 'jwks',
    type: { kind: 'object', max: 16384 },
    description: 'Its public keys as a JWK Set, instead of jwks_uri',
    create: true,
    update: false,
    cli: { option: 'jwks-file', file: true },
    form: { control: 'area', label: 'console.trust.jwks' },
  },
  { name: 'created_at', type: { kind: 'text', max: 40 }, description: 'When it was added', create: false, update: false, cli: null, form: null },
] as const satisfies readonly Field[];

/** What every answer about a trusted issuer holds. */
export const TRUSTED_ISSUER_ALWAYS = ['issuer', 'jwks_uri', 'created_at'] as const;
