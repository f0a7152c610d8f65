import { z } from 'zod';
import { deliveryViewSchema, toDeliveryView } from '../delivery/delivery-view.js';
import type { Idempotency } from '../idempotency/idempotency-service.js';
import type { IssuedWebhook } from '../service-interfaces.js';
import { rotateWebhookSchema } from '../webhooks/webhook-schemas.js';
import type { WebhookService } from '../webhooks/webhook-service.js';
import { issuedWebhookSchema, toWebhookView, webhookViewSchema } from '../webhooks/webhook-view.js';
import { header } from './headers.js';
import { LIST_QUERY, pageSchema, parsePageRequest, toPage } from './pagination.js';
import { emptyResponse, jsonResponse } from './response.js';
import type { RouteSpec } from './route-spec.js';

const issuedResponse = (status: number, { webhook, secret }: IssuedWebhook) =>
  jsonResponse(status, { webhook: toWebhookView(webhook), secret });

const oneWebhook = z.object({ webhook: webhookViewSchema });

/** A test event's answer: the event, and its delivery as the delivery routes show it. */
const sentTestEvent = z.object({
  event: z.object({ id: z.string(), type: z.string(), createdAt: z.iso.datetime() }),
  delivery: deliveryViewSchema,
});

/**
 * The admin webhook endpoints (docs/http-api.md §4.2; success codes and bodies from
 * docs/decisions.md §1.7).
 */
export function adminWebhookRoutes(
  webhooks: WebhookService,
  idempotency: Idempotency,
  listByteBudget: number,
): RouteSpec[] {
  return [
    {
      method: 'POST',
      path: '/admin/webhooks',
      doc: {
        summary: 'Register a webhook endpoint; its signing secret is shown once',
        success: 201,
        response: issuedWebhookSchema,
        requestBody: webhooks.createSchema,
        idempotent: true,
        // webhook_conflict: an active endpoint has this url and event set.
        errors: [409],
      },
      auth: 'admin',
      body: 'json',
      run: ({ admin, body, request }) =>
        idempotency.run(
          admin.tenantId,
          header(request.headers, 'idempotency-key'),
          'POST /admin/webhooks',
          body,
          async (claim) => {
            // With a key, the 201 is stored in the same transaction as the webhook
            // (docs/http-api.md §4.3 rule 2).
            const completeWith = claim
              ? (issued: IssuedWebhook) => claim.completion(issuedResponse(201, issued))
              : undefined;
            return issuedResponse(201, await webhooks.create(admin.tenantId, body as never, completeWith));
          },
        ),
    },
    {
      method: 'GET',
      path: '/admin/webhooks',
      doc: {
        summary: 'List webhook endpoints, newest first',
        success: 200,
        response: pageSchema(webhookViewSchema),
        query: LIST_QUERY,
      },
      auth: 'admin',
      body: 'none',
      run: async ({ admin, query }) => {
        const page = parsePageRequest(query, 'wh');
        const rows = await webhooks.list(admin.tenantId, page.limit + 1, page.before);
        return jsonResponse(200, toPage(rows, page.limit, toWebhookView, listByteBudget));
      },
    },
    {
      method: 'GET',
      path: '/admin/webhooks/:webhookId',
      doc: { summary: 'Read a webhook endpoint', success: 200, response: oneWebhook },
      auth: 'admin',
      body: 'none',
      run: async ({ admin, params }) =>
        jsonResponse(200, { webhook: toWebhookView(await webhooks.get(admin.tenantId, params.webhookId!)) }),
    },
    {
      // docs/http-api.md §4.3 rule 7: disabling (and rotating) ignores Idempotency-Key.
      method: 'PATCH',
      path: '/admin/webhooks/:webhookId',
      doc: {
        summary: 'Disable or re-enable an endpoint, or change its url and events',
        success: 200,
        response: oneWebhook,
        requestBody: webhooks.updateSchema,
        // webhook_conflict: re-enabling, or moving, onto an active twin.
        errors: [409],
      },
      auth: 'admin',
      body: 'json',
      run: async ({ admin, params, body }) =>
        jsonResponse(200, {
          webhook: toWebhookView(await webhooks.update(admin.tenantId, params.webhookId!, body as never)),
        }),
    },
    {
      method: 'POST',
      path: '/admin/webhooks/:webhookId/rotate',
      doc: {
        summary: "Rotate an endpoint's signing secret, optionally keeping the old one signing for a while",
        success: 200,
        response: issuedWebhookSchema,
        requestBody: rotateWebhookSchema,
      },
      auth: 'admin',
      // No body, or `{ overlapSeconds }`. Outside idempotency, as docs/http-api.md §4.3 rule 7 says
      // of rotation.
      body: 'optional-json',
      run: async ({ admin, params, body }) =>
        issuedResponse(
          200,
          // No body is no options; a JSON `null` is a body, and refused as one.
          await webhooks.rotate(admin.tenantId, params.webhookId!, (body === undefined ? {} : body) as never),
        ),
    },
    {
      method: 'POST',
      path: '/admin/webhooks/:webhookId/test',
      doc: {
        summary: 'Send a test event of any catalog type to this endpoint only',
        success: 202,
        response: sentTestEvent,
        requestBody: webhooks.testEventSchema,
      },
      auth: 'admin',
      // Not idempotent (docs/decisions.md §8.16): each call is a new test, so no Idempotency-Key.
      body: 'json',
      run: async ({ admin, params, body }) => {
        const { event, delivery } = await webhooks.sendTestEvent(
          admin.tenantId,
          params.webhookId!,
          body as never,
        );
        return jsonResponse(202, {
          event: { id: event.id, type: event.type, createdAt: event.createdAt.toISOString() },
          delivery: toDeliveryView(delivery),
        });
      },
    },
    {
      method: 'DELETE',
      path: '/admin/webhooks/:webhookId',
      doc: { summary: 'Delete an endpoint and cancel its deliveries', success: 204 },
      auth: 'admin',
      body: 'none',
      run: async ({ admin, params }) => {
        await webhooks.delete(admin.tenantId, params.webhookId!);
        return emptyResponse(204);
      },
    },
  ];
}
