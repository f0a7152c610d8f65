import { requireScope } from '@keyhook/adapter-fastify';
import { isKeyhookError, KeyhookError } from '@keyhook/core';
import { type ApiKeyContext, errorResponse, type KeyhookResponse } from '@keyhook/core/http';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { ReferenceKeyhook } from '../catalog.js';
import { StagingError } from './errors.js';
import { type IdempotencyKeys, Replay, type RequestKey } from './idempotency-keys.js';
import { type Operation, scopeFor } from './operation-scopes.js';
import type { RunApi } from './run-api.js';
import {
  batchDocumentSchema,
  itemFieldsSchema,
  MAX_DATA_BODY_BYTES,
  runStartSchema,
  snapshotSchema,
  sourceCreateSchema,
  sourcePatchSchema,
} from './schemas.js';
import type { SourceApi } from './source-api.js';
import { responses } from './views.js';

/** The data plane's operations, as the routes call them. */
export interface Staging {
  sources: SourceApi;
  runs: RunApi;
  keys: IdempotencyKeys;
}

interface Call {
  tenantId: string;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
  /** The request's Idempotency-Key, on a route that takes one and when it came. */
  key?: RequestKey | undefined;
}

/** One data-plane route: its path, the operation (and so the scope) it is, and what it answers. */
export interface DataPlaneRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  operation: Operation;
  summary: string;
  /** The body's schema, for validation's documentation (the handler parses it itself). */
  body?: z.ZodType | undefined;
  /** The body may be left out. */
  bodyOptional?: boolean;
  /** The success body's schema (views.ts): the document's, and the view functions' type. */
  response?: z.ZodType;
  /** Query parameters, for the documentation. */
  query?: readonly string[];
  /** The success status; `created` says when an upsert made a new item (201). */
  status: number;
  created?: number;
  /** Failure statuses beyond those its scope, body, query and path imply: 409 for a state that refuses it. */
  errors?: readonly number[];
  /**
   * Takes `Idempotency-Key` (data-plane.md §3.4): every POST. PUT, PATCH and DELETE are
   * idempotent as they are, and ignore the header, as keyhook's own routes that do not take it.
   */
  idempotent?: true;
  handle(staging: Staging, call: Call): Promise<unknown>;
}

const LIST = ['limit', 'cursor'] as const;

/**
 * data-plane.md §4.1: the data plane's routes under `/sources`, each guarded by its
 * operation's scope.
 */
