import { expect } from 'vitest';
import type { Client, Reply } from './client.js';

/** One data-plane request with an `Idempotency-Key` (none when `key` is undefined), over real HTTP. */
export function keyed(
  client: Client,
  apiKey: string,
  method: string,
  path: string,
  key: string | undefined,
  body?: unknown,
): Promise<Reply> {
  return client.request(
    method,
    `/api/v1${path}`,
    apiKey,
    body,
    key === undefined ? {} : { 'idempotency-key': key },
  );
}

/**
 * Every `run.*` event keyhook's store holds for the source, read from its table (the events feed
 * would do, but on a shared Postgres it waits for every open transaction of the cluster).
 */
export async function runEventsIn(
  sql: (text: string) => Promise<Record<string, unknown>[]>,
  sourceId: string,
): Promise<string[]> {
  const rows = await sql(
    `SELECT id FROM keyhook_events WHERE type LIKE 'run.%' AND payload LIKE '%"sourceId":"${sourceId}"%' ORDER BY id`,
  );
  return rows.map((row) => String(row['id']));
}

/** The source's runs, newest first (one page: these tests make a few). */
export async function runsOf(client: Client, apiKey: string, sourceId: string): Promise<{ id: string }[]> {
  const reply = await client.request('GET', `/api/v1/sources/${sourceId}/runs?limit=100`, apiKey);
  expect(reply.status, reply.text).toBe(200);
  return reply.body.data;
}
