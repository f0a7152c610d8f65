/**
 * @keyhook/webhook-verify verifies keyhook webhook deliveries on the receiving side.
 * The verifier itself arrives with the delivery work; these are the spec's header names (§6).
 */
export const SIGNATURE_HEADER = 'x-chatbot-signature';
export const EVENT_ID_HEADER = 'x-chatbot-event-id';
export const DEFAULT_TOLERANCE_SECONDS = 300;
