/**
 * @keyhook/webhook-verify verifies keyhook webhook deliveries on the receiving side (spec §6).
 * This entry adds the synchronous node:crypto `verify` to everything in `./web`.
 */

export { verify, verifySignature } from './verify.js';
export * from './web.js';
