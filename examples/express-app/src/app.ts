import { keyhookRouter, requireScope } from '@keyhook/adapter-express';
import { createKeyhook, type Keyhook, type KeyhookOptions } from '@keyhook/core';
import { errorEnvelope } from '@keyhook/core/http';
import { createSqliteStore, openDatabase } from '@keyhook/store-sqlite';
import type Database from 'better-sqlite3';
import express, { type Express } from 'express';

/**
 * An Express app that existed before keyhook: it keeps "reports" for its tenants. Embedding
 * keyhook added three things, and only these:
 *
 * 1. `app.use(keyhookRouter(keyhook))`: keyhook's admin endpoints and `/whoami` at `/api/v1`.
 * 2. `requireScope(keyhook, 'reports:write')` in front of the app's own route.
 * 3. `keyhook.events.publishSync(...)` in the app's own handler, inside its own transaction, so
 *    the report and its `report.created` event are written together or not at all.
 * Its scopes and its event are its own, declared once below.
 */
export interface ExpressAppOptions {
  /** The SQLite file the app already uses; keyhook's tables go beside the app's. */
  filename: string;
  adminSession: KeyhookOptions['adminSession'];
  encryptionKey?: KeyhookOptions['encryptionKey'];
  mode?: KeyhookOptions['mode'];
}

export interface ExpressApp {
  app: Express;
  keyhook: Keyhook<(typeof SCOPES)[number], typeof EVENTS>;
  db: Database.Database;
  close(): Promise<void>;
}

const SCOPES = ['reports:read', 'reports:write'] as const;
const EVENTS = { 'report.created': { description: 'A report was created.' } } as const;

export function createExpressApp(options: ExpressAppOptions): ExpressApp {
  // The app's connection, shared with keyhook's store: one transaction can hold both.
  const db = openDatabase(options.filename);
  db.exec(`CREATE TABLE IF NOT EXISTS reports (
    id TEXT PRIMARY KEY, tenant_id TEXT NOT NULL, title TEXT NOT NULL, created_at TEXT NOT NULL)`);
  const store = createSqliteStore({ database: db });
  const keyhook = createKeyhook({
    scopes: SCOPES,
    eventCatalog: EVENTS,
    store,
    adminSession: options.adminSession,
    encryptionKey: options.encryptionKey,
    mode: options.mode,
  });
  const worker = keyhook.createWorker();
  worker.start();

  const app = express();
  app.use(keyhookRouter(keyhook)); // 1. keyhook's own routes, mounted first

  const insertReport = db.prepare(
    'INSERT INTO reports (id, tenant_id, title, created_at) VALUES (?, ?, ?, ?)',
  );
  const listReports = db.prepare(
    'SELECT id, title, created_at AS createdAt FROM reports WHERE tenant_id = ? ORDER BY id',
  );

  // The app's own routes: their bodies are the app's business, parsed by the app's parser, which
  // comes after the guard (never app-wide before it): an anonymous body is never read.
  app.get('/api/v1/reports', requireScope(keyhook, 'reports:read'), (req, res) => {
    res.json({ data: listReports.all(req.apiKey!.tenantId) });
  });

  app.post('/api/v1/reports', requireScope(keyhook, 'reports:write'), express.json(), (req, res) => {
    const title = typeof req.body?.title === 'string' ? req.body.title.trim() : '';
    if (title === '') {
      // keyhook's envelope for the app's own refusal, so clients read every error alike.
      const refusal = errorEnvelope(400, 'validation_failed', 'title is required', [
        { path: 'title', message: 'is required' },
      ]);
      res.status(refusal.status).set(refusal.headers).send(refusal.body);
      return;
    }
    const { tenantId } = req.apiKey!;
    const id = `report_${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
    const createdAt = new Date().toISOString();
    // 3. The app's write and its event: one transaction, so neither exists without the other.
    db.transaction(() => {
      insertReport.run(id, tenantId, title, createdAt);
      keyhook.events.publishSync(
        { tenantId, type: 'report.created', id: `evt_${id}`, data: { reportId: id, title } },
        { transaction: db },
      );
    })();
    res.status(201).json({ report: { id, title, createdAt } });
  });

  return {
    app,
    keyhook,
    db,
    close: async () => {
      await keyhook.close(); // stops the worker; attempts in flight finish
      await store.close();
      db.close();
    },
  };
}
