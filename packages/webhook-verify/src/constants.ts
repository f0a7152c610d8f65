/** A delivery's header names when the `headers` option names none: keyhook's (docs/decisions.md §6.6). */
export const SIGNATURE_HEADER = 'keyhook-signature';
export const EVENT_ID_HEADER = 'keyhook-event-id';

/** docs/http-api.md §6.4 rule 3: the replay window, applied to the past and to the future alike. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

/** Bounds on the work one header can cause: a real one is ~80 bytes per secret in rotation. */
export const MAX_HEADER_LENGTH = 8192;
export const MAX_HEADER_ENTRIES = 20;

/**
 * Every keyhook signing secret starts with this; the HMAC key is the whole string
 * (docs/decisions.md §6.2).
 */
export const SECRET_PREFIX = 'whsec_';

/**
 * An endpoint that signs with an ed25519 key pair gives its receivers this public key: `whpk_` and
 * base64 of its 32 bytes. It verifies the Standard Webhooks `v1a` signatures (docs/decisions.md §6.10).
 */
export const PUBLIC_KEY_PREFIX = 'whpk_';
