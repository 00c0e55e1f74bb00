/**
 * SAML service providers (docs/saml.md): the one implementation `tessera saml sp`, the admin
 * API and the console call. An SP is registered by its entity ID and the URLs its responses
 * may go to (SAML Profiles §4.1.4.1: the IdP "MUST" make sure the ACS location is the SP's);
 * its metadata, when given, fills what is not given otherwise. Who may do this is an admin
 * scope of its own (`admin:saml`): an SP receives signed statements about people.
 */
import { randomBytes, randomUUID, X509Certificate } from 'node:crypto';
import { hasUnsafeCharacters, UNSAFE_CHARACTERS_RULE } from '../../core/display-text.ts';
import { acsIndexesByPosition, NAME_ID_FORMATS, SLO_BINDINGS, type NameIdFormat, type SamlServiceProviderRecord, type SloBinding } from '../../store/saml.ts';
import { DuplicateError } from '../../store/types.ts';
import { pemCertificate } from '../../tokens/certificate.ts';
import { USER_CLAIMS } from '../../tokens/claims.ts';
import { readSpMetadata, type SpMetadata } from '../saml/metadata-import.ts';
import { XmlRefusal } from '../saml/xml.ts';
import { isoTime, type ManageDeps } from './deps.ts';
import { conflict, field, invalid, notFound } from './errors.ts';
import { checkBounds } from './fields/field.ts';
import { MAX_CERTIFICATE_CHARS, MAX_METADATA_CHARS, SAML_SP_FIELDS } from './fields/saml-service-providers.ts';

/** A server has at most this many SAML service providers. */
export const MAX_SAML_SPS = 500;
/** The claims an attribute may carry: every claim about the person, and `sub`, their id. */
export const ATTRIBUTE_CLAIMS: readonly string[] = ['sub', ...USER_CLAIMS];

export interface SamlSpInput {
  readonly entity_id?: unknown;
  readonly name?: unknown;
  readonly acs_urls?: unknown;
  readonly slo_url?: unknown;
  readonly slo_binding?: unknown;
  readonly name_id_format?: unknown;
  readonly attributes?: unknown;
  readonly want_signed_requests?: unknown;
  readonly sign_response?: unknown;
  readonly idp_initiated?: unknown;
  readonly certificate?: unknown;
  readonly encryption_certificate?: unknown;
  readonly metadata?: unknown;
}

function checkUrl(name: string, raw: unknown): string {
  if (typeof raw !== 'string' || raw === '') throw invalid`${field(name)}: an absolute http or https URL`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid`${field(name)} ${raw.slice(0, 200)}: not an absolute URL`;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw invalid`${field(name)} ${raw.slice(0, 200)}: an http or https URL`;
  // A bare '#' leaves url.hash empty: the URL as typed is what is compared, so it is refused too.
  if (url.hash !== '' || raw.includes('#')) throw invalid`${field(name)} ${raw.slice(0, 200)}: no fragment`;
  if (url.username !== '' || url.password !== '') throw invalid`${field(name)} ${raw.slice(0, 200)}: no user name or password in the URL`;
  if (raw.length > 2048) throw invalid`${field(name)}: at most 2048 characters`;
  // As registered, compared exactly: the URL as typed, not as URL would rewrite it.
  return raw;
}

/** SAML Metadata §2.3.2: entityID is an anyURI of at most 1024 characters. */
function checkEntityId(raw: unknown): string {
  if (typeof raw !== 'string' || raw.trim() === '') throw invalid`${field('entity_id')} is required (or metadata that names it): the SP's entity ID`;
  if (raw.length > 1024) throw invalid`${field('entity_id')}: at most 1024 characters (SAML Metadata §2.3.2)`;
  if (!/^[a-zA-Z][a-zA-Z0-9+.-]*:[\x21-\x7e]+$/.test(raw))
    throw invalid`${field('entity_id')} ${raw.slice(0, 200)}: a URI (https://sp.example/saml or urn:…), without spaces`;
  return raw;
}

