import { z } from 'zod';
import type { EventCatalog, EventInput, EventTypeCatalog } from '../catalog/events.js';
import type { Clock, RandomBytes } from '../clock.js';
import { KeyhookError } from '../errors.js';
import { canonicalJson } from '../idempotency/canonical-json.js';
import { newId } from '../ids.js';
import type { EventPublisher } from '../service-interfaces.js';
import type {
  DeliveryRecord,
  EventRecord,
  LeasedDelivery,
  PublishLease,
  PublishOutcome,
  Store,
} from '../store/types.js';
import { activeTraceContext } from '../tracing.js';
import { parseOrThrow, storableText, validationFailed } from '../validation.js';
import { isTestEventId, TEST_EVENT_PREFIX } from './test-marker.js';

/** The largest serialised event body. Receivers buffer it whole to verify it. */
export const MAX_EVENT_BYTES = 256 * 1024;

/** Caller-chosen event ids: `evt_` and up to 100 URL-safe characters, so they travel in a header as they are. */
export const EVENT_ID_PATTERN = /^evt_[A-Za-z0-9_-]{1,100}$/;

const publishSchemaFor = (catalog: EventTypeCatalog) =>
  z.strictObject({
    tenantId: storableText().min(1).max(255),
    type: catalog.schema,
    data: z.record(z.string(), z.unknown()),
    id: z
      .string()
      .regex(EVENT_ID_PATTERN, 'must be evt_ followed by 1–100 of A–Z a–z 0–9 _ -')
      .refine((id) => !isTestEventId(id), `must not begin with ${TEST_EVENT_PREFIX}: it marks test events`)
      .optional(),
  });

/**
 * One event to publish: a type of the host's catalog, with the `data` its schema takes.
 * `PublishInput` alone takes any event type.
 */
export type PublishInput<
  Catalog extends EventCatalog = EventCatalog,
  Type extends keyof Catalog & string = keyof Catalog & string,
> = {
  [T in Type]: {
    tenantId: string;
    type: T;
    /** A JSON object: the event's `data`, checked by the type's schema when it declares one. */
    data: EventInput<Catalog, T>;
    /** Publishing the same id again is a no-op that returns the first event (idempotent). */
    id?: string | undefined;
  };
}[Type];

export interface PublishOptions {
  /**
   * The caller's own open transaction, for stores that can join one (store-postgres: a pg
   * client after BEGIN). The event and its deliveries then commit or roll back with it.
   */
  transaction?: unknown;
}

export interface PublishedEvent {
  event: EventRecord;
  /** The deliveries this call wrote; empty for a replay. */
  deliveries: DeliveryRecord[];
  /** True when the id was published before and nothing new was written. */
  replayed: boolean;
}

/**
 * Room a worker of this process set aside for the deliveries of one publish (the handoff):
 * the publish leases them to it in the same transaction, so their first attempt needs no lease
 * query. `accept` starts their attempts; `release` gives the room back when nothing came.
 */
export interface DeliveryHandoff {
  lease: PublishLease;
  accept(leased: readonly LeasedDelivery[]): void;
  /** Nothing was leased (a replayed event id). */
  release(): void;
  /** The publish failed: it may have committed its lease before its answer was lost (docs/decisions.md §8.4). */
  lost(): void;
}

export interface EventsDeps {
  store: Store;
  /** The event types publish accepts, and their data schemas. */
  catalog: EventTypeCatalog;
  clock: Clock;
  randomBytes: RandomBytes;
  /** Called after a publish that wrote deliveries due now, so workers in this process lease them. */
  onPublished(): void;
  /** A worker of this process with room for a handoff, if any. */
  handoff?(): DeliveryHandoff | undefined;
}

/** `events.publish` (docs/decisions.md §8.1), typed by the host's event catalog. */
export class EventService<Catalog extends EventCatalog = EventCatalog> implements EventPublisher<Catalog> {
  private readonly publishSchema: ReturnType<typeof publishSchemaFor>;

  constructor(private readonly deps: EventsDeps) {
    this.publishSchema = publishSchemaFor(deps.catalog);
  }

  /**
   * Writes the event and one delivery per subscribed endpoint in one transaction: pending for
   * an active endpoint, held for a disabled one. Idempotent on `id`: the same id with the same
   * type and data returns the first event; with another type or data it is refused with
   * `idempotency_conflict`, since a receiver deduplicating on the id would drop the second.
   */
  async publish<Type extends keyof Catalog & string>(
    input: PublishInput<Catalog, Type>,
    options: PublishOptions = {},
  ): Promise<PublishedEvent> {
    const event = this.prepare(input);
    // Never inside a caller's transaction: the worker would send what may still roll back.
    const handoff = options.transaction === undefined ? this.deps.handoff?.() : undefined;
    let outcome: PublishOutcome;
    try {
      outcome = await this.deps.store.publishEvent(
        event,
        this.newDeliveryId,
        options.transaction,
        handoff?.lease,
      );
    } catch (error) {
      handoff?.lost();
      throw error;
    }
    if (outcome.outcome === 'duplicate') handoff?.release();
    else handoff?.accept(outcome.leased);
    return this.settle(event, outcome);
  }

