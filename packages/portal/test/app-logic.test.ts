import { signEvent, verify } from '@keyhook/webhook-verify';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { contrastsMoreWithBlack } from '../app/accent-contrast.js';
import type { WebhookView } from '../app/api-types.js';
import {
  changedSettingsBody,
  createSettingsBody,
  draftOf,
  formatDeliveryRate,
  schemeLabel,
} from '../app/delivery-settings.js';
import { disabledReasonText, successRate } from '../app/endpoint-health.js';
import { hrefOf, parseRoute } from '../app/routes.js';
import { schemaFields } from '../app/schema-fields.js';
import { verifySnippet } from '../app/verify-snippet.js';
import { visibleText } from '../app/visible-text.js';

describe('hash routes', () => {
  it('reads each page of the portal from the hash, and writes it back', () => {
    const routes = [
      ['#/keys', { page: 'keys' }],
      ['#/webhooks', { page: 'webhooks' }],
      [
        '#/webhooks/wh_01JGXA7Q0000000000000000',
        { page: 'webhook', webhookId: 'wh_01JGXA7Q0000000000000000' },
      ],
      ['#/webhooks/wh_1/deliveries/dlv_2', { page: 'delivery', webhookId: 'wh_1', deliveryId: 'dlv_2' }],
      ['#/catalog', { page: 'catalog' }],
    ] as const;
    for (const [hash, route] of routes) {
      expect(parseRoute(hash)).toEqual(route);
      expect(hrefOf(route)).toBe(hash);
    }
    // The catalog's first address still opens it (docs/decisions.md §3.13).
    expect(parseRoute('#/events')).toEqual({ page: 'catalog' });
  });

  it('reads anything else as an unknown page, a token fragment included', () => {
    for (const hash of ['', '#', '#token=kpl_abc', '#/keys/extra', '#/webhooks/../keys', '#/webhooks/a b']) {
      expect(parseRoute(hash)).toEqual({ page: 'unknown' });
    }
  });
});

describe('the accent colour', () => {
  it('puts black text on a light accent and white text on a dark one, whichever contrasts more', () => {
    expect(contrastsMoreWithBlack('#ffff00')).toBe(true);
    expect(contrastsMoreWithBlack('#fff')).toBe(true);
    expect(contrastsMoreWithBlack('#5b5bd6')).toBe(false);
    expect(contrastsMoreWithBlack('#000080')).toBe(false);
    // Mid-grey: #777 has 4.48:1 with white and 4.69:1 with black.
    expect(contrastsMoreWithBlack('#777777')).toBe(true);
  });
});

describe('endpoint health', () => {
  const stats = {
    since: '2026-01-01T00:00:00.000Z',
    data: [
      { webhookId: 'wh_1', succeeded: 97, failed: 3 },
      { webhookId: 'wh_2', succeeded: 0, failed: 0 },
    ],
  };
  it('gives the success rate of the last 24 hours, or "No attempts"', () => {
    expect(successRate(stats, 'wh_1')).toBe('97 % of 100 attempts');
    expect(successRate({ ...stats, data: [{ webhookId: 'wh_1', succeeded: 1, failed: 0 }] }, 'wh_1')).toBe(
      '100 % of 1 attempt',
    );
    expect(successRate(stats, 'wh_2')).toBe('No attempts');
    expect(successRate(stats, 'wh_3')).toBe('No attempts');
    expect(successRate(undefined, 'wh_1')).toBe('No attempts');
  });

  it('says why an endpoint is disabled', () => {
    const endpoint = {
      id: 'wh_1',
      url: 'https://example.com/hooks',
      events: ['run.completed'],
      disabledAt: null,
      description: null,
      previousSecretExpiresAt: null,
      signatureScheme: 'keyhook' as const,
      keyType: 'hmac' as const,
      publicKey: null,
      deliveryRate: null,
      createdAt: '2026-01-01T00:00:00.000Z',
      updatedAt: '2026-01-01T00:00:00.000Z',
    };
    expect(disabledReasonText({ ...endpoint, status: 'disabled', disabledReason: 'failures' })).toBe(
      'Too many failed deliveries',
    );
    expect(disabledReasonText({ ...endpoint, status: 'disabled', disabledReason: 'gone' })).toBe(
      'The receiver answered 410 Gone',
    );
    expect(disabledReasonText({ ...endpoint, status: 'disabled', disabledReason: 'manual' })).toBe(
      'Disabled by hand',
    );
    expect(disabledReasonText({ ...endpoint, status: 'active', disabledReason: null })).toBe('—');
  });
});

describe('the verify snippet', () => {
  it("names the host's delivery headers in @keyhook/webhook-verify's headers option", () => {
    const snippet = verifySnippet({ signature: 'x-acme-signature', eventId: 'x-acme-event-id' });
    expect(snippet).toContain("import { verify } from '@keyhook/webhook-verify';");
    expect(snippet).toContain(
      "verify(req.body, req.headers, secret, {\n    headers: { signature: 'x-acme-signature', eventId: 'x-acme-event-id' },",
    );
  });

  it('shows a call that verifies a Standard Webhooks delivery as well as a keyhook one', () => {
    const snippet = verifySnippet({ signature: 'x-acme-signature', eventId: 'x-acme-event-id' });
    expect(snippet).toContain(
      'webhook-id, webhook-timestamp\n  // and webhook-signature (Standard Webhooks)',
    );
    expect(snippet).toContain("scheme: 'standard-webhooks'");
    // The options the snippet passes, with the whole headers, as it does (req.headers).
    const options = { headers: { signature: 'x-acme-signature', eventId: 'x-acme-event-id' } };
    const secret = `whsec_${'3f'.repeat(32)}`;
    for (const scheme of ['keyhook', 'standard-webhooks'] as const) {
      // A sender's header names are keyhook's; Standard Webhooks fixes its own.
      const delivery = signEvent(
        { type: 'run.completed', data: { runId: 'run_1' } },
        secret,
        scheme === 'keyhook' ? { headers: options.headers } : { scheme },
      );
      const event = verify(delivery.body, delivery.headers, secret, options);
      expect(event.data, scheme).toEqual({ runId: 'run_1' });
    }
  });
});