function checkAcsUrls(raw: unknown): string[] {
  if (!Array.isArray(raw) || raw.length === 0) throw invalid`${field('acs_urls')}: at least one AssertionConsumerService URL (or metadata that names one)`;
  if (raw.length > 10) throw invalid`${field('acs_urls')}: at most 10`;
  return [...new Set(raw.map((url) => checkUrl('acs_urls', url)))];
}

function checkAttributes(raw: unknown): Record<string, string> {
  if (raw === null || raw === undefined) return {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw invalid`${field('attributes')}: an object from attribute name to claim`;
  const entries = Object.entries(raw as Record<string, unknown>);
  if (entries.length > 30) throw invalid`${field('attributes')}: at most 30`;
  for (const [name, claim] of entries) {
    if (name === '' || name.length > 256 || /[\x00-\x20\x7f]/.test(name))
      throw invalid`${field('attributes')} ${name.slice(0, 100)}: an attribute name of 1 to 256 characters, without spaces`;
    if (typeof claim !== 'string' || !ATTRIBUTE_CLAIMS.includes(claim))
      throw invalid`${field('attributes')} ${name.slice(0, 100)}=${String(claim).slice(0, 64)}: not a claim; one of ${ATTRIBUTE_CLAIMS.join(', ')}`;
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

/** A PEM certificate, or the base64 DER inside one (as metadata holds it), as PEM. */
export function checkCertificate(raw: unknown, name: 'certificate' | 'encryption_certificate' = 'certificate'): string | null {
  if (raw === null || raw === undefined || raw === '') return null;
  if (typeof raw !== 'string' || raw.length > MAX_CERTIFICATE_CHARS)
    throw invalid`${field(name)}: a PEM certificate of at most ${MAX_CERTIFICATE_CHARS} characters`;
  const body = raw.replace(/-----(BEGIN|END) CERTIFICATE-----/g, '').replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(body)) throw invalid`${field(name)}: not a PEM certificate`;
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(Buffer.from(body, 'base64'));
  } catch {
    throw invalid`${field(name)}: not an X.509 certificate`;
  }
  const type = certificate.publicKey.asymmetricKeyType;
  if (name === 'encryption_certificate' && type !== 'rsa') throw invalid`${field(name)}: an RSA key, which the assertion's key is encrypted for (RSA-OAEP)`;
  if (type !== 'rsa' && type !== 'ec') throw invalid`${field(name)}: an RSA or EC key, for RSA-SHA256 or ECDSA-SHA256 signatures`;
  return pemCertificate(certificate.raw).trim();
}

function checkFlag(name: string, raw: unknown): boolean {
  if (typeof raw !== 'boolean') throw invalid`${field(name)}: true or false`;
  return raw;
}

/** What the console and the sign-in pages show for it: none (its entity ID is shown) when blank. */
function checkName(raw: unknown): string | null {
  if (raw === null || raw === undefined) return null;
  if (typeof raw !== 'string' || raw.length > 200) throw invalid`${field('name')}: a name of at most 200 characters`;
  if (hasUnsafeCharacters(raw)) throw invalid`${field('name')} ${UNSAFE_CHARACTERS_RULE}`;
  return raw.trim() === '' ? null : raw.trim();
}

function checkMetadata(raw: unknown): SpMetadata | null {
  if (raw === undefined || raw === null || raw === '') return null;
  if (typeof raw !== 'string') throw invalid`${field('metadata')}: the SP's metadata document (XML)`;
  try {
    return readSpMetadata(raw, MAX_METADATA_CHARS);
  } catch (error) {
    if (error instanceof XmlRefusal) throw invalid`${field('metadata')}: ${error.message}`;
    throw error;
  }
}

/** The registration `input` makes of `current` (null: a new one), each field checked; metadata fills what is not given. */
function registration(input: SamlSpInput, current: SamlServiceProviderRecord | null, now: number): SamlServiceProviderRecord {
  const metadata = checkMetadata(input.metadata);
  // Metadata is the SP's own: another entity's would give this one its ACS URLs and keys.
  const named = current?.entityId ?? (typeof input.entity_id === 'string' ? input.entity_id : null);
  if (metadata !== null && named !== null && metadata.entityId !== named)
    throw invalid`${field('metadata')}: it is the metadata of ${metadata.entityId.slice(0, 200)}, not of ${named.slice(0, 200)}`;
  const given = <T>(value: unknown, fromMetadata: T | undefined, before: T): unknown =>
    value !== undefined ? value : fromMetadata !== undefined ? fromMetadata : before;
  const format = given(input.name_id_format, metadata?.nameIdFormat ?? undefined, current?.nameIdFormat ?? 'persistent');
  if (typeof format !== 'string' || !(NAME_ID_FORMATS as readonly string[]).includes(format))
    throw invalid`${field('name_id_format')} ${String(format).slice(0, 100)}: one of ${NAME_ID_FORMATS.join(', ')}`;
  const sloUrl = given(input.slo_url, metadata?.sloUrl ?? undefined, current?.sloUrl ?? null);
  const sloBinding = given(input.slo_binding, metadata?.sloBinding ?? undefined, current?.sloBinding ?? 'redirect');
  if (typeof sloBinding !== 'string' || !(SLO_BINDINGS as readonly string[]).includes(sloBinding))
    throw invalid`${field('slo_binding')} ${String(sloBinding).slice(0, 100)}: one of ${SLO_BINDINGS.join(', ')}`;
  const acsUrls = checkAcsUrls(given(input.acs_urls, metadata?.acsUrls, current?.acsUrls));
  const record: SamlServiceProviderRecord = {
    id: current?.id ?? randomUUID(),
    entityId: current?.entityId ?? checkEntityId(given(input.entity_id, metadata?.entityId, undefined)),
    name: input.name === undefined ? (current?.name ?? null) : checkName(input.name),
    acsUrls,
    // SAML Core §3.4.1 AssertionConsumerServiceIndex names an endpoint by the index its metadata
    // gave it (SAML Metadata §2.2.3); URLs given as a list are named by their position, from 0.
    // (Without acs_urls, metadata or a current record, checkAcsUrls has refused it above.)
    acsIndexes: input.acs_urls !== undefined ? acsIndexesByPosition(acsUrls) : (metadata?.acsIndexes ?? current!.acsIndexes),
    sloUrl: sloUrl === null ? null : checkUrl('slo_url', sloUrl),
    sloBinding: sloBinding as SloBinding,
    nameIdFormat: format as NameIdFormat,
    attributes: input.attributes === undefined ? (current?.attributes ?? {}) : checkAttributes(input.attributes),
    wantSignedRequests: checkFlag(
      'want_signed_requests',
      given(input.want_signed_requests, metadata?.wantSignedRequests, current?.wantSignedRequests ?? false),
    ),
    signResponse: input.sign_response === undefined ? (current?.signResponse ?? false) : checkFlag('sign_response', input.sign_response),
    // Off unless asked for: an SP takes unsolicited Responses only deliberately (SAML Profiles §4.1.5).
    idpInitiated: input.idp_initiated === undefined ? (current?.idpInitiated ?? false) : checkFlag('idp_initiated', input.idp_initiated),
    certificate: checkCertificate(given(input.certificate, metadata?.certificate ?? undefined, current?.certificate ?? null)),
    encryptionCertificate: checkCertificate(
      given(input.encryption_certificate, metadata?.encryptionCertificate ?? undefined, current?.encryptionCertificate ?? null),
      'encryption_certificate',
    ),
    nameIdSalt: current?.nameIdSalt ?? randomBytes(32).toString('base64url'),
    createdAt: current?.createdAt ?? now,
    updatedAt: now,
  };
  if (record.wantSignedRequests && record.certificate === null)
    throw invalid`${field('want_signed_requests')}: give the SP's signing certificate too, which its requests are checked with`;
  return record;
}

export async function addSamlSp(deps: ManageDeps, input: SamlSpInput): Promise<SamlServiceProviderRecord> {
  checkBounds(SAML_SP_FIELDS, input);
  if (input.entity_id !== undefined && input.metadata === undefined) checkEntityId(input.entity_id);
  const sp = registration(input, null, deps.clock.now());
  if ((await deps.store.samlServiceProviders.list()).length >= MAX_SAML_SPS)
    throw conflict`a server has at most ${MAX_SAML_SPS} SAML service providers: remove one first`;
  if ((await deps.store.samlServiceProviders.byEntityId(sp.entityId)) !== null) throw conflict`${field('entity_id')} ${sp.entityId}: already registered`;
  try {
    await deps.store.samlServiceProviders.create(sp);
  } catch (error) {
    if (error instanceof DuplicateError) throw conflict`${field('entity_id')} ${sp.entityId}: already registered`;
    throw error;
  }
  await deps.events.emit({ type: 'saml_sp.created', detail: { saml_sp: sp.id, entity_id: sp.entityId, acs_urls: sp.acsUrls.join(' '), by: 'operator' } });
  return sp;
}

export async function listSamlSps(deps: Pick<ManageDeps, 'store'>): Promise<SamlServiceProviderRecord[]> {
  return deps.store.samlServiceProviders.list();
}

/** An SP by its id, or by its entity ID (what an operator is more likely to have at hand). */
export async function getSamlSp(deps: Pick<ManageDeps, 'store'>, idOrEntityId: string): Promise<SamlServiceProviderRecord> {
  const sp = (await deps.store.samlServiceProviders.get(idOrEntityId)) ?? (await deps.store.samlServiceProviders.byEntityId(idOrEntityId));
  if (sp === null) throw notFound`no SAML service provider ${idOrEntityId}`;
  return sp;
}

/** Changes what is given; its entity ID stays (another entity ID is another SP). */
export async function updateSamlSp(deps: ManageDeps, idOrEntityId: string, input: SamlSpInput): Promise<SamlServiceProviderRecord> {
  checkBounds(SAML_SP_FIELDS, input);
  const current = await getSamlSp(deps, idOrEntityId);
  if (input.entity_id !== undefined && input.entity_id !== current.entityId)
    throw invalid`${field('entity_id')}: an SP's entity ID is not changed; add the other entity as an SP of its own`;
  const sp = registration(input, current, deps.clock.now());
  if (!(await deps.store.samlServiceProviders.update(sp))) throw notFound`no SAML service provider ${idOrEntityId}`;
  await deps.events.emit({ type: 'saml_sp.updated', detail: { saml_sp: sp.id, entity_id: sp.entityId, fields: Object.keys(input).join(' '), by: 'operator' } });
  return sp;
}

export async function removeSamlSp(deps: ManageDeps, idOrEntityId: string): Promise<void> {
  const sp = await getSamlSp(deps, idOrEntityId);
  if (!(await deps.store.samlServiceProviders.remove(sp.id))) throw notFound`no SAML service provider ${idOrEntityId}`;
  await deps.events.emit({ type: 'saml_sp.removed', detail: { saml_sp: sp.id, entity_id: sp.entityId, by: 'operator' } });
}

/** An SP as `saml sp list --json` and the admin API give it. */
export function samlSpJson(sp: SamlServiceProviderRecord): Record<string, unknown> {
  return {
    id: sp.id,
    entity_id: sp.entityId,
    name: sp.name,
    acs_urls: sp.acsUrls,
    acs_indexes: sp.acsIndexes,
    slo_url: sp.sloUrl,
    slo_binding: sp.sloBinding,
    name_id_format: sp.nameIdFormat,
    attributes: sp.attributes,
    want_signed_requests: sp.wantSignedRequests,
    sign_response: sp.signResponse,
    idp_initiated: sp.idpInitiated,
    certificate: sp.certificate,
    encryption_certificate: sp.encryptionCertificate,
    created_at: isoTime(sp.createdAt),
    updated_at: isoTime(sp.updatedAt),
  };
}
