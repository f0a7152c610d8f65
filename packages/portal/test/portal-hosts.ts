import { mkdirSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { requireScope as expressScope, keyhookRouter } from '@keyhook/adapter-express';
import { requireScope as fastifyScope, keyhookFastify } from '@keyhook/adapter-fastify';
import { type Clock, createKeyhook, type Keyhook, type Logger, type PortalPermission } from '@keyhook/core';
import { createPostgresStore } from '@keyhook/store-postgres';
import { createSqliteStore } from '@keyhook/store-sqlite';
import { describeInBrowser, launchChromium } from '@keyhook/testing/browser';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import {
  type LoggedLine,
  recordingLogger,
  TEST_ADMIN_SECRET,
  TEST_ENCRYPTION_KEY,
} from '@keyhook/testing/support';
import express from 'express';
import Fastify from 'fastify';
import pg from 'pg';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe } from 'vitest';
import { z } from 'zod';
import { keyhookPortal } from '../src/index.js';

/*
 * The host app the browser suites open the portal in: keyhook, its portal and a guarded route of
 * its own, through Express with SQLite and through Fastify with PostgreSQL.
 */

export const SCOPES = [
  { name: 'items:read', description: 'Read the items of your account' },
  { name: 'items:write', description: 'Create and change items' },
] as const;
export const EVENTS = {
  'item.created': {
    description: 'An item was created.',
    data: z.object({
      itemId: z.string().meta({ description: 'The item (itm_…).' }),
      name: z.string().meta({ description: 'Its name, as the customer gave it.' }),
    }),
    example: { itemId: 'itm_1001', name: 'First item' },
  },
  'item.deleted': { description: 'An item was deleted.', data: z.object({ itemId: z.string() }) },
};
export const HEADERS = { signature: 'x-acme-signature', eventId: 'x-acme-event-id' };
export const ALL: PortalPermission[] = ['keys:read', 'keys:write', 'webhooks:read', 'webhooks:write'];
export const TENANT = 'acme_customer';

export const SCREENSHOTS =
  process.env['KEYHOOK_UPDATE_SCREENSHOTS'] === '1'
    ? join(import.meta.dirname, '..', 'screenshots')
    : join(tmpdir(), 'keyhook-portal-screenshots');

/** keyhook's clock, which a test moves ahead to let a link expire; the worker's waits stay real. */
export class SkewedClock implements Clock {
  skewMs = 0;
  now(): Date {
    return new Date(Date.now() + this.skewMs);
  }
}

export interface Host {
  keyhook: Keyhook;
  clock: SkewedClock;
  /** `http://127.0.0.1:<port>`. */
  base: string;
  /** Every line keyhook logged. */
  logs: LoggedLine[];
  close(): Promise<void>;
}

function hostKeyhook(store: Parameters<typeof createKeyhook>[0]['store'], clock: Clock, logger: Logger) {
  return createKeyhook({
    scopes: SCOPES,
    eventCatalog: EVENTS,
    store,
    clock,
    adminSession: { secret: TEST_ADMIN_SECRET },
    encryptionKey: TEST_ENCRYPTION_KEY,
    logger,
    // http:// receivers on 127.0.0.1; the cookie without Secure, since the page is plain HTTP.
    mode: 'development',
    delivery: { headers: HEADERS, retrySchedule: [200, 200], timeoutMs: 2_000 },
  });
}

export const BRAND = { name: 'Acme Items', accentColor: '#5b3cc4' };

export async function expressWithSqlite(): Promise<Host> {
  const clock = new SkewedClock();
  const logger = recordingLogger();
  const store = createSqliteStore({
    filename: join(tmpdir(), `keyhook-portal-${process.pid}-${Date.now()}.db`),
    logger: recordingLogger(),
  });
  const keyhook = hostKeyhook(store, clock, logger);
  const app = express();
  app.use(keyhookRouter(keyhook, { portal: keyhookPortal(keyhook, { brand: BRAND }) }));
  app.get('/api/v1/items', expressScope(keyhook, 'items:read'), (req, res) => {
    res.json({ tenantId: req.apiKey!.tenantId, items: [] });
  });
  const server = await new Promise<Server>((resolve) => {
    const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
  });
  const worker = keyhook.createWorker({ pollIntervalMs: 100 });
  worker.start();
  return {
    keyhook,
    clock,
    logs: logger.lines,
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      await keyhook.close();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await store.close();
    },
  };
}

export async function fastifyWithPostgres(): Promise<Host> {
  const clock = new SkewedClock();
  const logger = recordingLogger();
  const schema = uniqueSchemaName('portal');
  const store = await createPostgresStore({
    connectionString: POSTGRES_TEST_URL,
    schema,
    logger: recordingLogger(),
  });
  const keyhook = hostKeyhook(store, clock, logger);
  const app = Fastify();
  await app.register(keyhookFastify, { keyhook, portal: keyhookPortal(keyhook, { brand: BRAND }) });
  app.get('/api/v1/items', { onRequest: fastifyScope(keyhook, 'items:read') }, async (request) => ({
    tenantId: request.apiKey!.tenantId,
    items: [],
  }));
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  const worker = keyhook.createWorker({ pollIntervalMs: 100 });
  worker.start();
  return {
    keyhook,
    clock,
    logs: logger.lines,
    base: address,
    async close() {
      await keyhook.close();
      await app.close();
      await store.close();
      const admin = new pg.Client({ connectionString: POSTGRES_TEST_URL });
      await admin.connect();
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.end();
    },
  };
}

/** Each stack the browser suites run on, and whether it is here. */
export const BACKENDS: [string, () => Promise<Host>, () => Promise<boolean>][] = [
  ['Express with SQLite', expressWithSqlite, async () => true],
  ['Fastify with PostgreSQL', fastifyWithPostgres, postgresAvailable],
];

/** What a case of `onEachStack` reaches: the stack's host and the suite's browser, once started. */
export interface Stack {
  name: string;
  /** False when the stack is not here (no PostgreSQL): its cases are skipped. */
  runs: boolean;
  host(): Host;
  browser(): Browser;
}

/**
 * A browser suite run on each stack: Chromium launched once, each stack's host started before its
 * cases and closed after them. `cases` registers the stack's cases, and any hooks of its own after
 * these.
 */
export function onEachStack(title: string, cases: (stack: Stack) => void): void {
  describeInBrowser(title, () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchChromium();
      mkdirSync(SCREENSHOTS, { recursive: true });
    });
    afterAll(async () => {
      await browser?.close();
    });
    for (const [name, start, available] of BACKENDS) {
      describe(name, async () => {
        const runs = await available();
        let host: Host | undefined;
        beforeAll(async () => {
          if (runs) host = await start();
        });
        afterAll(async () => {
          await host?.close();
        });
        cases({ name, runs, host: () => host!, browser: () => browser });
      });
    }
  });
}
