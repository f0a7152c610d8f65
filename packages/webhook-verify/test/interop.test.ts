import { signatureHeader as coreSignatureHeader, mintWebhookSecret } from '@keyhook/core';
import { describe, expect, it } from 'vitest';
import { verify } from '../src/index.js';
import { verifyAsync } from '../src/web.js';
import { eventBody, hmacHex, nowSeconds } from './sign.js';

describe('interop with the sender in @keyhook/core', () => {
  it('a header signed by core verifies here, sync and WebCrypto, and agrees with an independent HMAC', async () => {
    const secret = mintWebhookSecret((n) => crypto.getRandomValues(new Uint8Array(n)));
    const body = eventBody({ sourceId: 'src_1', note: 'ünïcödé ✓' });
    const t = nowSeconds();
    const header = coreSignatureHeader(secret, body, t);
    expect(header).toBe(`t=${t},v1=${hmacHex(secret, t, body)}`);
    expect(verify(body, header, secret).type).toBe('run.completed');
    expect((await verifyAsync(new TextEncoder().encode(body), header, secret)).data).toMatchObject({
      sourceId: 'src_1',
    });
    const other = mintWebhookSecret((n) => crypto.getRandomValues(new Uint8Array(n)));
    expect(() => verify(body, header, other)).toThrow(
      expect.objectContaining({ code: 'signature_mismatch' }),
    );
  });
});
