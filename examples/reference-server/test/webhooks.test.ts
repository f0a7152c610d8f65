import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { POSTGRES_TEST_URL, postgresAvailable, uniqueSchemaName } from '@keyhook/testing/postgres';
import { adminToken } from '@keyhook/testing/support';
import { verify } from '@keyhook/webhook-verify';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCompletedData } from './event-data.js';
import { dropSchema, postgresEnv, type Running, sqliteEnv, start, tempDir } from './instances.js';

const withPostgres = await postgresAvailable();

interface Backend {
  name: string;
  available: boolean;
  setUp(): Promise<{
    env: Record<string, string>;
    /** Every text value of every row of keyhook's tables, read straight from the database. */
    dump: () => Promise<string>;
    tearDown: () => Promise<void>;
  }>;
}

const backends: Backend[] = [
  {
    name: 'SQLite',
    available: true,
    async setUp() {
      const temp = tempDir();
      const env = sqliteEnv(temp.dir);
      const dump = async () => {
        const db = new Database(path.join(temp.dir, 'keyhook.db'), { readonly: true });
        try {
          const tables = db
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'table'")
            .pluck()
            .all() as string[];
          return tables.map((t) => JSON.stringify(db.prepare(`SELECT * FROM "${t}"`).all())).join('\n');
        } finally {
          db.close();
        }
      };
      return { env, dump, tearDown: async () => temp.remove() };
    },
  },
  {
    name: 'Postgres',
    available: withPostgres,
    async setUp() {
      const schema = uniqueSchemaName('ref_wh');
      const dump = async () => {
        const client = new pg.Client({ connectionString: POSTGRES_TEST_URL });
        await client.connect();
        try {
          const tables = await client.query(
            'SELECT table_name FROM information_schema.tables WHERE table_schema = $1',
            [schema],
          );
          const rows = [];
          for (const { table_name } of tables.rows) {
            rows.push(JSON.stringify((await client.query(`SELECT * FROM "${schema}"."${table_name}"`)).rows));
          }
          return rows.join('\n');
        } finally {
          await client.end();
        }
      };
      return { env: postgresEnv(schema), dump, tearDown: () => dropSchema(schema) };
    },
  },
];

describe.each(backends)('webhook endpoints end to end on $name', (backend) => {
  let running: Running;
  let env: Record<string, string>;
  let dump: () => Promise<string>;
  let tearDown: () => Promise<void>;
  let admin: string;
  let counter = 0;
  const url = () => `https://hooks.example.com/${backend.name.toLowerCase()}/${++counter}`;
  const create = (body: unknown, headers: Record<string, string> = {}) =>
    running.client.request('POST', '/api/v1/admin/webhooks', admin, body, headers);

  beforeAll(async () => {
    if (!backend.available) return;
    ({ env, dump, tearDown } = await backend.setUp());
    running = await start(env);
    admin = await adminToken({ tenantId: 'acme', subject: 'ops' });
  });

  afterAll(async () => {
    if (!backend.available) return;
    await running.server.close();
    await tearDown();
  });

  it.skipIf(!backend.available)(
    '100 concurrent identical creates with one Idempotency-Key → one webhook, one secret; each answer is that 201 or 409 in progress',
    async () => {
      const body = { url: url(), events: ['run.completed', 'generation.published'] };
      const replies = await Promise.all(
        Array.from({ length: 100 }, () => create(body, { 'idempotency-key': `burst-${backend.name}` })),
      );
      const ok = replies.filter((r) => r.status === 201);
      const others = replies.filter((r) => r.status !== 201);
      expect(ok.length).toBeGreaterThanOrEqual(1);
      for (const reply of others) {
        expect(reply.status).toBe(409);
        expect(reply.body.error.code).toBe('idempotency_in_progress');
      }
      expect(new Set(ok.map((r) => r.body.secret)).size).toBe(1);
      expect(new Set(ok.map((r) => r.body.webhook.id)).size).toBe(1);
      const list = await running.client.request('GET', '/api/v1/admin/webhooks?limit=100', admin);
      expect(list.body.data.filter((w: { url: string }) => w.url === body.url)).toHaveLength(1);
      console.log(
        `${backend.name}: 100 concurrent creates with one key → ${ok.length} × 201 (${ok.filter((r) => r.headers.get('idempotent-replayed')).length} replays), ${others.length} × 409 idempotency_in_progress`,
      );
    },
  );

  it.skipIf(!backend.available)(
    '50 concurrent creates of active twins without the header → exactly one 201, 49 × 409 webhook_conflict',
    async () => {
      const body = { url: url(), events: ['run.failed'] };
      const replies = await Promise.all(Array.from({ length: 50 }, () => create(body)));
      expect(replies.filter((r) => r.status === 201)).toHaveLength(1);
      const refused = replies.filter((r) => r.status === 409);
      expect(refused).toHaveLength(49);
      for (const reply of refused) expect(reply.body.error.code).toBe('webhook_conflict');
    },
  );

  it.skipIf(!backend.available)(
    'the database holds no plaintext secret: not the webhook’s, not the rotated one, not the idempotent replay’s',
    async () => {
      const created = await create(
        { url: url(), events: ['apply.failed'] },
        { 'idempotency-key': 'at-rest' },
      );
      expect(created.status).toBe(201);
      const rotated = await running.client.request(
        'POST',
        `/api/v1/admin/webhooks/${created.body.webhook.id}/rotate`,
        admin,
      );
      expect(rotated.status).toBe(200);
      const everything = await dump();
      expect(everything).toContain(created.body.webhook.id); // the dump did read the rows
      for (const secret of [created.body.secret, rotated.body.secret]) {
        expect(everything).not.toContain(secret);
        expect(everything).not.toContain(secret.slice('whsec_'.length));
      }
      // The idempotent replay still returns the original secret: it is stored sealed, not lost.
      const replay = await create(
        { url: created.body.webhook.url, events: ['apply.failed'] },
        {
          'idempotency-key': 'at-rest',
        },
      );
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body.secret).toBe(created.body.secret);
    },
  );

  it.skipIf(!backend.available)(
    'development accepts http://127.0.0.1:…; a restarted instance still opens the sealed secret',
    async () => {
      let delivered!: (request: { body: string; headers: IncomingHttpHeaders }) => void;
      const delivery = new Promise<{ body: string; headers: IncomingHttpHeaders }>((resolve) => {
        delivered = resolve;
      });
      const receiver: Server = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          res.end();
          delivered({ body: Buffer.concat(chunks).toString('utf8'), headers: req.headers });
        });
      });
      await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
      const port = (receiver.address() as AddressInfo).port;
      try {
        const created = await create({ url: `http://127.0.0.1:${port}/hooks`, events: ['run.completed'] });
        expect(created.status).toBe(201);
        await running.server.close();
        running = await start(env);
        // The restarted process must open the sealed secret to sign: the receiver verifies with
        // the secret the first process returned.
        const { event } = await running.server.keyhook.events.publish({
          tenantId: 'acme',
          type: 'run.completed',
          data: runCompletedData({ runId: 'run_restart' }),
        });
        const request = await delivery;
        // The server's own header names (src/catalog.ts), passed as any receiver of it passes them.
        const headers = running.server.keyhook.headerNames;
        expect(verify(request.body, request.headers, created.body.secret, { headers }).id).toBe(event.id);
      } finally {
        receiver.close();
      }
    },
  );
});
