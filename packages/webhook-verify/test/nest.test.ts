import type { AddressInfo } from 'node:net';
import { isWebhookVerificationError, verify, type WebhookEvent } from '@keyhook/webhook-verify';
import {
  BadRequestException,
  Controller,
  HttpCode,
  Logger,
  Module,
  Post,
  type RawBodyRequest,
  Req,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Request } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventBody, OTHER_SECRET, SECRET, signatureHeader } from './wire-format.js';

// Legacy decorators: tsconfig.json sets experimentalDecorators, which vitest's esbuild reads
// too. Nothing here needs emitDecoratorMetadata (esbuild does not emit it): the controller
// takes no constructor injection, and @Req() says what it reads.
const secret = SECRET;
const received: WebhookEvent[] = [];
const handleEvent = async (event: WebhookEvent) => {
  received.push(event);
};
Logger.overrideLogger(false); // Nest's start-up lines, not the recipe's

// recipe:nest
@Controller('webhooks')
class WebhooksController {
  @Post('keyhook')
  @HttpCode(204)
  async receive(@Req() req: RawBodyRequest<Request>): Promise<void> {
    try {
      // req.rawBody: the bytes as received (req.body is already parsed JSON).
      const event = verify(req.rawBody!, req.headers, secret);
      await handleEvent(event); // keep it quick: dedupe on event.id, queue the real work
    } catch (error) {
      if (!isWebhookVerificationError(error)) throw error;
      throw new BadRequestException({ error: error.code });
    }
  }
}

@Module({ controllers: [WebhooksController] })
class AppModule {}

// rawBody: true keeps the bytes in req.rawBody, beside Nest's parsed req.body. keyhook's event
// bodies reach 256 KiB: raise the JSON parser's 100 kB default.
const app = await NestFactory.create<NestExpressApplication>(AppModule, { rawBody: true });
app.useBodyParser('json', { limit: '1mb' });
// recipe:end

// The same module without rawBody: true, the mistake the README warns of.
const withoutRawBody = await NestFactory.create<NestExpressApplication>(AppModule);

const urlOf = (nest: typeof app) =>
  `http://127.0.0.1:${(nest.getHttpServer().address() as AddressInfo).port}/webhooks/keyhook`;
let url = '';
beforeAll(async () => {
  await app.listen(0, '127.0.0.1');
  await withoutRawBody.listen(0, '127.0.0.1');
  url = urlOf(app);
});
afterAll(async () => {
  await app.close();
  await withoutRawBody.close();
});

const post = (body: string, headers: Record<string, string>, to = url) =>
  fetch(to, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

describe('NestJS recipe: rawBody: true, verify req.rawBody with req.headers', () => {
  // Bytes JSON.stringify would not reproduce: spaces, an escape, and UTF-8 beyond ASCII.
  const body =
    '{"id": "evt_nest_1", "type": "invoice.paid", "createdAt": "2026-01-01T00:00:00.000Z", ' +
    '"data": {"title": "caf\\u00e9 ☕ 日本語 😀", "amountCents": 42}}';

  it('accepts a real signed POST and hands over the event, unicode and all', async () => {
    expect(JSON.stringify(JSON.parse(body))).not.toBe(body); // so only the raw bytes verify
    received.length = 0;
    const reply = await post(body, {
      'keyhook-signature': signatureHeader(body),
      'keyhook-event-id': 'evt_nest_1',
    });
    expect(reply.status).toBe(204);
    expect(received).toEqual([JSON.parse(body)]);
    const [event] = received;
    expect([event?.id, event?.type, event?.data]).toEqual([
      'evt_nest_1',
      'invoice.paid',
      { title: 'café ☕ 日本語 😀', amountCents: 42 },
    ]);
  });

  it("accepts the largest event keyhook sends (a 256 KiB body), past the parser's 100 kB default", async () => {
    const sent = eventBody({ filler: 'x'.repeat(256 * 1024 - 200) }, 'evt_nest_big');
    expect(sent.length).toBeGreaterThan(200 * 1024);
    expect(sent.length).toBeLessThanOrEqual(256 * 1024);
    const reply = await post(sent, { 'keyhook-signature': signatureHeader(sent) });
    expect(reply.status).toBe(204);
  });

  it('accepts a body keyhook itself would send, with characters beyond ASCII', async () => {
    const sent = eventBody({ title: 'Café ☕ 日本語' }, 'evt_nest_2');
    received.length = 0;
    const reply = await post(sent, { 'keyhook-signature': signatureHeader(sent) });
    expect(reply.status).toBe(204);
    expect(received).toEqual([JSON.parse(sent)]);
  });

  it('answers 400 with the code for a tampered body, a wrong secret or a mismatched event id', async () => {
    received.length = 0;
    const tampered = await post(body.replace('42', '43'), { 'keyhook-signature': signatureHeader(body) });
    expect([tampered.status, await tampered.json()]).toEqual([400, { error: 'signature_mismatch' }]);
    const forged = await post(body, { 'keyhook-signature': signatureHeader(body, OTHER_SECRET) });
    expect([forged.status, await forged.json()]).toEqual([400, { error: 'signature_mismatch' }]);
    const otherId = await post(body, {
      'keyhook-signature': signatureHeader(body),
      'keyhook-event-id': 'evt_not_the_signed_one',
    });
    expect([otherId.status, await otherId.json()]).toEqual([400, { error: 'event_id_mismatch' }]);
    expect(received).toEqual([]);
  });

  it('answers 500, not 400, to a genuine delivery when the app was created without rawBody: true', async () => {
    received.length = 0;
    const reply = await post(body, { 'keyhook-signature': signatureHeader(body) }, urlOf(withoutRawBody));
    expect(reply.status).toBe(500);
    expect(received).toEqual([]);
  });
});
