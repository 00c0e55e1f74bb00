/**
 * Private signing keys encrypted at rest: AES-256-GCM under a key
 * encryption key (KEK) that is never in the database, so that a copy of the database (a
 * backup, a file another local user can read) holds no key that can sign a token.
 *
 * The KEK comes from `TESSERA_KEY_ENCRYPTION_KEY`, or from a key file created with mode
 * 0600 on first start, beside the database (docs/security.md). Several KEKs may be given:
 * the first encrypts, any of them decrypts, and keys encrypted under an older one are
 * encrypted again under the first at start. That is how the KEK is rotated.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmodSync, linkSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ConfigError, parseKeyEncryptionKey, type KeyEncryptionSettings } from '../config/index.ts';
import type { KeyStore, SigningKeyRecord } from '../store/types.ts';

/** How an encrypted private JWK is stored in place of the JWK. */
interface EncryptedJwk {
  readonly enc: 'A256GCM';
  /** Which KEK: the first 8 bytes of its SHA-256, base64url. */
  readonly kek: string;
  readonly iv: string;
  readonly ciphertext: string;
  readonly tag: string;
}

function isEncrypted(jwk: Readonly<Record<string, unknown>>): boolean {
  return jwk['enc'] === 'A256GCM' && typeof jwk['ciphertext'] === 'string';
}

const kekId = (key: Buffer) => createHash('sha256').update(key).digest().subarray(0, 8).toString('base64url');

/** Where the KEKs came from: the setting, or the key file read (or created now, having been missing). */
export type KeySource = { readonly kind: 'setting' } | { readonly kind: 'file'; readonly file: string; readonly created: boolean };

/**
 * A stored key encrypted under a KEK Tessera was not given: a lost or wrong key file, or the
 * setting missing a key. Says where it looked, since that is what the operator must fix.
 */
export class UnknownKeyEncryptionKeyError extends ConfigError {
  constructor(kekId: string, source: KeySource) {
    const where =
      source.kind === 'setting'
        ? 'it was given TESSERA_KEY_ENCRYPTION_KEY: add the key they were encrypted with (the first encrypts, any decrypts)'
        : source.created
          ? `it looked for the key file ${source.file}, which does not exist: restore it from the backup taken with the database, or set TESSERA_KEY_ENCRYPTION_KEY or TESSERA_KEY_FILE`
          : `it read the key file ${source.file}: set TESSERA_KEY_FILE to the key file they were encrypted with, or TESSERA_KEY_ENCRYPTION_KEY to its key`;
    super(
      'TESSERA_KEY_ENCRYPTION_KEY',
      `the signing keys in the database were encrypted with a key encryption key Tessera was not given (id ${kekId}); ${where}`,
    );
  }
}

export class KeyEncryption {
  readonly #keys: readonly { id: string; key: Buffer }[];
  readonly source: KeySource;

  constructor(keys: readonly Buffer[], source: KeySource = { kind: 'setting' }) {
    if (keys.length === 0) throw new Error('no key encryption key');
    this.#keys = keys.map((key) => ({ id: kekId(key), key }));
    this.source = source;
  }

  /**
   * Removes the key file this start created, after the database turned out to need another
   * key: left in place, the next start would read the wrong key as if it were the real one.
   */
  discardCreatedKeyFile(): void {
    if (this.source.kind === 'file' && this.source.created) rmSync(this.source.file, { force: true });
  }

  /** The JWK encrypted under the first KEK, bound to its `kid` (additional authenticated data). */
  encrypt(kid: string, jwk: Readonly<Record<string, unknown>>): EncryptedJwk {
    const { id, key } = this.#keys[0]!;
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(kid));
    const ciphertext = Buffer.concat([cipher.update(JSON.stringify(jwk), 'utf8'), cipher.final()]);
    return {
      enc: 'A256GCM',
      kek: id,
      iv: iv.toString('base64url'),
      ciphertext: ciphertext.toString('base64url'),
      tag: cipher.getAuthTag().toString('base64url'),
    };
  }

  decrypt(kid: string, stored: Readonly<Record<string, unknown>>): Record<string, unknown> {
    if (!isEncrypted(stored)) return { ...stored };
    const sealed = stored as unknown as EncryptedJwk;
    const kek = this.#keys.find((candidate) => candidate.id === sealed.kek);
    if (!kek) {
      throw new UnknownKeyEncryptionKeyError(sealed.kek, this.source);
    }
    const decipher = createDecipheriv('aes-256-gcm', kek.key, Buffer.from(sealed.iv, 'base64url'));
    decipher.setAAD(Buffer.from(kid));
    decipher.setAuthTag(Buffer.from(sealed.tag, 'base64url'));
    const clear = Buffer.concat([decipher.update(Buffer.from(sealed.ciphertext, 'base64url')), decipher.final()]);
    return JSON.parse(clear.toString('utf8')) as Record<string, unknown>;
  }

  /** True when `stored` is clear, or encrypted under another KEK than the first. */
  needsEncrypting(stored: Readonly<Record<string, unknown>>): boolean {
    return !isEncrypted(stored) || stored['kek'] !== this.#keys[0]!.id;
  }
}