  /**
   * `publish` inside a synchronous transaction of yours, for stores whose driver is synchronous
   * (SQLite through better-sqlite3, when your transaction runs on the store's own connection):
   * the event and its deliveries are written now, on `transaction`, and commit or roll back with
   * it. It throws rather than rejects, so the transaction function sees every refusal and rolls
   * back. A store that cannot (Postgres: use `publish` with your client) throws a TypeError.
   */
  publishSync<Type extends keyof Catalog & string>(
    input: PublishInput<Catalog, Type>,
    options: { transaction: unknown },
  ): PublishedEvent {
    const event = this.prepare(input);
    return this.settle(
      event,
      this.deps.store.publishEventSync(event, this.newDeliveryId, options.transaction),
    );
  }

  private readonly newDeliveryId = () => newId('dlv', this.deps.clock, this.deps.randomBytes);

  /**
   * The event as it will be stored and sent: validated (its data by the type's schema, whose
   * output is what is sent), and its body serialised once. A refusal writes nothing. A test
   * event is made by it too (delivery/test-event.ts), so both follow one rule.
   */
  prepare(input: unknown, kind: 'event' | 'test' = 'event'): EventRecord {
    const parsed = parseOrThrow(this.publishSchema, input);
    const data = this.checkData(parsed.type, parsed.data);
    const createdAt = this.deps.clock.now();
    const minted = kind === 'test' ? TEST_EVENT_PREFIX.slice(0, -1) : 'evt';
    const id = parsed.id ?? newId(minted, this.deps.clock, this.deps.randomBytes);
    const payload = serialise({
      id,
      type: parsed.type,
      createdAt: createdAt.toISOString(),
      data,
    });
    return {
      id,
      tenantId: parsed.tenantId,
      type: parsed.type,
      payload,
      createdAt,
      traceContext: activeTraceContext(),
    };
  }

  private checkData(type: string, data: Record<string, unknown>): Record<string, unknown> {
    const schema = this.deps.catalog.dataSchema(type);
    if (schema === undefined) return data;
    const result = schema.safeParse(data);
    if (!result.success) {
      throw validationFailed(
        result.error.issues.map((issue) => ({
          path: ['data', ...issue.path.map(String)].join('.'),
          message: `${issue.message} (the ${type} schema)`,
        })),
      );
    }
    // A schema may transform, but what is sent must still be a JSON object.
    if (typeof result.data !== 'object' || result.data === null || Array.isArray(result.data)) {
      throw validationFailed([{ path: 'data', message: `the ${type} schema must produce an object` }]);
    }
    return result.data;
  }

  /** A replay returns the first event (or is refused when it differs); new work wakes the workers. */
  private settle(event: EventRecord, outcome: PublishOutcome): PublishedEvent {
    if (outcome.outcome === 'duplicate') {
      if (!samePublication(outcome.event, event)) {
        throw new KeyhookError(
          'idempotency_conflict',
          `An event with id ${event.id} was already published with another type or data.`,
        );
      }
      return { event: outcome.event, deliveries: [], replayed: true };
    }
    // A caller's transaction may still roll back: the lease that this wakes runs in a later turn,
    // after it ended, and finds nothing if it did.
    if (outcome.deliveries.some((delivery) => delivery.status === 'pending')) this.deps.onPublished();
    return { event: outcome.event, deliveries: outcome.deliveries, replayed: false };
  }
}

function serialise(body: {
  id: string;
  type: string;
  createdAt: string;
  data: Record<string, unknown>;
}): string {
  let payload: string;
  try {
    payload = JSON.stringify(body);
  } catch (error) {
    // A cycle or a BigInt: the caller's mistake, named as such.
    throw validationFailed([
      { path: 'data', message: `is not JSON-serialisable (${(error as Error).message})` },
    ]);
  }
  if (Buffer.byteLength(payload, 'utf8') > MAX_EVENT_BYTES) {
    throw validationFailed([{ path: 'data', message: `the event body exceeds ${MAX_EVENT_BYTES} bytes` }]);
  }
  return payload;
}

/** Same type and the same data, compared as canonical JSON (key order does not matter). */
function samePublication(stored: EventRecord, fresh: EventRecord): boolean {
  if (stored.type !== fresh.type) return false;
  const data = (payload: string) => canonicalJson((JSON.parse(payload) as { data: unknown }).data);
  return data(stored.payload) === data(fresh.payload);
}
