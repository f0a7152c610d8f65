import type { Keyhook } from '@keyhook/core';
import { type ApiOperation, openApiDocument } from '@keyhook/core/http';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { DATA_PLANE_ROUTES, scopeFor } from './data-plane/index.js';

export const OPENAPI_PATH = 'openapi.json';
export const DOCS_PATH = 'docs';

/**
 * The whole API as one OpenAPI 3.1 document: keyhook's own routes (admin, whoami) and the
 * customer portal's JSON API as core describes them, the data plane from the route table the
 * server registers, and this server's own. Request bodies come from the zod schemas the routes
 * validate with.
 */
export function apiDocument(keyhook: Keyhook, prefix: string): Record<string, unknown> {
  const dataPlane: ApiOperation[] = DATA_PLANE_ROUTES.map((route) => ({
    method: route.method,
    path: `${prefix}${route.path}`,
    summary: route.summary,
    success: route.created === undefined ? route.status : [route.status, route.created],
    response: route.response,
    // A malformed Idempotency-Key is a 400 on a route without a body too (apply, deactivate).
    errors: [...(route.errors ?? []), ...(route.body ? [413] : []), ...(route.idempotent ? [400] : [])],
    requestBody: route.body,
    requestBodyOptional: route.bodyOptional,
    query: route.query,
    auth: 'apiKey',
    scope: scopeFor(route.operation),
    idempotent: route.idempotent,
    tag: 'Data plane',
  }));
  const own: ApiOperation[] = [
    {
      method: 'GET',
      path: '/healthz',
      summary: '200 while the store answers, 503 otherwise',
      success: 200,
      response: z.object({ status: z.literal('ok') }),
      errors: [503],
      auth: 'none',
      tag: 'Operations',
    },
    {
      method: 'GET',
      path: `${prefix}/${OPENAPI_PATH}`,
      summary: 'This document',
      success: 200,
      auth: 'none',
      tag: 'Operations',
    },
    {
      method: 'GET',
      path: `${prefix}/${DOCS_PATH}`,
      summary: 'This document as a page to read',
      success: 200,
      auth: 'none',
      tag: 'Operations',
      produces: 'text/html',
    },
  ];
  return openApiDocument(
    {
      title: 'keyhook reference server',
      version: '1',
      description:
        'API keys, admin endpoints and signed webhooks (keyhook), and the reference data plane: sources, items, runs and generations. Errors share one envelope: { "error": { "code", "message", "details"? } }.',
    },
    [...keyhook.operations(prefix), ...keyhook.portal.api.operations(), ...dataPlane, ...own],
    keyhook,
  );
}

/** GET `<prefix>/openapi.json` and a docs page rendered from it, with no script and nothing fetched from elsewhere. */
export function registerApiDocs(app: FastifyInstance, keyhook: Keyhook, prefix: string): void {
  const document = apiDocument(keyhook, prefix);
  const json = JSON.stringify(document);
  const page = docsPage(document);
  app.get(`${prefix}/${OPENAPI_PATH}`, async (_request, reply) =>
    reply.header('content-type', 'application/json; charset=utf-8').send(json),
  );
  app.get(`${prefix}/${DOCS_PATH}`, async (_request, reply) =>
    reply.header('content-type', 'text/html; charset=utf-8').send(page),
  );
}

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

function docsPage(document: Record<string, unknown>): string {
  const info = document['info'] as { title: string; description: string };
  const paths = document['paths'] as Record<string, Record<string, Record<string, unknown>>>;
  const byTag = new Map<string, string[]>();
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const tag = (operation['tags'] as string[])[0]!;
      const scope = operation['x-required-scope'] as string | undefined;
      const security = operation['security'] as Record<string, unknown>[] | undefined;
      const auth = scope
        ? `API key with <code>${escapeHtml(scope)}</code>`
        : security
          ? Object.keys(security[0]!)[0]
          : 'none';
      const body = (operation['requestBody'] as { content: Record<string, { schema: unknown }> } | undefined)
        ?.content['application/json']?.schema;
      const success = Object.keys(operation['responses'] as object).find((key) => key !== 'default');
      const entry =
        `<section><h3><span class="m ${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h3>` +
        `<p>${escapeHtml(String(operation['summary']))}</p><p class="meta">auth: ${auth} · success: ${success}</p>` +
        (body
          ? `<details><summary>request body</summary><pre>${escapeHtml(JSON.stringify(body, null, 2))}</pre></details>`
          : '') +
        '</section>';
      byTag.set(tag, [...(byTag.get(tag) ?? []), entry]);
    }
  }
  const sections = [...byTag]
    .map(([tag, entries]) => `<h2>${escapeHtml(tag)}</h2>${entries.join('')}`)
    .join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escapeHtml(info.title)}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:960px;margin:2em auto;padding:0 1em}code,pre{font:13px ui-monospace,monospace}
pre{background:#f6f8fa;padding:.75em;overflow:auto}.m{display:inline-block;min-width:4.5em;font-size:12px;color:#fff;border-radius:3px;text-align:center}
.get{background:#2f7d32}.post{background:#1565c0}.put{background:#6a1b9a}.patch{background:#ef6c00}.delete{background:#c62828}.meta{color:#555;font-size:13px}</style>
</head><body><h1>${escapeHtml(info.title)}</h1><p>${escapeHtml(info.description)}</p>
<p>The machine-readable document: <a href="${OPENAPI_PATH}">${OPENAPI_PATH}</a> (OpenAPI 3.1).</p>${sections}</body></html>`;
}
