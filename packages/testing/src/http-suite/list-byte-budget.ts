import { DEFAULT_LIST_BYTE_BUDGET } from '@keyhook/core/http';
import { describe, expect, it } from 'vitest';
import { call, createKey } from './client.js';
import type { SuiteContext } from './suite-context.js';

/** A list page's byte budget (docs/decisions.md §14) on every adapter: the events feed, whose events are large. */
export function listByteBudgetCases(ctx: SuiteContext): void {
  describe('list pages within the byte budget (docs/decisions.md §14)', () => {
    it('GET /events?limit=100 stops before the event that would pass 1 MiB, and after= the last one held goes on with the next', async () => {
      // Six events of about 250 KB (the largest is 256 KiB): four fit in 1 MiB, a fifth would not.
      const written: string[] = [];
      for (let i = 0; i < 6; i++) {
        ctx.clock.advance(1000);
        const data = { n: i, text: String(i).repeat(250_000) };
        written.push(
          (await ctx.keyhook.events.publish({ tenantId: 'tenant_a', type: 'run.completed', data } as never))
            .event.id,
        );
      }
      const token = (await createKey(ctx, { name: 'feed reader', scopes: ['events:read'] })).secret;
      const pages: string[][] = [];
      const more: boolean[] = [];
      let after: string | undefined;
      do {
        const reply = await call(ctx, 'GET', `/events?limit=100${after ? `&after=${after}` : ''}`, { token });
        expect(reply.status, reply.text.slice(0, 300)).toBe(200);
        const data = reply.body.data as { id: string; data: { text: string } }[];
        expect(Buffer.byteLength(JSON.stringify(data))).toBeLessThanOrEqual(
          DEFAULT_LIST_BYTE_BUDGET + data.length + 1,
        );
        for (const event of data) expect(event.data.text).toHaveLength(250_000);
        pages.push(data.map((event) => event.id));
        more.push(reply.body.hasMore);
        after = data[data.length - 1]?.id;
      } while (more[more.length - 1]);
      expect(pages).toEqual([written.slice(0, 4), written.slice(4)]);
      expect(more).toEqual([true, false]);
    });
  });
}
