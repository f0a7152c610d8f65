import { randomBytes } from 'node:crypto';
import { generateEncryptionKey } from '@keyhook/core';
import { describe, expect, it } from 'vitest';
import { SecretBox } from '../src/crypto/secret-box.js';

describe('SecretBox (AES-256-GCM at rest, docs/decisions.md §4)', () => {
  const key = generateEncryptionKey();

  it('seals to a value that names its key and holds no plaintext, and opens it again', () => {
    const box = new SecretBox(key);
    const secret = `whsec_${randomBytes(32).toString('hex')}`;
    const sealed = box.seal(secret, 'webhook-secret:t:wh_1');
    expect(sealed).toMatch(new RegExp(`^khs1\\.${box.keyId}\\.[A-Za-z0-9_-]+$`));
    expect(sealed).not.toContain(secret);
    expect(sealed).not.toContain(secret.slice(6, 20));
    expect(box.open(sealed, 'webhook-secret:t:wh_1')).toBe(secret);
    // A fresh IV each time: the same plaintext never seals to the same value.
    expect(box.seal(secret, 'webhook-secret:t:wh_1')).not.toBe(sealed);
  });

  it('refuses a value bound to other data, altered, truncated, or malformed', () => {
    const box = new SecretBox(key);
    const sealed = box.seal('payload', 'row:1');
    expect(() => box.open(sealed, 'row:2')).toThrow();
    const payload = Buffer.from(sealed.split('.')[2]!, 'base64url');
    payload[20] = payload[20]! ^ 1;
    expect(() => box.open(`khs1.${box.keyId}.${payload.toString('base64url')}`, 'row:1')).toThrow();
    expect(() => box.open(`khs1.${box.keyId}.AAAA`, 'row:1')).toThrow(/truncated/);
    expect(() => box.open('payload', 'row:1')).toThrow(/not a sealed value/);
  });

  it('rotates master keys: new values use the current key, old ones open with a previous key', () => {
    const oldBox = new SecretBox(key);
    const sealedBefore = oldBox.seal('old secret', 'row');
    const next = generateEncryptionKey();
    const rotated = new SecretBox(next, [key]);
    expect(rotated.keyId).not.toBe(oldBox.keyId);
    expect(rotated.open(sealedBefore, 'row')).toBe('old secret');
    expect(rotated.seal('new', 'row').split('.')[1]).toBe(rotated.keyId);
    expect(() => new SecretBox(next).open(sealedBefore, 'row')).toThrow(/not configured/);
  });

  it('takes 32 bytes as bytes, base64 or base64url, and refuses any other length', () => {
    const bytes = randomBytes(32);
    const a = new SecretBox(bytes);
    expect(new SecretBox(bytes.toString('base64')).keyId).toBe(a.keyId);
    expect(new SecretBox(bytes.toString('base64url')).keyId).toBe(a.keyId);
    expect(() => new SecretBox(randomBytes(16))).toThrow(/32 bytes/);
    expect(() => new SecretBox('not base64 at all!')).toThrow(/32 bytes/);
  });
});
