import { z } from 'zod';
import { recoverSchema } from '../delivery/delivery-service.js';
import {
  deliveryDetailViewSchema,
  deliveryViewSchema,
  toDeliveryDetailView,
  toDeliveryView,
} from '../delivery/delivery-view.js';
import type { Deliveries } from '../service-interfaces.js';
import { LIST_QUERY, pageSchema, parsePageRequest, toPage } from './pagination.js';
import { jsonResponse } from './response.js';
import type { RouteSpec } from './route-spec.js';

/**
 * A webhook's deliveries (docs/http-api.md §4.4): list newest first with `?status=`, read with
 * attempts, retry.
 */
export function adminDeliveryRoutes(deliveries: Deliveries, listByteBudget: number): RouteSpec[] {
  return [
    {
      method: 'GET',
      path: '/admin/webhooks/:webhookId/deliveries',
      doc: {
        summary: "List an endpoint's deliveries, newest first",
        success: 200,
        response: pageSchema(deliveryViewSchema),
        query: [...LIST_QUERY, 'status', 'type', 'eventId', 'since', 'until'],
      },
      auth: 'admin',
      body: 'none',
      run: async ({ admin, params, query }) => {
        const page = parsePageRequest(query, 'dlv');
        const rows = await deliveries.list(admin.tenantId, params.webhookId!, page.limit + 1, page.before, {
          status: query.get('status'),
          type: query.get('type'),
          eventId: query.get('eventId'),
          since: query.get('since'),
          until: query.get('until'),
        });
        return jsonResponse(200, toPage(rows, page.limit, toDeliveryView, listByteBudget));
      },
    },
    {
      method: 'GET',
      path: '/admin/webhooks/:webhookId/deliveries/:deliveryId',
      doc: {
        summary: 'Read a delivery with its event and attempts',
        success: 200,
        response: deliveryDetailViewSchema,
      },
      auth: 'admin',
      body: 'none',
      run: async ({ admin, params }) =>
        jsonResponse(
          200,
          toDeliveryDetailView(await deliveries.get(admin.tenantId, params.webhookId!, params.deliveryId!)),
        ),
    },
    {
      method: 'POST',
      path: '/admin/webhooks/:webhookId/deliveries/:deliveryId/retry',
      doc: {
        summary: 'Queue a delivery again, now: retry, resend, or retry a scheduled one now',
        success: 202,
        response: z.object({ delivery: deliveryViewSchema }),
        // delivery_not_retryable: a pending, in-flight or held delivery is on its way already.
        errors: [409],
      },
      auth: 'admin',
      body: 'none',
      run: async ({ admin, params }) =>
        jsonResponse(202, {
          delivery: toDeliveryView(
            await deliveries.retry(admin.tenantId, params.webhookId!, params.deliveryId!),
          ),
        }),
    },
    {
      method: 'POST',
      path: '/admin/webhooks/:webhookId/recover',
      doc: {
        summary: "Queue again an endpoint's failed deliveries of a time window",
        success: 202,
        response: z.object({
          queued: z.int().meta({ description: 'How many failed deliveries were queued again.' }),
        }),
        requestBody: recoverSchema,
      },
      auth: 'admin',
      body: 'json',
      run: async ({ admin, params, body }) =>
        jsonResponse(202, {
          queued: await deliveries.recover(admin.tenantId, params.webhookId!, body as never),
        }),
    },
  ];
}
