import {
  createKeyhook,
  type DeliveryHeaderNames,
  MemoryStore,
  silentLogger,
  type WebhookKeyType,
} from '@keyhook/core';
import type { SignatureScheme } from '@keyhook/core/store';
import {
  type ReceivedRequest,
  TEST_ADMIN_SECRET,
  TEST_ENCRYPTION_KEY,
  TestReceiver,
} from '@keyhook/store-conformance/support';

export interface OneDelivery {
  /** The POST as the receiver got it: the raw body and the headers. */
  request: ReceivedRequest;
  /** The webhook's signing secret; for an ed25519 key, which is never shown, its `whpk_` public key. */
  secret: string;
  /** The id publish gave the event. */
  eventId: string;
  /** With `rotate`: the secret (or public key) the rotation replaced. */
  previousSecret?: string;
}

/**
 * One real delivery, end to end: a keyhook on the memory store with its worker, a webhook to a
 * receiver on 127.0.0.1, one event published, and the request that arrived. Everything started
 * here is closed before it returns.
 */
export async function deliverOneEvent(
  event: { type: string; data: Record<string, unknown> },
  options: {
    headers?: Partial<DeliveryHeaderNames>;
    /** Rotate the webhook's secret before the publish, keeping the old one for this many seconds (to `secret`, when given). */
    rotate?: { overlapSeconds: number; secret?: string; keyType?: WebhookKeyType };
    /** The signing secret the webhook is created with; absent, a new one. */
    secret?: string;
    /** The kind of key the webhook is created with; absent, a shared secret. */
    keyType?: WebhookKeyType;
    /** The scheme the webhook is created with; absent, the host's default. */
    signatureScheme?: SignatureScheme;
    /** The host's `delivery.signatureScheme`. */
    defaultSignatureScheme?: SignatureScheme;
  } = {},
): Promise<OneDelivery> {
  const receiver = await TestReceiver.start();
  const keyhook = createKeyhook({
    store: new MemoryStore(),
    adminSession: { secret: TEST_ADMIN_SECRET },
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger: silentLogger,
    mode: 'development',
    eventCatalog: { [event.type]: {} },
    delivery: {
      ...(options.headers && { headers: options.headers }),
      ...(options.defaultSignatureScheme && { signatureScheme: options.defaultSignatureScheme }),
    },
  });
  try {
    keyhook.createWorker({ pollIntervalMs: 20 }).start();
    const created = await keyhook.webhooks.create('tenant_a', {
      url: receiver.url('/hooks'),
      events: [event.type],
      ...(options.signatureScheme && { signatureScheme: options.signatureScheme }),
      ...(options.secret && { secret: options.secret }),
      ...(options.keyType && { keyType: options.keyType }),
    });
    const rotated = options.rotate
      ? await keyhook.webhooks.rotate('tenant_a', created.webhook.id, options.rotate)
      : undefined;
    const published = await keyhook.events.publish({ tenantId: 'tenant_a', ...event });
    await receiver.waitFor((requests) => requests.length === 1);
    return {
      request: receiver.requests[0]!,
      secret: verifyingKey(rotated ?? created),
      eventId: published.event.id,
      ...(rotated && { previousSecret: verifyingKey(created) }),
    };
  } finally {
    await keyhook.close();
    await receiver.close();
  }
}

/** What a receiver verifies with: the shared secret, or the public key of an ed25519 endpoint. */
function verifyingKey(issued: { secret: string | null; webhook: { publicKey: string | null } }): string {
  const key = issued.secret ?? issued.webhook.publicKey;
  if (key === null) throw new Error('an endpoint issued neither a secret nor a public key');
  return key;
}
