import type { StoreContext } from '../store-context.js';

/**
 * Moves at once for this store's own revokes and rotations, and for every other instance's
 * when their NOTIFY arrives; null while the listener is reconnecting.
 */
export function keyChangeVersion(ctx: StoreContext): number | null {
  const feed = ctx.closed ? null : ctx.feed.version();
  return feed === null ? null : feed + ctx.localChanges;
}

/**
 * Runs a change to key `id` (rotateApiKey, revokeApiKey, updateApiKey) and, when it changed
 * something, answers only after this instance's listener heard the NOTIFY: the server sends it to
 * every instance at commit, so by the time a client can react to the answer, the other instances
 * have it too. The change moves this store's keyChangeVersion at once.
 */
export async function announced<T>(
  ctx: StoreContext,
  id: string,
  change: () => Promise<T>,
  changed: (result: T) => boolean,
): Promise<T> {
  const expectation = ctx.feed.expect(id);
  try {
    const result = await change();
    if (!changed(result)) {
      expectation.cancel();
      return result;
    }
    ctx.localChanges++;
    await expectation.seen;
    return result;
  } catch (error) {
    expectation.cancel();
    throw error;
  }
}
