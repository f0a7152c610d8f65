/**
 * Tabs of one portal tell each other which session the browser's cookie opens now, so a tab of
 * another session says so at once instead of at its next request (docs/decisions.md §22.14).
 */
const channelName = (basePath: string) => `keyhook-portal:${basePath}`;

export function announceSession(basePath: string, sessionId: string): void {
  if (typeof BroadcastChannel === 'undefined') return;
  const channel = new BroadcastChannel(channelName(basePath));
  channel.postMessage({ sessionId });
  channel.close();
}

/** Calls `listener` with each session id another tab announces; returns the unsubscribe. */
export function onSessionAnnounced(basePath: string, listener: (sessionId: string) => void): () => void {
  if (typeof BroadcastChannel === 'undefined') return () => undefined;
  const channel = new BroadcastChannel(channelName(basePath));
  channel.onmessage = (event: MessageEvent<{ sessionId?: unknown }>) => {
    if (typeof event.data?.sessionId === 'string') listener(event.data.sessionId);
  };
  return () => channel.close();
}
