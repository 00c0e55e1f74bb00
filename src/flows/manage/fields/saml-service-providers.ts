/**
 * What a SAML service provider is (docs/saml.md): the one table the admin API's schemas, the
 * console's form and `tessera saml sp add|update` derive from (fields/field.ts). The rules
 * each value must follow are flows/manage/saml-service-providers.ts's. Its entity ID is not
 * changed once added: another entity ID is another SP, whose persistent NameIDs differ.
 */
import { NAME_ID_FORMATS, SLO_BINDINGS } from '../../../store/saml.ts';
import type { Field } from './field.ts';

/** The largest SAML metadata document taken (the admin API's bodies are at most 64 KiB). */
export const MAX_METADATA_CHARS = 60_000;
export const MAX_CERTIFICATE_CHARS = 16_384;

export const SAML_SP_FIELDS = [
  {
    name: 'id',
    type: { kind: 'text', max: 200 },
    description: 'Its id, given by the server',
    create: false,
    update: false,
    cli: null,
    form: null,
  },
  {
    name: 'entity_id',
    type: { kind: 'text', max: 1024 },
    description: 'Its entity ID (SAML Metadata §2.3.2): the audience of the assertions it is sent; required unless metadata gives it',
    create: true,
    update: false,
    cli: { option: 'entity-id', value: 'URI' },
    form: { control: 'text', label: 'console.saml.entityId' },
  },
  {
    name: 'name',
    type: { kind: 'text', max: 200, nullable: true },
    description: 'What the sign-in and consent pages call it (null: its entity ID)',
    create: true,
    update: true,
    cli: { option: 'name', value: 'NAME' },
    form: { control: 'text', label: 'console.saml.name' },
  },
  {
    name: 'acs_urls',
    type: { kind: 'list', maxItems: 10, max: 2048 },
    description: 'Its AssertionConsumerService URLs (HTTP-POST binding): a response is sent to one of these only; the first is the default',
    create: true,
    update: true,
    cli: { option: 'acs-url', value: 'URL', replaces: true },
    form: { control: 'area', label: 'console.saml.acsUrls' },
  },
  {
    name: 'acs_indexes',
    type: { kind: 'pairs', maxItems: 10, keyMax: 5, valueMax: 2048 },
    description:
      'What each AssertionConsumerServiceIndex it may send names: {"1": URL}, the indexes its metadata gave its ACS URLs (SAML Metadata §2.2.3), or, for acs_urls given as a list, each one\'s position from 0',
    create: false,
    update: false,
    cli: null,
    form: null,
  },
  {
    name: 'slo_url',
    type: { kind: 'text', max: 2048, nullable: true },
    description: 'Its SingleLogoutService URL, where a LogoutRequest or LogoutResponse is sent (null: it takes no part in single logout)',
    create: true,
    update: true,
    cli: { option: 'slo-url', value: 'URL' },
    form: { control: 'text', label: 'console.saml.sloUrl' },
  },
  {
    name: 'slo_binding',
    type: { kind: 'choice', choices: SLO_BINDINGS },
    description: 'The binding its SingleLogoutService URL takes: redirect (HTTP-Redirect, the default) or post (HTTP-POST)',
    create: true,
    update: true,
    cli: { option: 'slo-binding', value: 'BINDING' },
    form: { control: 'select', label: 'console.saml.sloBinding', choiceLabels: 'console.saml.sloBinding' },
  },
  {
    name: 'name_id_format',
    type: { kind: 'choice', choices: NAME_ID_FORMATS },
    description: 'How the person is named to it: email (their verified address), persistent (an id of its own, default) or transient (a new id each sign-in)',
    create: true,
    update: true,
    cli: { option: 'name-id', value: 'FORMAT' },
    form: { control: 'select', label: 'console.saml.nameIdFormat', choiceLabels: 'console.saml.nameIdFormat' },
  },
  {
    name: 'attributes',
    type: { kind: 'pairs', maxItems: 30, keyMax: 256, valueMax: 64 },
    description: 'The assertion\'s attributes: {"mail": "email"}, each attribute name to the claim (OIDC Core §5.1) whose value it carries',
    create: true,
    update: true,
    cli: { option: 'attribute', value: 'NAME=CLAIM' },
    form: { control: 'area', label: 'console.saml.attributes', hint: 'console.saml.attributes.hint' },
  },
  {
    name: 'want_signed_requests',
    type: { kind: 'flag' },
    // Of its AuthnRequests only: a LogoutRequest must be signed whatever this says (SAML Profiles
    // §4.4.4.1: it "MUST be signed"; readRequest in flows/saml/request.ts).
    description: "Its AuthnRequests must be signed with its certificate's key; unsigned ones are refused (its LogoutRequests must always be signed)",
    create: true,
    update: true,
    cli: { option: 'want-signed-requests' },
    form: { control: 'check', label: 'console.saml.wantSignedRequests', group: 'options' },
  },
  {
    name: 'sign_response',
    type: { kind: 'flag' },
    description: 'The Response is signed too, not only the assertion',
    create: true,
    update: true,
    cli: { option: 'sign-response' },
    form: { control: 'check', label: 'console.saml.signResponse', group: 'options' },
  },
  {
    name: 'idp_initiated',
    type: { kind: 'flag' },
    description:
      'It takes sign-ins started at this server (/saml/initiate): Responses that answer no request of its own (SAML Profiles §4.1.5), which it must be ready for; off: such sign-ins are refused',
    create: true,
    update: true,
    cli: { option: 'idp-initiated' },
    form: { control: 'check', label: 'console.saml.idpInitiated', group: 'options' },
  },
  {
    name: 'certificate',
    type: { kind: 'text', max: MAX_CERTIFICATE_CHARS, nullable: true },
    description: 'Its signing certificate (PEM or base64 DER), which its signed requests are checked with',
    create: true,
    update: true,
    cli: { option: 'certificate-file', value: 'FILE', file: 'text', clear: 'no-certificate' },
    form: { control: 'area', label: 'console.saml.certificate' },
  },
  {
    name: 'encryption_certificate',
    type: { kind: 'text', max: MAX_CERTIFICATE_CHARS, nullable: true },
    description:
      'Its encryption certificate (PEM or base64 DER, an RSA key): its assertions are sent encrypted for it (AES-256-GCM, the key by RSA-OAEP); null: in the clear',
    create: true,
    update: true,
    cli: { option: 'encryption-certificate-file', value: 'FILE', file: 'text', clear: 'no-encryption-certificate' },
    form: { control: 'area', label: 'console.saml.encryptionCertificate' },
  },
  {
    name: 'metadata',
    type: { kind: 'text', max: MAX_METADATA_CHARS },
    description:
      'Its SAML metadata (an EntityDescriptor with an SPSSODescriptor): fills entity_id, acs_urls (and acs_indexes), slo_url, slo_binding, name_id_format, want_signed_requests, certificate and encryption_certificate where those are not given',
    create: true,
    update: true,
    writeOnly: true,
    cli: { option: 'metadata-file', value: 'FILE', file: 'text', noClear: true },
    form: { control: 'area', label: 'console.saml.metadata' },
  },
  { name: 'created_at', type: { kind: 'text', max: 40 }, description: 'When it was added', create: false, update: false, cli: null, form: null },
  { name: 'updated_at', type: { kind: 'text', max: 40 }, description: 'When it was last changed', create: false, update: false, cli: null, form: null },
] as const satisfies readonly Field[];

/** What every answer about a SAML service provider holds. */
export const SAML_SP_ALWAYS = [
  'id',
  'entity_id',
  'name',
  'acs_urls',
  'acs_indexes',
  'slo_url',
  'slo_binding',
  'name_id_format',
  'attributes',
  'want_signed_requests',
  'sign_response',
  'idp_initiated',
  'certificate',
  'encryption_certificate',
  'created_at',
  'updated_at',
] as const;
