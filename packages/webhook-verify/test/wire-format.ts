import { createHmac } from 'node:crypto';

/** Test-side signing, written against the wire format (docs/decisions.md §6.2), not against the package. */
export const SECRET = `whsec_${'5a'.repeat(32)}`;
export const OTHER_SECRET = `whsec_${'e7'.repeat(32)}`;

export const nowSeconds = (): number => Math.floor(Date.now() / 1000);

export function hmacHex(secret: string, t: number | string, body: string | Uint8Array): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(`${t}.`).update(body).digest('hex');
}

export function signatureHeader(body: string | Uint8Array, secret = SECRET, t = nowSeconds()): string {
  return `t=${t},v1=${hmacHex(secret, t, body)}`;
}

export function eventBody(data: Record<string, unknown> = { invoiceId: 'inv_1' }, id = 'evt_test_1'): string {
  return JSON.stringify({ id, type: 'invoice.paid', createdAt: new Date().toISOString(), data });
}
