import type { AddressInfo } from 'node:net';
import { createAdminToken } from '@keyhook/core';
import { POSTGRES_TEST_URL, uniqueSchemaName } from '@keyhook/testing/postgres';
import {
  type JsonReply,
  requestJson,
  TEST_ADMIN_SECRET,
  TEST_ENCRYPTION_KEY,
} from '@keyhook/testing/support';
import pg from 'pg';
import { buildInvoicesApp, type InvoicesApp, type InvoicesAppOptions } from '../src/app.js';

/** The app's schema and keyhook's, unique to one test file. */
export interface Schemas {
  app: string;
  keyhook: string;
}

export function uniqueSchemas(label: string): Schemas {
  const app = uniqueSchemaName(label);
  return { app, keyhook: `${app}_keyhook` };
}

export async function dropSchemas(schemas: Schemas): Promise<void> {
  const pool = new pg.Pool({ connectionString: POSTGRES_TEST_URL, max: 1 });
  try {
    for (const schema of [schemas.app, schemas.keyhook]) {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  } finally {
    await pool.end();
  }
}

/** The options every test builds the app with; `development` lets webhooks point at 127.0.0.1. */
export function testOptions(schemas: Schemas): InvoicesAppOptions {
  return {
    databaseUrl: POSTGRES_TEST_URL,
    schema: schemas.app,
    keyhookSchema: schemas.keyhook,
    encryptionKey: TEST_ENCRYPTION_KEY,
    adminSecret: TEST_ADMIN_SECRET,
    mode: 'development',
    poolSize: 4,
  };
}

export type Reply = JsonReply;

export type Call = (method: string, url: string, token?: string, body?: unknown) => Promise<Reply>;

export interface RunningApp {
  instance: InvoicesApp;
  base: string;
  call: Call;
}

/** The app on a real port of 127.0.0.1, called with fetch. */
export async function startInvoicesApp(options: InvoicesAppOptions): Promise<RunningApp> {
  const instance = await buildInvoicesApp(options);
  await instance.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(instance.app.server.address() as AddressInfo).port}`;
  const call: Call = (method, url, token, body) =>
    requestJson(method, `${base}${url}`, { token, json: body });
  return { instance, base, call };
}

/** An admin-portal session for `tenantId`, minted with keyhook's dev helper. */
export const adminSessionFor = (tenantId: string) =>
  createAdminToken({ secret: TEST_ADMIN_SECRET, tenantId });
