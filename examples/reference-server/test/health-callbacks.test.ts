import { Writable } from 'node:stream';
import { answer, TestReceiver } from '@keyhook/testing/support';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { buildServer, type ReferenceServer } from '../src/server.js';
import { runCompletedData } from './event-data.js';
import { sqliteEnv, tempDir } from './instances.js';

/** The reference server logs keyhook's endpoint health callbacks, one line each. */
describe('health callbacks in the reference server log', () => {
  const temp = tempDir();
  const lines: Record<string, unknown>[] = [];
  let receiver: TestReceiver;
  let server: ReferenceServer;

  beforeAll(async () => {
    receiver = await TestReceiver.start();
    receiver.on('/gone', answer(410));
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
        done();
      },
    });
    server = await buildServer(loadConfig(sqliteEnv(temp.dir)), {
      logger: { level: 'info', stream },
      worker: { pollIntervalMs: 10 },
    });
  });

  afterAll(async () => {
    await server?.close();
    await receiver.close();
    temp.remove();
  });

  it('logs the delivery failed for good, and the endpoint a 410 Gone disabled, with its reason', async () => {
    const { webhook } = await server.keyhook.webhooks.create('acme', {
      url: receiver.url('/gone'),
      events: ['run.completed'],
    });
    await server.keyhook.events.publish({
      tenantId: 'acme',
      type: 'run.completed',
      data: runCompletedData({ runId: 'run_1' }),
    });
    await expect
      .poll(() => lines.filter((line) => line['msg'] === 'webhook endpoint disabled').length)
      .toBe(1);
    const failed = lines.filter((line) => line['msg'] === 'delivery failed for good');
    expect(failed).toEqual([expect.objectContaining({ level: 40, webhookId: webhook.id, attempts: 1 })]);
    expect(lines.find((line) => line['msg'] === 'webhook endpoint disabled')).toMatchObject({
      webhookId: webhook.id,
      reason: 'gone',
    });
  });
});
