import { openApiDocument } from '@keyhook/core/http';
import { type InvoiceRoute, invoiceOperations } from './invoice-routes.js';
import type { InvoicesKeyhook } from './keyhook.js';

export const OPENAPI_PATH = '/openapi.json';

/**
 * The whole API in one OpenAPI 3.1 document: keyhook's admin routes, the app's invoice routes
 * (bodies from the zod schemas they validate with, each with its scope), and the events a
 * webhook receives under `webhooks`, signed with this app's header names.
 */
export function invoicesApiDocument(
  keyhook: InvoicesKeyhook,
  routes: readonly InvoiceRoute[],
  prefix: string,
): Record<string, unknown> {
  return openApiDocument(
    {
      title: 'Invoices API',
      version: '1',
      description:
        'Invoices behind API keys with scopes, admin endpoints for keys and webhooks, and signed invoice.created / invoice.paid webhooks. Errors share one envelope: { "error": { "code", "message", "details"? } }.',
    },
    [
      ...keyhook.operations(prefix),
      ...invoiceOperations(routes, prefix),
      {
        method: 'GET',
        path: `${prefix}${OPENAPI_PATH}`,
        summary: 'This document',
        success: 200,
        auth: 'none',
        tag: 'Operations',
      },
    ],
    keyhook,
  );
}
