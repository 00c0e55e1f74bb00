/**
 * What a client's registration is (RFC 7591 §2 names, and Tessera's own for what it adds):
 * the one table the admin API's schemas, the console's app form and `tessera client add` /
 * `update` derive from (fields/field.ts). The rules each value must follow are
 * flows/manage/clients.ts's.
 */
import {
  CLIENT_AUTH_METHODS,
  GRANT_DEVICE_CODE,
  GRANT_JWT_BEARER,
  GRANT_TOKEN_EXCHANGE,
  PKCE_POLICIES,
  REQUEST_OBJECT_ALGORITHMS,
} from '../../../core/protocol.ts';
import type { Field } from './field.ts';

/**
 * Grant types by the names people write: a URN by its last part (the device grant's as
 * `device_code`, RFC 8693's as `token-exchange`, RFC 7523's as `jwt-bearer`), read either way.
 */
export const GRANT_CHOICES = ['authorization_code', 'device_code', 'refresh_token', 'client_credentials', 'token-exchange', 'jwt-bearer'] as const;

const URI = 2048;

export const CLIENT_FIELDS = [
  {
    name: 'client_name',
    type: { kind: 'text', max: 200 },
    description: 'What people see on the consent page',
    create: true,
    update: true,
    required: true,
    cli: { option: 'name', value: 'NAME' },
    form: { control: 'text', label: 'console.app.name', required: true },
  },
  {
    name: 'token_endpoint_auth_method',
    type: { kind: 'choice', choices: CLIENT_AUTH_METHODS },
    description: 'How it authenticates at the token endpoint (none: a public client)',
    create: true,
    update: true,
    cli: { option: 'auth-method', value: 'METHOD' },
    form: { control: 'select', label: 'console.app.authMethod', choiceLabels: 'console.app.auth' },
  },
  {
    name: 'redirect_uris',
    type: { kind: 'list', maxItems: 50, max: URI },
    description: 'Where the browser is sent back with a code (exact match)',
    create: true,
    update: true,
    cli: { option: 'redirect-uri', value: 'URI' },
    form: { control: 'area', label: 'console.app.redirectUris' },
  },
  {
    name: 'scope',
    type: { kind: 'text', max: 4096 },
    description: "The scopes it may ask for, space-separated: OpenID ones and registered APIs'",
    create: true,
    update: true,
    cli: { option: 'scope', value: '"SCOPE …"' },
    form: { control: 'text', label: 'console.app.scope' },
  },
  {
    name: 'grant_types',
    type: {
      kind: 'choices',
      choices: GRANT_CHOICES,
      aliases: { [GRANT_DEVICE_CODE]: 'device_code', [GRANT_TOKEN_EXCHANGE]: 'token-exchange', [GRANT_JWT_BEARER]: 'jwt-bearer' },
    },
    description: 'The grants it may use (authorization_code unless given)',
    create: true,
    update: true,
    cli: { option: 'grant', value: 'TYPE' },
    form: { control: 'checks', label: 'console.app.grants' },
  },
  {
    name: 'token_exchange_audiences',
    type: { kind: 'list', maxItems: 50, max: URI },
    description:
      'What a token exchange by it may be for (RFC 8693; grant token-exchange): registered APIs by identifier, other authorization servers by issuer (an ID-JAG)',
    create: true,
    update: true,
    cli: { option: 'exchange-audience', value: 'URI' },
    form: { control: 'area', label: 'console.app.exchangeAudiences' },
  },
  {
    name: 'web_origins',
    type: { kind: 'list', maxItems: 50, max: URI },
    description: 'Browser origins a public single-page app calls from (CORS)',
    create: true,
    update: true,
    cli: { option: 'web-origin', value: 'ORIGIN' },
    form: { control: 'area', label: 'console.app.webOrigins' },
  },
  {
    name: 'device_networks',
    type: { kind: 'list', maxItems: 50, max: 64 },
    description: 'Networks its devices may start a device sign-in from (CIDR)',
    create: true,
    update: true,
    cli: { option: 'device-network', value: 'CIDR' },
    form: { control: 'area', label: 'console.app.deviceNetworks' },
  },
  {
    name: 'jwks_uri',
    type: { kind: 'text', max: URI, nullable: true },
    description: 'Where its public keys are (private_key_jwt, signed request objects)',
    create: true,
    update: true,
    cli: { option: 'jwks-uri', value: 'URL', noClear: true },
    form: { control: 'text', label: 'console.app.jwksUri' },
  },
  {
    name: 'jwks',
    type: { kind: 'object', max: 8192 },
    description: 'Its public keys as a JWK Set, instead of jwks_uri',
    create: true,
    update: true,
    cli: { option: 'jwks-file', file: true },
    form: { control: 'area', label: 'console.app.jwks' },
  },
  {
    name: 'pkce',
    type: { kind: 'choice', choices: PKCE_POLICIES },
    description: 'required; optional: a confidential OpenID client may send a nonce instead; optional-without-nonce: neither',
    create: true,
    update: true,
    cli: { option: 'pkce', value: 'POLICY' },
    form: { control: 'select', label: 'console.app.pkce', choiceLabels: 'console.app.pkce' },
  },
  {
    name: 'request_object_signing_alg',
    type: { kind: 'choice', choices: REQUEST_OBJECT_ALGORITHMS, nullable: true },
    description: 'The one algorithm its request objects may use (none: unsigned); absent: any asymmetric one',
    create: true,
    update: true,
    cli: { option: 'request-object-signing-alg', value: 'ALG' },
    form: { control: 'select', label: 'console.app.requestAlg' },
  },
  {
    name: 'post_logout_redirect_uris',
    type: { kind: 'list', maxItems: 50, max: URI },
    description: 'Where it may send people after signing them out',
    create: true,
    update: true,
    cli: { option: 'post-logout-redirect-uri', value: 'URI' },
    form: { control: 'area', label: 'console.app.postLogout' },
  },
  {
    name: 'backchannel_logout_uri',
    type: { kind: 'text', max: URI, nullable: true },
    description: 'Where Tessera posts logout tokens (Back-Channel Logout 1.0)',
    create: true,
    update: true,
    cli: { option: 'backchannel-logout-uri', value: 'URI' },
    form: { control: 'text', label: 'console.app.backchannel' },
  },
  {
    name: 'require_phishing_resistant',
    type: { kind: 'flag' },
    description: 'Only a person signed in with a passkey may approve it',
    create: true,
    update: true,
    cli: { option: 'require-phishing-resistant' },
    form: { control: 'check', label: 'console.app.phishingResistant', group: 'options' },
  },
  {
    name: 'first_party',
    type: { kind: 'flag' },
    description: "The operator's own app: signed in without a consent page",
    create: true,
    update: true,
    cli: { option: 'first-party' },
    form: { control: 'check', label: 'console.app.firstParty', group: 'options' },
  },
  {
    name: 'dpop_bound_access_tokens',
    type: { kind: 'flag' },
    description: 'Its token requests must carry a DPoP proof (RFC 9449 §5.2)',
    create: true,
    update: true,
    cli: { option: 'require-dpop' },
    form: { control: 'check', label: 'console.app.dpop', group: 'options' },
  },
  {
    name: 'require_pushed_authorization_requests',
    type: { kind: 'flag' },
    description: 'Its authorization requests must be pushed first (RFC 9126 §6)',
    create: true,
    update: true,
    cli: { option: 'require-par' },
    form: { control: 'check', label: 'console.app.par', group: 'options' },
  },
  {
    // The console marks an app verified with a button of its own, not through the form.
    name: 'verified',
    type: { kind: 'flag' },
    description: 'A self-registered app the operator has checked: its consent page stops saying "not verified"',
    create: false,
    update: true,
    cli: { option: 'verified' },
    form: null,
  },
  // Read only: what the server says of a registration.
  {
    // Chosen only where it must match another server's: the client_id an ID-JAG names (docs/agents.md).
    name: 'client_id',
    type: { kind: 'text', max: 200 },
    description: 'Its identifier (new and random unless given: the same client_id it has at an enterprise identity provider)',
    create: true,
    update: false,
    cli: { option: 'client-id', value: 'ID' },
    form: null,
  },
  {
    name: 'registered_by',
    type: { kind: 'choice', choices: ['dynamic', 'metadata_document'] },
    description: 'How an app that registered itself did (RFC 7591, or its metadata document)',
    create: false,
    update: false,
    cli: null,
    form: null,
  },
  {
    name: 'previous_secret_expires_at',
    type: { kind: 'text', max: 40 },
    description: 'Until when the secret it had before the last rotation is accepted',
    create: false,
    update: false,
    cli: null,
    form: null,
  },
  { name: 'created_at', type: { kind: 'text', max: 40 }, description: 'When it was registered', create: false, update: false, cli: null, form: null },
] as const satisfies readonly Field[];

/** The fields every answer about a client has; the others appear when set. */
export const CLIENT_ALWAYS = ['client_id', 'client_name', 'token_endpoint_auth_method', 'redirect_uris', 'scope', 'grant_types', 'pkce', 'created_at'] as const;

/** A field's value as the wire has it. */
type WireOf<T> = T extends { readonly kind: 'text'; readonly nullable: true }
  ? string | null
  : T extends { readonly kind: 'text' }
    ? string
    : T extends { readonly kind: 'choice'; readonly nullable: true }
      ? string | null
      : T extends { readonly kind: 'choice' }
        ? string
        : T extends { readonly kind: 'choices' | 'list' }
          ? readonly string[]
          : T extends { readonly kind: 'flag' }
            ? boolean
            : unknown;

type Writable<T> = T extends { readonly create: true } | { readonly update: true } ? T : never;

/** A registration as given to the operations: every field optional, so that an update names only what changes. */
export type ClientMetadataOf<Table extends readonly Field[]> = { readonly [F in Writable<Table[number]> as F['name']]?: WireOf<F['type']> };
