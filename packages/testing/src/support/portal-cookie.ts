import type { Keyhook } from '@keyhook/core';
import { expect } from 'vitest';

/**
 * Exchanges a fresh link of `keyhook` at `portalUrl`, the portal's URL as the browser reaches it,
 * and returns the `Path` of the session cookie it sets: where the adapter says the portal is mounted.
 */
export async function portalCookiePath(keyhook: Keyhook, portalUrl: string): Promise<string | undefined> {
  const { token } = await keyhook.portal.createSession({ tenantId: 'tenant_a', permissions: ['keys:read'] });
  const reply = await fetch(`${portalUrl}/api/exchange`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', origin: new URL(portalUrl).origin },
    body: JSON.stringify({ token }),
  });
  expect(reply.status).toBe(200);
  return /Path=([^;]+)/.exec(reply.headers.get('set-cookie') ?? '')?.[1];
}
