import { createHmac } from 'node:crypto';

/**
 * The lowercase hex HMAC-SHA256 of `<t>.<body>` (docs/http-api.md §6.4 rule 1). A string key is
 * used as its UTF-8 bytes, `whsec_` included (README, "What a delivery looks like").
 */
export function hmacHex(secret: string, timestamp: number, body: string | Uint8Array): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(body).digest('hex');
}
