import type { AnyWebhookEvents, WebhookEvent, WebhookEventMap } from './payload.js';
import { verifyAsync } from './subtle-crypto.js';
import type { VerifyOptions, WebhookSecret } from './verification.js';

/** The part of a Fetch API `Request` that is read; structural, so no DOM types are needed. */
export interface RequestLike {
  readonly headers: { get(name: string): string | null };
  readonly bodyUsed?: boolean;
  arrayBuffer(): Promise<ArrayBuffer>;
}

/**
 * Verifies a Fetch API `Request` (Next.js route handlers, Workers, Deno, Bun) and returns its
 * event: the signature header and the event-id header, named by `options.headers`. It reads the
 * body as bytes, so call it before anything else reads the body.
 */
export async function verifyRequest<Events extends WebhookEventMap<Events> = AnyWebhookEvents>(
  request: RequestLike,
  secret: WebhookSecret,
  options: VerifyOptions = {},
): Promise<WebhookEvent<Events>> {
  if (request.bodyUsed === true) {
    throw new TypeError(
      'the request body was already read: verify first, or pass request.clone() to whatever reads it',
    );
  }
  // Bytes, never request.json(): a re-serialised body no longer matches its signature
  // (docs/http-api.md §6.4 rule 2).
  const body = new Uint8Array(await request.arrayBuffer());
  return verifyAsync<Events>(body, request.headers, secret, options);
}
