/**
 * The IdP's metadata (SAML Metadata §2.3.2 EntityDescriptor, §2.4.3 IDPSSODescriptor): its
 * entity ID (the metadata's own address), its signing certificate, where single sign-on and
 * single logout are (HTTP-Redirect and HTTP-POST) and the NameID formats it gives.
 */
import { BINDINGS, NAME_ID_FORMAT_URIS } from './metadata-import.ts';
import { SAML_NS, xmlEscape } from './xml.ts';

export function idpMetadata(endpoints: { readonly metadata: string; readonly sso: string; readonly slo: string }, certificatePem: string): string {
  const certificate = certificatePem.replace(/-----(BEGIN|END) CERTIFICATE-----|\s+/g, '');
  return `<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="${SAML_NS.metadata}" xmlns:ds="${SAML_NS.dsig}" entityID="${xmlEscape(endpoints.metadata)}">
  <md:IDPSSODescriptor WantAuthnRequestsSigned="false" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing">
      <ds:KeyInfo><ds:X509Data><ds:X509Certificate>${certificate}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>
    </md:KeyDescriptor>
    <md:SingleLogoutService Binding="${BINDINGS.redirect}" Location="${xmlEscape(endpoints.slo)}"/>
    <md:SingleLogoutService Binding="${BINDINGS.post}" Location="${xmlEscape(endpoints.slo)}"/>
${Object.values(NAME_ID_FORMAT_URIS)
  .map((format) => `    <md:NameIDFormat>${format}</md:NameIDFormat>`)
  .join('\n')}
    <md:SingleSignOnService Binding="${BINDINGS.redirect}" Location="${xmlEscape(endpoints.sso)}"/>
    <md:SingleSignOnService Binding="${BINDINGS.post}" Location="${xmlEscape(endpoints.sso)}"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>
`;
}
