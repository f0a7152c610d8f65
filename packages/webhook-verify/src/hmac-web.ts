import { toHex } from './compare.js';

const encoder = new TextEncoder();

/** `hmacHex` of `./hmac.ts` with WebCrypto: one digest per secret, in the order given. */
export async function hmacHexAsync(
  secrets: readonly string[],
  timestamp: number,
  body: string | Uint8Array,
): Promise<string[]> {
  const subtle = globalThis.crypto?.subtle;
  if (subtle === undefined) throw new TypeError('crypto.subtle is not available in this runtime');
  const bytes = typeof body === 'string' ? encoder.encode(body) : body;
  const prefix = encoder.encode(`${timestamp}.`);
  const message = new Uint8Array(prefix.length + bytes.length);
  message.set(prefix);
  message.set(bytes, prefix.length);
  return Promise.all(
    secrets.map(async (secret) => {
      const key = await subtle.importKey(
        'raw',
        encoder.encode(secret),
        { name: 'HMAC', hash: 'SHA-256' },
        false,
        ['sign'],
      );
      return toHex(new Uint8Array(await subtle.sign('HMAC', key, message)));
    }),
  );
}