describe('the delivery settings', () => {
  const endpoint: WebhookView = {
    id: 'wh_1',
    url: 'https://example.com/hooks',
    events: ['run.completed'],
    status: 'active',
    disabledReason: null,
    disabledAt: null,
    description: null,
    previousSecretExpiresAt: null,
    signatureScheme: 'standard-webhooks',
    keyType: 'hmac',
    publicKey: null,
    deliveryRate: { perSecond: 5 },
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
  };

  it('names each signature scheme in plain words', () => {
    expect(schemeLabel('keyhook')).toBe('keyhook (t=…,v1=…)');
    expect(schemeLabel('standard-webhooks')).toBe('Standard Webhooks');
  });

  it('gives the delivery rate per second, fractions as the API holds them, or "No limit"', () => {
    expect(formatDeliveryRate(null)).toBe('No limit');
    expect(formatDeliveryRate({ perSecond: 5 })).toBe('5 per second');
    expect(formatDeliveryRate({ perSecond: 0.5 })).toBe('0.5 per second');
    expect(formatDeliveryRate({ perSecond: 0.01 })).toBe('0.01 per second');
    expect(formatDeliveryRate({ perSecond: 1000 })).toBe('1000 per second');
  });

  it('sends nothing at creation for what the customer left unset, so the host default applies', () => {
    expect(createSettingsBody({ scheme: '', limited: false, perSecond: '' })).toEqual({});
    // A number typed, then the box unchecked: the number is not sent.
    expect(createSettingsBody({ scheme: '', limited: false, perSecond: '7' })).toEqual({});
    expect(createSettingsBody({ scheme: 'standard-webhooks', limited: true, perSecond: '0.5' })).toEqual({
      signatureScheme: 'standard-webhooks',
      deliveryRate: { perSecond: 0.5 },
    });
  });

  it('sends an edit only what changed, and an unchecked limit as null', () => {
    expect(changedSettingsBody(endpoint, draftOf(endpoint))).toEqual({});
    expect(changedSettingsBody(endpoint, { scheme: 'keyhook', limited: false, perSecond: '5' })).toEqual({
      signatureScheme: 'keyhook',
      deliveryRate: null,
    });
    expect(changedSettingsBody(endpoint, { ...draftOf(endpoint), perSecond: '2.5' })).toEqual({
      deliveryRate: { perSecond: 2.5 },
    });
    const unlimited = { ...endpoint, deliveryRate: null };
    expect(draftOf(unlimited)).toEqual({ scheme: 'standard-webhooks', limited: false, perSecond: '' });
    expect(changedSettingsBody(unlimited, draftOf(unlimited))).toEqual({});
  });

  it('hands an out-of-range or empty rate to the API as typed, for its refusal to name the bounds', () => {
    const draft = draftOf(endpoint);
    expect(changedSettingsBody(endpoint, { ...draft, perSecond: '5000' })).toEqual({
      deliveryRate: { perSecond: 5000 },
    });
    expect(changedSettingsBody(endpoint, { ...draft, perSecond: '' })).toEqual({
      deliveryRate: { perSecond: 0 },
    });
  });
});

describe('the payload and response viewers', () => {
  it('show a character that hides or reorders text as a visible escape, and leave the rest as it is', () => {
    expect(visibleText('invoices\u202Egpj.exe')).toBe('invoices\\u202Egpj.exe');
    expect(visibleText('\u001b[2Jcleared\u0007')).toBe('\\u001B[2Jcleared\\u0007');
    expect(visibleText('a\u2067b\u2069 \u200F c\u0085')).toBe('a\\u2067b\\u2069 \\u200F c\\u0085');
    const plain = '{\n\t"name": "مفتاح ✓"\n}';
    expect(visibleText(plain)).toBe(plain);
  });
});

describe("the catalog page's fields", () => {
  it('lists each field of a JSON Schema as zod writes it: nested, nullable, optional, arrays', () => {
    const schema = z.toJSONSchema(
      z.looseObject({
        runId: z.string().meta({ description: 'The run.' }),
        base: z.int().nullable().meta({ description: 'The base, or null.' }),
        counts: z
          .object({ added: z.int().meta({ description: 'Added.' }), note: z.string().optional() })
          .nullable()
          .meta({ description: 'The counts.' }),
        tags: z.array(z.string()),
        mode: z.enum(['fast', 'slow']),
      }),
      { io: 'output' },
    ) as Record<string, unknown>;
    expect(schemaFields(schema)).toEqual([
      { name: 'runId', type: 'string', required: true, description: 'The run.' },
      { name: 'base', type: 'integer or null', required: true, description: 'The base, or null.' },
      { name: 'counts', type: 'object or null', required: true, description: 'The counts.' },
      { name: 'counts.added', type: 'integer', required: true, description: 'Added.' },
      { name: 'counts.note', type: 'string', required: false, description: undefined },
      { name: 'tags', type: 'array of string', required: true, description: undefined },
      { name: 'mode', type: '"fast" or "slow"', required: true, description: undefined },
    ]);
    expect(schemaFields(null)).toEqual([]);
  });
});
