/**
 * Device codes (RFC 8628 §3.2 `device_code`): the bearer secret a device polls with, and the
 * key it is stored under. Made and keyed as refresh tokens are (core/timed-secret.ts): the time
 * it was made, then 256 random bits, stored as that time and the SHA-256 of the whole code, so
 * that each device authorization adds its key at the end of the store's index. A code of the
 * earlier form (43 characters, stored under its bare hash) is still found: codes made before
 * it are polled to their end.
 */
export { newTimedSecret as newDeviceCode, timedSecretKey as deviceCodeKey } from '../../core/timed-secret.ts';
