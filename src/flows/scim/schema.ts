/**
 * RFC 7643 §4 and §7: the schemas this service provider serves (the core User, its enterprise
 * extension, Group), written once as data. `/Schemas` returns them; the filter, the
 * `attributes` parameter and PATCH paths look attributes up in them.
 */
import type { AttrPath, AttributeRule } from './filter.ts';

export const USER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:User';
export const ENTERPRISE_SCHEMA = 'urn:ietf:params:scim:schemas:extension:enterprise:2.0:User';
export const GROUP_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Group';
export const LIST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:ListResponse';
export const PATCH_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';
export const BULK_REQUEST_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:BulkRequest';
export const BULK_RESPONSE_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:BulkResponse';
export const SERVICE_PROVIDER_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig';
export const RESOURCE_TYPE_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:ResourceType';
export const SCHEMA_SCHEMA = 'urn:ietf:params:scim:schemas:core:2.0:Schema';

type Type = AttributeRule['type'];

/** RFC 7643 §7: an attribute's definition. */
export interface AttributeDef {
  readonly name: string;
  readonly type: Type;
  readonly multiValued: boolean;
  readonly description: string;
  readonly required: boolean;
  readonly caseExact: boolean;
  readonly mutability: 'readOnly' | 'readWrite' | 'immutable' | 'writeOnly';
  readonly returned: 'always' | 'never' | 'default' | 'request';
  readonly uniqueness: 'none' | 'server' | 'global';
  readonly subAttributes?: readonly AttributeDef[];
  readonly canonicalValues?: readonly string[];
  readonly referenceTypes?: readonly string[];
}

export interface SchemaDef {
  readonly id: string;
  readonly name: string;
  readonly description: string;
  readonly attributes: readonly AttributeDef[];
}

type Options = Partial<Omit<AttributeDef, 'name' | 'type' | 'description'>>;

const attr = (name: string, type: Type, description: string, options: Options = {}): AttributeDef => ({
  name,
  type,
  description,
  multiValued: false,
  required: false,
  caseExact: false,
  mutability: 'readWrite',
  returned: 'default',
  uniqueness: 'none',
  ...options,
});
const text = (name: string, description: string, options: Options = {}) => attr(name, 'string', description, options);

/** The sub-attributes of a multi-valued attribute (RFC 7643 §2.4): value, display, type, primary. */
const multi = (name: string, description: string, types: readonly string[], valueType: Type = 'string'): AttributeDef =>
  attr(name, 'complex', description, {
    multiValued: true,
    subAttributes: [
      attr('value', valueType, `The ${name} value`),
      text('display', 'A human-readable name, for display only', { mutability: 'readOnly' }),
      text('type', 'What kind of value it is', { canonicalValues: types }),
      attr('primary', 'boolean', 'The primary or preferred value; at most one is'),
    ],
  });

const id = text('id', "The resource's id, given by the server: for a User, its subject identifier (sub)", {
  caseExact: true,
  mutability: 'readOnly',
  returned: 'always',
  uniqueness: 'server',
});
const externalId = text('externalId', "The provisioning system's own id of the resource", { caseExact: true });
const meta = attr('meta', 'complex', 'Resource metadata', {
  mutability: 'readOnly',
  subAttributes: [
    text('resourceType', 'User or Group', { caseExact: true, mutability: 'readOnly' }),
    attr('created', 'dateTime', 'When it was made', { mutability: 'readOnly' }),
    attr('lastModified', 'dateTime', 'When it last changed', { mutability: 'readOnly' }),
    attr('location', 'reference', 'Its URI', { mutability: 'readOnly', caseExact: true }),
    text('version', 'Its version (the ETag)', { caseExact: true, mutability: 'readOnly' }),
  ],
});

export const USER_SCHEMA_DEF: SchemaDef = {
  id: USER_SCHEMA,
  name: 'User',
  description: "A person's account (Tessera users: the username, the OpenID Connect standard claims)",
  attributes: [
    text('userName', 'What the person signs in with (preferred_username): 1-64 letters, digits or . _ @ + -, unique without regard to case', {
      required: true,
      uniqueness: 'server',
    }),
    attr('name', 'complex', 'Their name', {
      subAttributes: [
        text('formatted', 'The full name (the name claim)'),
        text('familyName', 'Surname (family_name)'),
        text('givenName', 'First name (given_name)'),
        text('middleName', 'Middle name (middle_name)'),
        text('honorificPrefix', 'Title, such as Ms.'),
        text('honorificSuffix', 'Suffix, such as III'),
      ],
    }),
    text('displayName', 'The name shown for them'),
    text('nickName', 'Casual name (nickname)'),
    attr('profileUrl', 'reference', 'Their profile page (profile)', { referenceTypes: ['external'] }),
    text('title', 'Job title'),
    text('userType', 'Relation to the organisation, such as Employee'),
    text('preferredLanguage', 'Preferred language (RFC 7231 Accept-Language)'),
    text('locale', 'Their locale (BCP 47; the locale claim)'),
    text('timezone', 'Their time zone (IANA; the zoneinfo claim)'),
    attr('active', 'boolean', 'False: the person is cut off at once (sessions ended, tokens refused)'),
    text('password', 'A password they may sign in with; never returned', { mutability: 'writeOnly', returned: 'never', caseExact: true }),
    multi('emails', 'E-mail addresses; the primary one (else the first) is the email claim', ['work', 'home', 'other']),
    multi('phoneNumbers', 'Phone numbers; the primary one (else the first) is the phone_number claim when it is in E.164 form', [
      'work',
      'home',
      'mobile',
      'fax',
      'pager',
      'other',
    ]),
    attr('addresses', 'complex', 'Postal addresses', {
      multiValued: true,
      subAttributes: ['formatted', 'streetAddress', 'locality', 'region', 'postalCode', 'country', 'type']
        .map((name) => text(name, `The address's ${name}`))
        .concat(attr('primary', 'boolean', 'The primary address')),
    }),
    attr('groups', 'complex', 'The groups they are in (change them through /Groups)', {
      multiValued: true,
      mutability: 'readOnly',
      subAttributes: [
        text('value', "The group's id", { caseExact: true, mutability: 'readOnly' }),
        attr('$ref', 'reference', "The group's URI", { mutability: 'readOnly', caseExact: true }),
        text('display', "The group's name", { mutability: 'readOnly' }),
        text('type', 'direct', { mutability: 'readOnly' }),
      ],
    }),
  ],
};