export const DATA_PLANE_ROUTES: readonly DataPlaneRoute[] = [
  {
    method: 'GET',
    path: '/sources',
    operation: 'sources.list',
    response: responses.sources,
    summary: 'List sources, newest first',
    query: LIST,
    status: 200,
    handle: (s, c) => s.sources.listSources(c.tenantId, c.query),
  },
  {
    method: 'POST',
    path: '/sources',
    operation: 'sources.create',
    response: responses.source,
    summary: 'Create a source',
    body: sourceCreateSchema,
    status: 201,
    idempotent: true,
    handle: (s, c) => s.sources.createSource(c.tenantId, c.body, c.key),
  },
  {
    method: 'GET',
    path: '/sources/:sourceId',
    operation: 'sources.read',
    response: responses.source,
    summary: 'Read a source',
    status: 200,
    handle: (s, c) => s.sources.getSource(c.tenantId, c.params['sourceId']!),
  },
  {
    method: 'PATCH',
    path: '/sources/:sourceId',
    operation: 'sources.update',
    response: responses.source,
    summary: "Change a source's name or description",
    body: sourcePatchSchema,
    status: 200,
    handle: (s, c) => s.sources.updateSource(c.tenantId, c.params['sourceId']!, c.body),
  },
  {
    method: 'POST',
    path: '/sources/:sourceId/deactivate',
    operation: 'sources.deactivate',
    response: responses.source,
    summary: 'Deactivate a source: its items and runs become read-only (409 source_inactive)',
    status: 200,
    idempotent: true,
    handle: (s, c) => s.sources.deactivateSource(c.tenantId, c.params['sourceId']!, c.key),
  },
  {
    method: 'GET',
    path: '/sources/:sourceId/items',
    operation: 'items.list',
    response: responses.items,
    summary: 'List staged items in key order',
    query: LIST,
    status: 200,
    handle: (s, c) => s.sources.listItems(c.tenantId, c.params['sourceId']!, c.query),
  },
  {
    method: 'PUT',
    path: '/sources/:sourceId/items',
    operation: 'items.snapshot',
    response: responses.snapshot,
    errors: [409, 413],
    summary: 'Replace the whole staged set (an empty one needs ?allowEmpty=true)',
    body: snapshotSchema,
    query: ['allowEmpty'],
    status: 200,
    handle: (s, c) => s.sources.snapshot(c.tenantId, c.params['sourceId']!, c.body, c.query),
  },
  {
    method: 'POST',
    path: '/sources/:sourceId/items/batch',
    operation: 'items.batch',
    response: responses.batch,
    errors: [409, 413],
    summary: 'Up to 1000 upserts and deletes; one result per operation, in order',
    body: batchDocumentSchema,
    status: 200,
    idempotent: true,
    handle: (s, c) => s.sources.batch(c.tenantId, c.params['sourceId']!, c.body, c.key),
  },
  {
    method: 'PUT',
    path: '/sources/:sourceId/items/:key',
    operation: 'items.upsert',
    response: responses.upserted,
    errors: [409, 413],
    summary: 'Create or replace one item: created (201), updated or unchanged (200)',
    body: itemFieldsSchema,
    status: 200,
    created: 201,
    handle: (s, c) => s.sources.upsertItem(c.tenantId, c.params['sourceId']!, c.params['key']!, c.body),
  },
  {
    method: 'DELETE',
    path: '/sources/:sourceId/items/:key',
    operation: 'items.delete',
    errors: [409],
    summary: 'Remove one staged item',
    status: 204,
    handle: (s, c) => s.sources.deleteItem(c.tenantId, c.params['sourceId']!, c.params['key']!),
  },
  {
    method: 'POST',
    path: '/sources/:sourceId/runs',
    operation: 'runs.start',
    response: responses.run,
    bodyOptional: true,
    errors: [409],
    summary: 'Start a run: discovery diffs the staged set against the active generation',
    body: runStartSchema,
    status: 202,
    idempotent: true,
    handle: (s, c) => s.runs.startRun(c.tenantId, c.params['sourceId']!, c.body, c.key),
  },
  {
    method: 'GET',
    path: '/sources/:sourceId/runs',
    operation: 'runs.read',
    response: responses.runs,
    summary: 'List runs, newest first',
    query: LIST,
    status: 200,
    handle: (s, c) => s.runs.listRuns(c.tenantId, c.params['sourceId']!, c.query),
  },
  {
    method: 'GET',
    path: '/sources/:sourceId/runs/:runId',
    operation: 'runs.read',
    response: responses.run,
    summary: 'Read a run',
    status: 200,
    handle: (s, c) => s.runs.getRun(c.tenantId, c.params['sourceId']!, c.params['runId']!),
  },
  {
    method: 'GET',
    path: '/sources/:sourceId/runs/:runId/diff',
    operation: 'runs.diff',
    response: responses.diff,
    summary: "A run's changes in key order; ?change= keeps one kind",
    query: [...LIST, 'change'],
    status: 200,
    handle: (s, c) => s.runs.runDiff(c.tenantId, c.params['sourceId']!, c.params['runId']!, c.query),
  },
  {
    method: 'POST',
    path: '/sources/:sourceId/runs/:runId/apply',
    operation: 'runs.apply',
    response: responses.run,
    errors: [409],
    summary: 'Apply a completed run: build generation N+1 and make it active',
    status: 202,
    idempotent: true,
    handle: (s, c) => s.runs.applyRun(c.tenantId, c.params['sourceId']!, c.params['runId']!, c.key),
  },
  {
    method: 'GET',
    path: '/sources/:sourceId/generations/active',
    operation: 'generations.read',
    response: responses.generation,
    summary: "The source's active generation",
    status: 200,
    handle: (s, c) => s.runs.activeGeneration(c.tenantId, c.params['sourceId']!),
  },
  {
    method: 'GET',
    path: '/sources/:sourceId/generations',
    operation: 'generations.read',
    response: responses.generations,
    summary: 'List generations, newest first',
    query: LIST,
    status: 200,
    handle: (s, c) => s.runs.listGenerations(c.tenantId, c.params['sourceId']!, c.query),
  },
];

