import { z } from 'zod';
import type { EventTypeCatalog } from '../catalog/events.js';
import type { Clock, RandomBytes } from '../clock.js';
import { KeyhookError } from '../errors.js';
import { isWellFormedId, newId } from '../ids.js';
import type { DeliveryRecord, EventRecord, Store } from '../store/types.js';
import { parseOrThrow, validationFailed } from '../validation.js';

/** `POST /admin/webhooks/{id}/test` for a host's events: a type of the catalog, and its data or none. */
export function testEventSchemaFor(catalog: EventTypeCatalog) {
  return z.strictObject({
    type: catalog.schema,
    data: z.record(z.string(), z.unknown()).optional().meta({
      description:
        "The event's data, checked by its type's schema as at publish. Default: the type's example, as the event catalog shows it.",
    }),
  });
}

/** What `webhooks.sendTestEvent` takes: an event type of the catalog, whatever the endpoint subscribes to. */
export interface TestEventInput {
  /** Any event type of the catalog. */
  type: string;
  /** The event's `data`, checked by the type's schema. Default: the type's example. */
  data?: Record<string, unknown> | undefined;
}

/** A test event as written: the event, and its one delivery, to the endpoint named. */
export interface SentTestEvent {
  /** The event as stored: its minted `evt_` id and the body the receiver gets. */
  event: EventRecord;
  /** Its one delivery: `pending` and due now, or `held` while the endpoint is disabled. */
  delivery: DeliveryRecord;
}

export interface TestEventDeps {
  store: Store;
  catalog: EventTypeCatalog;
  clock: Clock;
  randomBytes: RandomBytes;
  /** The event as publish makes it: validated by its type's schema, an `evt_` id minted, its body serialised. */
  prepare(
    input: { tenantId: string; type: string; data: Record<string, unknown> },
    kind: 'test',
  ): EventRecord;
  /** Called after a test event whose delivery is due now, so workers in this process lease it. */
  onPublished(): void;
}

const notFound = () => new KeyhookError('not_found', 'No webhook with that id.');

/**
 * Test events (docs/decisions.md §8.16): one event of any catalog type, delivered to one endpoint
 * only, through the normal delivery path. Not idempotent: each call is a new test.
 */
export class TestEventSender {
  /** The request body, for the host's event types: its JSON Schema is the document's. */
  readonly schema: ReturnType<typeof testEventSchemaFor>;

  constructor(private readonly deps: TestEventDeps) {
    this.schema = testEventSchemaFor(deps.catalog);
  }

  async send(tenantId: string, webhookId: string, input: TestEventInput): Promise<SentTestEvent> {
    const { type, data } = parseOrThrow(this.schema, input);
    const chosen = data ?? this.deps.catalog.exampleData(type);
    if (chosen === undefined) {
      throw validationFailed([
        { path: 'data', message: `is required: ${type} has no example that passes its schema` },
      ]);
    }
    // Its id says it is a test (`evt_test_…`), in the log and to the receiver.
    const event = this.deps.prepare({ tenantId, type, data: chosen }, 'test');
    if (!isWellFormedId(webhookId, 'wh')) throw notFound();
    const outcome = await this.deps.store.publishTestEvent(
      event,
      webhookId,
      newId('dlv', this.deps.clock, this.deps.randomBytes),
    );
    if (outcome.outcome === 'not_found') throw notFound();
    // Held on a disabled endpoint: nothing to wake anyone for until it is enabled.
    if (outcome.delivery.status === 'pending') this.deps.onPublished();
    return { event: outcome.event, delivery: outcome.delivery };
  }
}