export const ENTERPRISE_SCHEMA_DEF: SchemaDef = {
  id: ENTERPRISE_SCHEMA,
  name: 'EnterpriseUser',
  description: 'Enterprise User (RFC 7643 §4.3), kept as given',
  attributes: [
    text('employeeNumber', 'Employee number'),
    text('costCenter', 'Cost center'),
    text('organization', 'Organization'),
    text('division', 'Division'),
    text('department', 'Department'),
    attr('manager', 'complex', 'Their manager', {
      subAttributes: [
        text('value', "The manager's id", { caseExact: true }),
        attr('$ref', 'reference', "The manager's URI"),
        text('displayName', "The manager's name", { mutability: 'readOnly' }),
      ],
    }),
  ],
};

export const GROUP_SCHEMA_DEF: SchemaDef = {
  id: GROUP_SCHEMA,
  name: 'Group',
  description: 'A group of people; its name is in their groups claim',
  attributes: [
    text('displayName', "The group's name, unique without regard to case: what the groups claim carries", { required: true, uniqueness: 'server' }),
    attr('members', 'complex', 'Its members (Users)', {
      multiValued: true,
      subAttributes: [
        text('value', "The member's id", { caseExact: true, mutability: 'immutable' }),
        attr('$ref', 'reference', "The member's URI", { mutability: 'immutable' }),
        text('display', "The member's name", { mutability: 'readOnly' }),
        text('type', 'User', { mutability: 'immutable', canonicalValues: ['User'] }),
      ],
    }),
  ],
};

/** The attributes every resource has beside its schema's (RFC 7643 §3.1). */
const COMMON: readonly AttributeDef[] = [
  id,
  externalId,
  meta,
  text('schemas', 'The schemas of the resource', { multiValued: true, caseExact: true, mutability: 'readOnly', returned: 'always' }),
];

/** A resource type (RFC 7643 §6) and what its filter and paths may name. */
export interface ResourceKind {
  readonly name: 'User' | 'Group';
  readonly endpoint: '/Users' | '/Groups';
  readonly core: SchemaDef;
  readonly extensions: readonly SchemaDef[];
}

export const USER_KIND: ResourceKind = { name: 'User', endpoint: '/Users', core: USER_SCHEMA_DEF, extensions: [ENTERPRISE_SCHEMA_DEF] };
export const GROUP_KIND: ResourceKind = { name: 'Group', endpoint: '/Groups', core: GROUP_SCHEMA_DEF, extensions: [] };

const same = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The definition a path names in a resource kind, and the schema it is in; undefined when there is none. */
export function definitionOf(
  kind: ResourceKind,
  path: AttrPath,
): { readonly attribute: AttributeDef; readonly sub: AttributeDef | null; readonly schema: SchemaDef } | undefined {
  const schemas = [kind.core, ...kind.extensions];
  const schema = path.uri === null ? kind.core : schemas.find((candidate) => same(candidate.id, path.uri!));
  if (schema === undefined) return undefined;
  const attribute = [...schema.attributes, ...(schema === kind.core ? COMMON : [])].find((candidate) => same(candidate.name, path.name));
  if (attribute === undefined) return undefined;
  if (path.sub === null) return { attribute, sub: null, schema };
  const sub = attribute.subAttributes?.find((candidate) => same(candidate.name, path.sub!));
  return sub === undefined ? undefined : { attribute, sub, schema };
}

/** The comparison rule of a path, for the filter (filter.ts): a complex attribute by its `value`. */
export function ruleOf(kind: ResourceKind, path: AttrPath): AttributeRule | undefined {
  const found = definitionOf(kind, path);
  if (found === undefined) return undefined;
  const def = found.sub ?? found.attribute;
  if (def.type === 'complex' && found.sub === null) {
    const value = def.subAttributes?.find((candidate) => candidate.name === 'value');
    if (value !== undefined) return { type: value.type, caseExact: value.caseExact };
  }
  return { type: def.type, caseExact: def.caseExact };
}

/** RFC 7643 §7: a schema as `/Schemas` returns it. */
export function schemaResource(schema: SchemaDef, base: string): Record<string, unknown> {
  return {
    schemas: [SCHEMA_SCHEMA],
    id: schema.id,
    name: schema.name,
    description: schema.description,
    attributes: schema.attributes,
    meta: { resourceType: 'Schema', location: `${base}/Schemas/${schema.id}` },
  };
}