/**
 * The data plane as a Fastify plugin, in a scope of its own: JSON bodies up to 10 MiB, each
 * route behind keyhook's `requireScope` with its operation's scope, and errors in keyhook's
 * envelope (the data plane's own codes beside keyhook's).
 */
export function stagingRoutes(keyhook: ReferenceKeyhook, staging: Staging): FastifyPluginAsync {
  return async (scope: FastifyInstance) => {
    // JSON only: Fastify's text/plain parser would hand a string to the validation (400), not a 415.
    scope.removeContentTypeParser('text/plain');
    // A compressed body would reach the JSON parser as bytes it cannot read: refuse it plainly.
    // preParsing, not onRequest: after the route's guard (an anonymous caller hears 401 first),
    // before any byte of the body is read.
    scope.addHook('preParsing', async (request) => {
      const encoding = request.headers['content-encoding'];
      if (encoding !== undefined && encoding.toLowerCase() !== 'identity') {
        throw new KeyhookError('unsupported_media_type', 'Compressed request bodies are not accepted.');
      }
    });
    scope.setErrorHandler(async (error, _request, reply) => {
      if (error instanceof Replay) return send(reply, error.response);
      if (error instanceof StagingError) return send(reply, error.toResponse());
      if (isKeyhookError(error)) return send(reply, errorResponse(error));
      throw error; // Fastify's own (body too large, bad JSON, media type): the app's handler maps them
    });
    for (const route of DATA_PLANE_ROUTES) {
      scope.route({
        method: route.method,
        url: route.path,
        bodyLimit: MAX_DATA_BODY_BYTES,
        // onRequest: the caller is refused before a byte of its body is read (or parsed).
        onRequest: requireScope(keyhook, scopeFor(route.operation)),
        handler: async (request: FastifyRequest, reply: FastifyReply) => {
          const apiKey = request.apiKey as ApiKeyContext;
          const url = request.url;
          const queryAt = url.indexOf('?');
          const call: Call = {
            tenantId: apiKey.tenantId,
            params: request.params as Record<string, string>,
            query: new URLSearchParams(queryAt === -1 ? '' : url.slice(queryAt + 1)),
            body: request.body,
          };
          if (route.idempotent) {
            // Per tenant, not per API key: a retry under another key of the tenant is the same client.
            call.key = staging.keys.of(call.tenantId, request.headers['idempotency-key'], {
              route: `${route.method} ${route.path}`,
              params: call.params,
              body: call.body,
              status: route.status,
            });
            // A key used before answers now, before the body is validated (docs/http-api.md §4.3).
            await call.key?.check();
          }
          const result = await route.handle(staging, call);
          if (route.status === 204) return reply.code(204).send();
          const created =
            route.created !== undefined && (result as { result?: unknown }).result === 'created';
          return reply.code(created ? route.created! : route.status).send(result);
        },
      });
    }
  };
}

function send(reply: FastifyReply, response: KeyhookResponse): FastifyReply {
  return reply
    .code(response.status)
    .headers(response.headers)
    .send(response.body ?? undefined);
}
