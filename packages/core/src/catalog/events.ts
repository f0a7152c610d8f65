import { z } from 'zod';

/** An event type a host publishes: what it means, and the schema its `data` must pass. */
export interface EventDefinition {
  description?: string | undefined;
  /**
   * Validates `data` at publish, and its output is what is sent (a zod object strips keys it
   * does not declare). Its JSON Schema describes the event in the OpenAPI document. Without
   * one, any JSON object is accepted.
   */
  data?: z.ZodType<Record<string, unknown>> | undefined;
}

/** A host's event types, each declared once: `{ 'invoice.paid': { description, data: z.object(…) } }`. */
export type EventCatalog = Record<string, EventDefinition>;

/** What `publish` takes as `data` for `Type`: the schema's input, or any JSON object. */
export type EventInput<Catalog extends EventCatalog, Type extends keyof Catalog> = Catalog[Type] extends {
  data: infer Schema extends z.ZodType;
}
  ? z.input<Schema>
  : Record<string, unknown>;

/** What a receiver gets as `data` for `Type`: the schema's output, or any JSON object. */
export type EventData<Catalog extends EventCatalog, Type extends keyof Catalog> = Catalog[Type] extends {
  data: infer Schema extends z.ZodType;
}
  ? z.output<Schema>
  : Record<string, unknown>;

/**
 * Type → `data` for every event of a catalog: the type-only map `@keyhook/webhook-verify`
 * takes, so `verify<EventMap<typeof events>>(…)` narrows `data` by `type`.
 */
export type EventMap<Catalog extends EventCatalog> = {
  [Type in keyof Catalog & string]: EventData<Catalog, Type>;
};

/** Event types go in headers, URLs of docs and the twin key's comma list: 1–100 of `A–Z a–z 0–9 . _ : -`. */
export const EVENT_TYPE_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,99}$/;

/** One event type as the document describes it (http/openapi-document.ts). */
export interface EventDoc {
  type: string;
  description?: string | undefined;
  data?: z.ZodType | undefined;
}

/** A host's events, checked once at start: what publish accepts and webhooks may subscribe to. */
export class EventTypeCatalog {
  readonly types: readonly string[];
  /** One event type, as publish and the webhook routes validate it (400 names the allowed values). */
  readonly schema: z.ZodType<string>;
  private readonly definitions: ReadonlyMap<string, EventDefinition>;

  constructor(catalog: EventCatalog = {}) {
    if (typeof catalog !== 'object' || catalog === null || Array.isArray(catalog)) {
      throw new TypeError("keyhook: events must be an object of event types, { 'invoice.paid': { … } }");
    }
    const definitions = new Map<string, EventDefinition>();
    for (const [type, definition] of Object.entries(catalog)) {
      if (!EVENT_TYPE_PATTERN.test(type)) {
        throw new TypeError(
          `keyhook: event type ${JSON.stringify(type)} is not an event type (1–100 of A–Z a–z 0–9 . _ : -, starting with a letter or digit)`,
        );
      }
      if (typeof definition !== 'object' || definition === null) {
        throw new TypeError(`keyhook: event ${type} must be declared as an object ({ description?, data? })`);
      }
      if (definition.data !== undefined && typeof (definition.data as z.ZodType).safeParse !== 'function') {
        throw new TypeError(`keyhook: event ${type}: data must be a zod schema`);
      }
      definitions.set(type, definition);
    }
    this.definitions = definitions;
    this.types = [...definitions.keys()];
    this.schema =
      this.types.length === 0
        ? z.never({ error: 'this API declares no event types (createKeyhook({ events }))' })
        : z.enum(this.types as [string, ...string[]]);
  }

  has(type: unknown): boolean {
    return typeof type === 'string' && this.definitions.has(type);
  }

  /** The schema for `type`'s data, if it declares one. */
  dataSchema(type: string): z.ZodType<Record<string, unknown>> | undefined {
    return this.definitions.get(type)?.data;
  }

  docs(): EventDoc[] {
    return this.types.map((type) => {
      const { description, data } = this.definitions.get(type)!;
      return { type, description, data };
    });
  }
}
