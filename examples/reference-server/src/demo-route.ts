import { requireScope } from '@keyhook/adapter-fastify';
import type { Keyhook } from '@keyhook/core';
import type { FastifyInstance } from 'fastify';

/**
 * A stand-in for the data plane, which comes later (DESIGN.md §7): one route behind an API
 * key with `sources:read`, answering what the guard learned about the caller.
 */
export function registerDemoRoute(app: FastifyInstance, keyhook: Keyhook, prefix: string): void {
  app.get(`${prefix}/demo/echo`, { preHandler: requireScope(keyhook, 'sources:read') }, async (request) => ({
    apiKey: request.apiKey,
  }));
}
