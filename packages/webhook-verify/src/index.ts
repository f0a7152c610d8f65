/**
 * @keyhook/webhook-verify verifies keyhook webhook deliveries on the receiving side
 * (docs/http-api.md §6.4). This entry adds the synchronous node:crypto `verify`, `verifySignature`,
 * `sign` and `signEvent` to everything in `./web`.
 */

export { sign, signEvent, verify, verifySignature } from './node-crypto.js';
export * from './web.js';