/**
 * The KEK from the settings: the keys given, else the key file's (one base64url key a
 * line, the first current), created on first start. A file that others can read is refused:
 * it would be the one secret the encryption rests on.
 */
export function loadKeyEncryption(settings: KeyEncryptionSettings): KeyEncryption {
  if (settings.keys.length > 0) return new KeyEncryption(settings.keys);
  // An in-memory database: its keys live no longer than the process, nor need this one.
  if (settings.file === null) return new KeyEncryption([randomBytes(32)]);
  const file = settings.file;
  let text: string;
  let created = false;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    try {
      created = createKeyFile(file);
    } catch (cause) {
      // A place this process cannot write (a read-only root file system, a volume owned by
      // another user): the fix is a setting, so the refusal names it rather than the errno.
      const { code, syscall } = cause as NodeJS.ErrnoException;
      // (A recursive mkdir on a read-only file system fails ENOENT.)
      if (code !== 'EACCES' && code !== 'EPERM' && code !== 'EROFS' && !(code === 'ENOENT' && syscall === 'mkdir')) throw cause;
      throw new ConfigError(
        'TESSERA_KEY_ENCRYPTION_KEY',
        `not set, and the key file ${file} cannot be created (${code}${process.getuid ? `: uid ${process.getuid()} cannot write ${dirname(file)}` : ''}); set TESSERA_KEY_ENCRYPTION_KEY (the same on every instance; openssl rand -base64 32 makes one), or TESSERA_KEY_FILE to a path this process can write`,
      );
    }
    text = readFileSync(file, 'utf8');
  }
  if ((statSync(file).mode & 0o077) !== 0) {
    throw new Error(`the key file ${file} can be read by other users: run chmod 600 ${file}`);
  }
  const keys = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'))
    .map((line) => parseKeyEncryptionKey(line, `the key file ${file}`));
  return new KeyEncryption(keys, { kind: 'file', file, created });
}

/**
 * Writes a new key to a temporary file, then links it into place: it appears whole, or not at
 * all if another process was first. True when this process's key is the one in place.
 */
function createKeyFile(file: string): boolean {
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  const temporary = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
  writeFileSync(temporary, `${randomBytes(32).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(temporary, 0o600);
  try {
    linkSync(temporary, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return false;
  } finally {
    rmSync(temporary, { force: true });
  }
}

/** `store` with every private key encrypted on the way in and decrypted on the way out. */
export function encryptedKeyStore(store: KeyStore, encryption: KeyEncryption): KeyStore {
  const open = (key: SigningKeyRecord): SigningKeyRecord => ({ ...key, privateJwk: encryption.decrypt(key.kid, key.privateJwk) });
  return {
    add: (key) => store.add({ ...key, privateJwk: encryption.encrypt(key.kid, key.privateJwk) as unknown as Record<string, unknown> }),
    listPublished: async (now) => (await store.listPublished(now)).map(open),
    list: async () => (await store.list()).map(open),
    setPrivateJwk: (kid, privateJwk) => store.setPrivateJwk(kid, encryption.encrypt(kid, privateJwk) as unknown as Record<string, unknown>),
    schedule: (kid, retiresAt, expiresAt) => store.schedule(kid, retiresAt, expiresAt),
  };
}

/**
 * Encrypts, under the first KEK, every stored private key that is clear (written before
 * keys were encrypted) or under an older KEK. Run at start. Returns how many it changed.
 */
export async function encryptStoredKeys(store: KeyStore, encryption: KeyEncryption): Promise<number> {
  let changed = 0;
  for (const key of await store.list()) {
    if (!encryption.needsEncrypting(key.privateJwk)) continue;
    await store.setPrivateJwk(key.kid, encryption.encrypt(key.kid, encryption.decrypt(key.kid, key.privateJwk)) as unknown as Record<string, unknown>);
    changed += 1;
  }
  return changed;
}
