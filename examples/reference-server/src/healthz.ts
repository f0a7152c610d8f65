import { errorEnvelope } from '@keyhook/core/http';
import type { Store } from '@keyhook/core/store';
import type { FastifyInstance } from 'fastify';

/** A ping slower than this counts as a failure: a probe must answer, not hang. */
export const HEALTH_PING_TIMEOUT_MS = 2000;

/** data-plane.md §7.2: `GET /healthz`, outside the prefix, answers 200 while the store answers. */
export function registerHealthz(
  app: FastifyInstance,
  store: Store,
  timeoutMs = HEALTH_PING_TIMEOUT_MS,
): void {
  // Probes hit this every few seconds; their log lines would drown everything else.
  app.get('/healthz', { logLevel: 'warn' }, async (request, reply) => {
    reply.header('cache-control', 'no-store');
    try {
      await pingWithin(store, timeoutMs);
      return { status: 'ok' };
    } catch (error) {
      request.log.warn({ err: error }, 'health check failed: the store did not answer');
      // The one error envelope, as every other 503 of the API.
      const response = errorEnvelope(503, 'unavailable', 'The store did not answer.', undefined, {
        'retry-after': '1',
      });
      return reply.code(503).headers(response.headers).send(response.body);
    }
  });
}

async function pingWithin(store: Store, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`store ping took longer than ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    await Promise.race([store.ping(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
