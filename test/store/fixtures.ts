import { GRANT_DEVICE_CODE } from '../../src/core/protocol.ts';
import { type ClientRecord } from '../../src/store/types.ts';

/** A public device client, as the SQLite-specific store tests register it. */
export function deviceClient(id: string, createdAt = Date.UTC(2026, 0, 1)): ClientRecord {
  return {
    id,
    name: 'TV App',
    secretHash: null,
    redirectUris: ['https://tv.example/callback'],
    scopes: ['openid'],
    grantTypes: [GRANT_DEVICE_CODE],
    webOrigins: [],
    createdAt,
  };
}
