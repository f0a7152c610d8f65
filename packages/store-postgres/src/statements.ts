import { quoteSchema } from './schema-name.js';

/** The store's tables as its statements name them: schema-qualified, the schema quoted. */
export interface Tables {
  apiKeys: string;
  webhooks: string;
  events: string;
  deliveries: string;
  attempts: string;
  rates: string;
  idempotencyKeys: string;
  portalSessions: string;
}

export function tablesIn(schema: string): Tables {
  const quoted = quoteSchema(schema);
  return {
    apiKeys: `${quoted}.api_keys`,
    webhooks: `${quoted}.keyhook_webhooks`,
    events: `${quoted}.keyhook_events`,
    deliveries: `${quoted}.keyhook_deliveries`,
    attempts: `${quoted}.keyhook_delivery_attempts`,
    rates: `${quoted}.keyhook_endpoint_rates`,
    idempotencyKeys: `${quoted}.keyhook_idempotency_keys`,
    portalSessions: `${quoted}.keyhook_portal_sessions`,
  };
}

/** Marks a statement as one the store sends named (prepared, src/prepared.ts); returns its text. */
export type Prepare = (text: string) => string;

/**
 * An operation's statements (src/operations/): their texts over one store's tables, the hot ones
 * marked with `prepare`. A store builds each once, on first use (StoreContext.sql).
 */
export type Statements<T> = (tables: Tables, prepare: Prepare) => T;

/** The texts `build` makes for `schema`, none marked: for tests that run or plan the store's own statements. */
export function statementsIn<T>(schema: string, build: Statements<T>): T {
  return build(tablesIn(schema), (text) => text);
}
