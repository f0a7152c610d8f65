import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

const FORMAT = 'khs1';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;

/** A master key as configured: 32 bytes, or their base64 / base64url spelling (KEYHOOK_ENCRYPTION_KEY). */
export type EncryptionKeyInput = string | Uint8Array;

interface MasterKey {
  id: string;
  key: Buffer;
}

/**
 * AES-256-GCM for secrets at rest (docs/decisions.md §4). A sealed value reads
 * `khs1.<key id>.<base64url(iv | ciphertext | tag)>`: the key id names the master key, so the
 * master key can be rotated (new values sealed with the current key, old ones still opened
 * with the previous keys). The associated data binds a value to its row: a ciphertext copied
 * onto another webhook or tenant does not open.
 */
export class SecretBox {
  private readonly current: MasterKey;
  private readonly byId = new Map<string, Buffer>();

  /** `onFirstSeal` runs once, before the first value is sealed (the development-key warning). */
  constructor(
    current: EncryptionKeyInput,
    previous: readonly EncryptionKeyInput[] = [],
    private onFirstSeal?: () => void,
  ) {
    this.current = masterKey(current);
    for (const key of [this.current, ...previous.map(masterKey)]) this.byId.set(key.id, key.key);
  }

  /** The id of the key new values are sealed with. */
  get keyId(): string {
    return this.current.id;
  }

  seal(plaintext: string, associatedData: string): string {
    if (this.onFirstSeal) {
      const notify = this.onFirstSeal;
      this.onFirstSeal = undefined;
      notify();
    }
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.current.key, iv);
    cipher.setAAD(Buffer.from(associatedData, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const sealed = Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
    return `${FORMAT}.${this.current.id}.${sealed}`;
  }

  /** Throws when the value is malformed, sealed under an unknown key, altered, or bound to other data. */
  open(sealed: string, associatedData: string): string {
    const [format, keyId, payload, extra] = sealed.split('.');
    if (format !== FORMAT || !keyId || !payload || extra !== undefined) {
      throw new Error('keyhook: not a sealed value');
    }
    const key = this.byId.get(keyId);
    if (!key) throw new Error(`keyhook: sealed with master key ${keyId}, which is not configured`);
    const bytes = Buffer.from(payload, 'base64url');
    if (bytes.length < IV_BYTES + TAG_BYTES) throw new Error('keyhook: sealed value is truncated');
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(associatedData, 'utf8'));
    decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
    const body = bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES);
    return Buffer.concat([decipher.update(body), decipher.final()]).toString('utf8');
  }
}

/** A fresh random master key, base64: what a development setup generates and keeps. */
export function generateEncryptionKey(): string {
  return randomBytes(KEY_BYTES).toString('base64');
}

function masterKey(input: EncryptionKeyInput): MasterKey {
  const key = typeof input === 'string' ? decodeKey(input) : Buffer.from(input);
  if (key.length !== KEY_BYTES) {
    throw new TypeError(`keyhook: an encryption key must be ${KEY_BYTES} bytes, got ${key.length}`);
  }
  // Not secret: a short digest only tells which configured key sealed a value.
  const id = createHash('sha256').update('keyhook-master-key-id\0').update(key).digest('hex').slice(0, 8);
  return { id, key };
}

function decodeKey(text: string): Buffer {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) {
    throw new TypeError('keyhook: an encryption key must be 32 bytes in base64');
  }
  return Buffer.from(trimmed.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}
