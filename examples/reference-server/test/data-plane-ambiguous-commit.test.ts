import net from 'node:net';
import { FaultProxy } from '@keyhook/testing/fault-proxy';
import { waitUntil } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Backend, backends, startDataPlaneWithSql } from './data-plane.js';
import { keyed, runEventsIn, runsOf } from './keyed-requests.js';

/**
 * Issue 41 point 3: a write that committed, whose answer its client never got, retried with the
 * same Idempotency-Key, answers what committed and writes nothing twice (data-plane.md §3.4).
 * The run start of a stale base is the case: its run and its `run.conflict` commit in
 * one transaction.
 */
describe.each(backends)('an ambiguous commit retried with its key on $name', (backend: Backend) => {
  let env: Awaited<ReturnType<typeof startDataPlaneWithSql>>;

  beforeAll(async () => {
    if (backend.available) env = await startDataPlaneWithSql(backend);
  });
  afterAll(async () => {
    await env?.close();
  });

  it.skipIf(!backend.available)(
    'the connection drops after the commit, before the client read its answer: the retry hears the first answer; one run, one run.conflict',
    async () => {
      const { client } = env.plane.running;
      const source = await env.plane.api.createSource();
      const body = JSON.stringify({ expectedBaseGeneration: 4 });
      const socket = net.connect(Number(new URL(client.baseUrl).port), '127.0.0.1');
      socket.on('error', () => {});
      socket.pause(); // the client never reads what the server answers on this connection
      socket.write(
        [
          `POST /api/v1/sources/${source}/runs HTTP/1.1`,
          'Host: 127.0.0.1',
          `Authorization: Bearer ${env.plane.key}`,
          'Content-Type: application/json',
          `Content-Length: ${Buffer.byteLength(body)}`,
          'Idempotency-Key: dropped-1',
          '',
          body,
        ].join('\r\n'),
      );
      await waitUntil(async () => (await runsOf(client, env.plane.key, source)).length === 1);
      socket.destroy();

      const retried = await keyed(client, env.plane.key, 'POST', `/sources/${source}/runs`, 'dropped-1', {
        expectedBaseGeneration: 4,
      });
      expect(retried.status, retried.text).toBe(202);
      expect(retried.headers.get('idempotent-replayed')).toBe('true');
      const runs = await runsOf(client, env.plane.key, source);
      expect(runs).toHaveLength(1);
      expect(retried.body).toEqual({ run: runs[0] });
      expect(retried.body.run.status).toBe('conflict');
      expect(await runEventsIn(env.sql, source)).toEqual([`evt_${runs[0]!.id}_conflict`]);
    },
  );
});

/**
 * The issue's own failure: the server's connection to Postgres drops after Postgres committed
 * and before it said so, and the server answers 503. A proxy between the server and Postgres
 * cuts the connection that wrote the run at the moment Postgres answers its COMMIT.
 */
describe.skipIf(!backends[1]!.available)('an ambiguous COMMIT on Postgres retried with its key', () => {
  let env: Awaited<ReturnType<typeof startDataPlaneWithSql>>;
  let proxy: FaultProxy;

  beforeAll(async () => {
    proxy = await FaultProxy.start();
    env = await startDataPlaneWithSql(backends[1]!, { env: { DATABASE_URL: proxy.url() } });
  });
  afterAll(async () => {
    await env?.close();
    await proxy?.close();
  });

  it('a run start that committed but answered 503: the retry with its key answers the committed run; no second run, no second run.conflict', async () => {
    const { client } = env.plane.running;
    const source = await env.plane.api.createSource();
    const start = () =>
      keyed(client, env.plane.key, 'POST', `/sources/${source}/runs`, 'ambiguous-1', {
        expectedBaseGeneration: 9,
      });

    // The COMMIT of the transaction that wrote the run: Postgres commits, and its answer is lost.
    const lost = proxy.loseAnswerTo((message) => message.includes('COMMIT'), {
      after: (message) => message.includes('INSERT INTO staging_runs ('),
    });
    const first = await start();
    await lost;
    expect(proxy.counts.answersLost).toBe(1);
    expect([first.status, first.body.error.code]).toEqual([503, 'unavailable']);
    // Yet it committed: the run and its event are there.
    const committed = await env.sql(`SELECT id, status FROM staging_runs WHERE source_id = '${source}'`);
    expect(committed).toEqual([{ id: expect.any(String), status: 'conflict' }]);
    const runId = String(committed[0]!['id']);
    expect(await runEventsIn(env.sql, source)).toEqual([`evt_${runId}_conflict`]);

    const retried = await start();
    expect(retried.status, retried.text).toBe(202);
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    expect(retried.body.run).toMatchObject({ id: runId, status: 'conflict' });
    expect(await runsOf(client, env.plane.key, source)).toEqual([retried.body.run]);
    expect(await runEventsIn(env.sql, source)).toEqual([`evt_${runId}_conflict`]);
  });
});
