import { requireScope } from '@keyhook/adapter-fastify';
import type { ScopeOf } from '@keyhook/core';
import {
  type ApiOperation,
  errorEnvelope,
  pageOf,
  parseListCursor,
  parseListLimit,
  parseOrThrow,
  validationFailed,
} from '@keyhook/core/http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { send } from './error-replies.js';
import { INVOICE_ID, type Invoices, toInvoiceView } from './invoices.js';
import type { InvoicesKeyhook } from './keyhook.js';

/** The `integer` column's ceiling. */
export const MAX_AMOUNT_CENTS = 2_147_483_647;

/** `POST /invoices`: what the route validates, and what the OpenAPI document shows. */
export const createInvoiceBody = z.strictObject({
  customer: z
    .string()
    .trim()
    .min(1)
    .max(200)
    // PostgreSQL text cannot hold U+0000: refused here, not as a failed INSERT.
    .refine((text) => !text.includes('\u0000'), 'must not contain U+0000'),
  amountCents: z.number().int().min(1).max(MAX_AMOUNT_CENTS),
});

const invoiceParams = z.object({ invoiceId: z.string() });

/** A query parameter given at most once: `?limit=1&limit=2` is refused, not read as either. */
function queryValue(request: FastifyRequest, name: string): string | null {
  const value = (request.query as Record<string, unknown>)[name];
  if (value === undefined) return null;
  if (typeof value !== 'string') throw validationFailed([{ path: name, message: 'must be given once' }]);
  return value;
}

/** One of the app's own routes: how it is served, guarded and documented, in one place. */
export interface InvoiceRoute {
  method: 'GET' | 'POST';
  /** Below the mount point, `:invoiceId` marking the parameter. */
  path: string;
  summary: string;
  success: number;
  /** One of the keyhook's scopes: a name it does not declare does not compile. */
  scope: ScopeOf<InvoicesKeyhook>;
  body?: z.ZodType;
  query?: readonly string[];
  handler(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply>;
}

export function invoiceRoutes(invoices: Invoices): InvoiceRoute[] {
  // requireScope ran first and set the verified key: the tenant is the key's, never the client's say.
  const tenantOf = (request: FastifyRequest) => request.apiKey!.tenantId;
  return [
    {
      method: 'POST',
      path: '/invoices',
      summary: 'Create a draft invoice; invoice.created is published in the same transaction',
      success: 201,
      scope: 'invoices:write',
      body: createInvoiceBody,
      handler: async (request, reply) => {
        const input = parseOrThrow(createInvoiceBody, request.body);
        const invoice = await invoices.create(tenantOf(request), input);
        return reply.code(201).send({ invoice: toInvoiceView(invoice) });
      },
    },
    {
      method: 'POST',
      path: '/invoices/:invoiceId/pay',
      summary: 'Mark a draft invoice paid; invoice.paid is published in the same transaction',
      success: 200,
      scope: 'invoices:write',
      handler: async (request, reply) => {
        const { invoiceId } = parseOrThrow(invoiceParams, request.params);
        if (!INVOICE_ID.test(invoiceId)) return send(reply, notFound(invoiceId));
        const result = await invoices.pay(tenantOf(request), invoiceId);
        if (result.outcome === 'not_found') return send(reply, notFound(invoiceId));
        if (result.outcome === 'already_paid') {
          return send(
            reply,
            errorEnvelope(409, 'invoice_already_paid', `Invoice ${invoiceId} is already paid.`, [
              { path: 'invoiceId', message: `paid at ${result.invoice.paidAt?.toISOString()}` },
            ]),
          );
        }
        return reply.send({ invoice: toInvoiceView(result.invoice) });
      },
    },
    {
      method: 'GET',
      path: '/invoices/:invoiceId',
      summary: 'Read one invoice',
      success: 200,
      scope: 'invoices:read',
      handler: async (request, reply) => {
        const { invoiceId } = parseOrThrow(invoiceParams, request.params);
        if (!INVOICE_ID.test(invoiceId)) return send(reply, notFound(invoiceId));
        const invoice = await invoices.get(tenantOf(request), invoiceId);
        if (invoice === undefined) return send(reply, notFound(invoiceId));
        return reply.send({ invoice: toInvoiceView(invoice) });
      },
    },
    {
      method: 'GET',
      path: '/invoices',
      summary: "The tenant's invoices, newest first, a page at a time: { data, nextCursor }",
      success: 200,
      scope: 'invoices:read',
      query: ['limit', 'cursor'],
      handler: async (request, reply) => {
        const limit = parseListLimit(queryValue(request, 'limit'));
        const after = parseListCursor(queryValue(request, 'cursor'), (id) => INVOICE_ID.test(id));
        // One row more than the page: it only says whether there is a next page.
        const rows = await invoices.list(tenantOf(request), limit + 1, after);
        return reply.send(pageOf(rows, limit, toInvoiceView, (invoice) => invoice.id));
      },
    },
  ];
}

/** Each route behind `requireScope`, which answers 401/403 in keyhook's envelope before the handler runs. */
export function registerInvoiceRoutes(
  app: FastifyInstance,
  keyhook: InvoicesKeyhook,
  routes: readonly InvoiceRoute[],
  prefix: string,
): void {
  for (const route of routes) {
    app.route({
      method: route.method,
      url: `${prefix}${route.path}`,
      // onRequest: a caller is refused before a byte of its body is read.
      onRequest: requireScope(keyhook, route.scope),
      handler: route.handler,
    });
  }
}

/** The routes as `openApiDocument` describes them, beside keyhook's own operations. */
export function invoiceOperations(routes: readonly InvoiceRoute[], prefix: string): ApiOperation[] {
  return routes.map((route) => ({
    method: route.method,
    path: `${prefix}${route.path}`,
    summary: route.summary,
    success: route.success,
    requestBody: route.body,
    query: route.query,
    auth: 'apiKey',
    scope: route.scope,
    tag: 'Invoices',
  }));
}

// Unknown and another tenant's invoice read alike, so ids of other tenants cannot be probed.
const notFound = (invoiceId: string) => errorEnvelope(404, 'not_found', `No invoice ${invoiceId}.`);
