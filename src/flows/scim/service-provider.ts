/**
 * RFC 7644 §4, service provider configuration endpoints: what this service provider supports
 * (RFC 7643 §5), its resource types (§6) and schemas (§7).
 */
import { MAX_BULK_OPERATIONS, MAX_PAYLOAD_BYTES } from './bulk.ts';
import { MAX_RESULTS } from './query.ts';
import {
  ENTERPRISE_SCHEMA_DEF,
  GROUP_KIND,
  RESOURCE_TYPE_SCHEMA,
  schemaResource,
  SERVICE_PROVIDER_SCHEMA,
  USER_KIND,
  USER_SCHEMA_DEF,
  GROUP_SCHEMA_DEF,
  type ResourceKind,
  type SchemaDef,
} from './schema.ts';

export const SCHEMAS: readonly SchemaDef[] = [USER_SCHEMA_DEF, ENTERPRISE_SCHEMA_DEF, GROUP_SCHEMA_DEF];
export const KINDS: readonly ResourceKind[] = [USER_KIND, GROUP_KIND];

/** RFC 7643 §5. */
export function serviceProviderConfig(base: string): Record<string, unknown> {
  return {
    schemas: [SERVICE_PROVIDER_SCHEMA],
    patch: { supported: true },
    bulk: { supported: true, maxOperations: MAX_BULK_OPERATIONS, maxPayloadSize: MAX_PAYLOAD_BYTES },
    filter: { supported: true, maxResults: MAX_RESULTS },
    changePassword: { supported: true },
    sort: { supported: true },
    etag: { supported: true },
    authenticationSchemes: [
      {
        type: 'oauthbearertoken',
        name: 'OAuth Bearer Token',
        description: 'A SCIM token from tessera scim token add, or a client_credentials access token for <issuer>/admin with the scope scim',
        specUri: 'https://www.rfc-editor.org/info/rfc6750',
        primary: true,
      },
    ],
    meta: { resourceType: 'ServiceProviderConfig', location: `${base}/ServiceProviderConfig` },
  };
}

/** RFC 7643 §6. */
export function resourceType(base: string, kind: ResourceKind): Record<string, unknown> {
  return {
    schemas: [RESOURCE_TYPE_SCHEMA],
    id: kind.name,
    name: kind.name,
    endpoint: kind.endpoint,
    description: kind.core.description,
    schema: kind.core.id,
    schemaExtensions: kind.extensions.map((schema) => ({ schema: schema.id, required: false })),
    meta: { resourceType: 'ResourceType', location: `${base}/ResourceTypes/${kind.name}` },
  };
}

export const schemaResources = (base: string) => SCHEMAS.map((schema) => schemaResource(schema, base));
