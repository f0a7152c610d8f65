import type { RandomBytes } from '../clock.js';

export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/**
 * A signing secret: `whsec_` + 32 CSPRNG bytes as lowercase hex. Hex, not base64, so a
 * double-click selects the whole secret and no character needs escaping anywhere.
 */
export function mintWebhookSecret(randomBytes: RandomBytes): string {
  return WEBHOOK_SECRET_PREFIX + Buffer.from(randomBytes(32)).toString('hex');
}
