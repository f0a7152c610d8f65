import type { Deliveries } from '../delivery/service.js';
import { toDeliveryDetailView, toDeliveryView } from '../delivery/view.js';
import { parsePageRequest, toPage } from './pagination.js';
import { jsonResponse } from './response.js';
import type { RouteSpec } from './route.js';

/** A webhook's deliveries (DESIGN.md §2): list newest first with `?status=`, read with attempts, retry. */
export function adminDeliveryRoutes(deliveries: Deliveries): RouteSpec[] {
  return [
    {
      method: 'GET',
      path: '/admin/webhooks/:webhookId/deliveries',
      auth: 'admin',
      body: 'none',
      run: async ({ admin, params, query }) => {
        const page = parsePageRequest(query, 'dlv');
        const rows = await deliveries.list(
          admin.tenantId,
          params.webhookId!,
          page.limit + 1,
          page.before,
          query.get('status'),
        );
        return jsonResponse(200, toPage(rows, page.limit, toDeliveryView));
      },
    },
    {
      method: 'GET',
      path: '/admin/webhooks/:webhookId/deliveries/:deliveryId',
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
      auth: 'admin',
      body: 'none',
      run: async ({ admin, params }) =>
        jsonResponse(202, {
          delivery: toDeliveryView(
            await deliveries.retry(admin.tenantId, params.webhookId!, params.deliveryId!),
          ),
        }),
    },
  ];
}
