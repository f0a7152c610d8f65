import type { StoreContext } from '../store-context.js';

/**
 * Hears the NOTIFY that publishEvent, publishTestEvent, requeueDelivery,
 * recoverFailedDeliveries and an enabling setWebhookStatus send inside their transactions (so
 * only committed work), from any instance on this schema, on the store's one LISTEN connection, which the first call opens.
 * Also called once that connection is listening, and after each reconnect: a notification
 * sent meanwhile is lost.
 */
export function watchDeliveries(ctx: StoreContext, listener: () => void): () => void {
  if (ctx.closed) return () => {};
  return ctx.feed.watchDeliveries(listener);
}
