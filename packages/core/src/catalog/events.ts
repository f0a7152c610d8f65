import { z } from 'zod';
import { jsonSchemaOf } from '../http/openapi-document.js';
import { exampleDataFor } from './example-data.js';

/** An event type a host publishes: what it means, and the schema its `data` must pass. */
export interface EventDefinition {
  description?: string | undefined;
  /**
   * Validates `data` at publish, and its output is what is sent (a zod object strips keys it
   * does not declare). Its JSON Schema describes the event in the OpenAPI document. Without
   * one, any JSON object is accepted.
   */
  data?: z.ZodType<Record<string, unknown>> | undefined;
  /**
   * An example `data` for the type: what the event catalog shows (`keyhook.eventCatalog()`) and
   * a test event sends when it is given no data. It must pass `data`, checked at createKeyhook.
   * Without one, an example is made from `data`'s JSON Schema (docs/decisions.md §8.16).
   */
  example?: Record<string, unknown> | undefined;
}

/** One event type as the event catalog page shows it (`keyhook.eventCatalog()`), as the portal's session answers it. */
export const eventCatalogEntrySchema = z.object({
  type: z.string().meta({ description: 'The event type, as declared.' }),
  description: z
    .string()
    .optional()
    .meta({ description: 'The declared description; absent when there is none.' }),
  schema: z.record(z.string(), z.unknown()).nullable().meta({
    description:
      'The JSON Schema (2020-12) of the `data` a receiver gets, as the OpenAPI document has it; null without a schema.',
  }),
  example: z.record(z.string(), z.unknown()).nullable().meta({
    description:
      "The `data` a receiver gets when the type's example is sent: the host's example or one made from the schema, through the schema. Null when the schema admits no example that can be made (a test event of the type then needs its data).",
  }),
});

export type EventCatalogEntry = z.output<typeof eventCatalogEntrySchema>;

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

/**
 * The host's `eventCatalog` option, or its deprecated name `events`, checked once at start. Both
 * given is a TypeError.
 */
export function eventCatalogOption(options: {
  eventCatalog?: EventCatalog;
  events?: EventCatalog;
}): EventTypeCatalog {
  const { eventCatalog, events } = options;
  if (eventCatalog !== undefined && events !== undefined) {
    throw new TypeError('keyhook: give eventCatalog or events (its deprecated name), not both');
  }
  return new EventTypeCatalog(eventCatalog ?? events);
}

/** A host's event catalog, checked once at start: what publish accepts and webhooks may subscribe to. */
export class EventTypeCatalog {
  readonly types: readonly string[];
  /** One event type, as publish and the webhook routes validate it (400 names the allowed values). */
  readonly schema: z.ZodType<string>;
  private readonly definitions: ReadonlyMap<string, EventDefinition>;
  /** Each type's example, the host's (checked at start) or one made on first use; null: none can be. */
  private readonly examples = new Map<string, Example | null>();
  private entryList: EventCatalogEntry[] | undefined;

  constructor(catalog: EventCatalog = {}) {
    if (typeof catalog !== 'object' || catalog === null || Array.isArray(catalog)) {
      throw new TypeError(
        "keyhook: eventCatalog must be an object of event types, { 'invoice.paid': { … } }",
      );
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
      if (definition.example !== undefined) this.examples.set(type, checkedExample(type, definition));
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

  /** The data a test event of `type` sends when given none (the schema's input); undefined when there is no example. */
  exampleData(type: string): Record<string, unknown> | undefined {
    return this.exampleOf(type)?.data;
  }

  /** The catalog as hosts and the portal show it: JSON Schemas made once, copies handed out. */
  entries(): EventCatalogEntry[] {
    this.entryList ??= this.types.map((type) => {
      const { description, data } = this.definitions.get(type)!;
      return {
        type,
        ...(description !== undefined && { description }),
        schema: data ? jsonSchemaOf(data, 'output') : null,
        example: this.exampleOf(type)?.sent ?? null,
      };
    });
    return structuredClone(this.entryList);
  }

  private exampleOf(type: string): Example | undefined {
    if (!this.examples.has(type)) {
      const schema = this.dataSchema(type);
      const data = exampleDataFor(schema);
      const sent = data === undefined ? undefined : sentForm(schema, data);
      this.examples.set(type, data === undefined || sent === undefined ? null : { data, sent });
    }
    return this.examples.get(type) ?? undefined;
  }
}

/** A type's example: the `data` a test event sends, and what a receiver gets of it. */
interface Example {
  data: Record<string, unknown>;
  sent: Record<string, unknown>;
}

/** The host's example, or a TypeError naming the type: it must pass the schema and yield a JSON object. */
function checkedExample(type: string, definition: EventDefinition): Example {
  const { example, data: schema } = definition;
  if (typeof example !== 'object' || example === null || Array.isArray(example)) {
    throw new TypeError(`keyhook: event ${type}: example must be an object, the event's data`);
  }
  const result = schema?.safeParse(example);
  if (result && !result.success) {
    const issues = result.error.issues.map(
      (issue) => `${['example', ...issue.path.map(String)].join('.')}: ${issue.message}`,
    );
    throw new TypeError(
      `keyhook: event ${type}: example does not pass its data schema (${issues.join('; ')})`,
    );
  }
  const sent = sentForm(schema, example);
  if (sent === undefined) {
    throw new TypeError(`keyhook: event ${type}: example must be sendable as a JSON object`);
  }
  return { data: example, sent };
}

/** What a receiver gets as `data` for `example`: the schema's output as JSON; undefined when that is not a JSON object. */
function sentForm(
  schema: z.ZodType<Record<string, unknown>> | undefined,
  example: Record<string, unknown>,
): Record<string, unknown> | undefined {
  try {
    const output = schema ? schema.parse(example) : example;
    const json: unknown = JSON.parse(JSON.stringify(output));
    return typeof json === 'object' && json !== null && !Array.isArray(json)
      ? (json as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined; // refused, or not JSON (a cycle, a BigInt)
  }
}
