import { createKeyhook, MemoryStore, silentLogger } from '@keyhook/core';
import { DEFAULT_LIST_BYTE_BUDGET, pageOf } from '@keyhook/core/http';
import { adminToken, TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';

/** A row of `size` bytes of JSON once viewed: `{"key":"k01","text":"xxx…"}` is 23 bytes plus the text. */
const row = (key: string, size: number) => ({ key, text: 'x'.repeat(size - 23) });
const view = (r: { key: string; text: string }) => r;
const bytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value), 'utf8');
const decode = (cursor: string) => Buffer.from(cursor, 'base64url').toString('utf8');

/** Pages through `rows` (sorted by key) as a store would, `limit + 1` after each cursor. */
function walk(rows: { key: string; text: string }[], limit: number, budget: number) {
  const pages: string[][] = [];
  let after = '';
  for (;;) {
    const from = rows.filter((r) => r.key > after).slice(0, limit + 1);
    const page = pageOf(from, limit, view, (r) => r.key, budget);
    pages.push(page.data.map((r) => r.key));
    if (page.nextCursor === null) return pages;
    after = decode(page.nextCursor);
  }
}

describe('a list page within its byte budget (docs/decisions.md §14)', () => {
  it('stops before the record that would pass the budget, and its cursor continues right after the last one held', () => {
    const rows = ['k01', 'k02', 'k03', 'k04'].map((key) => row(key, 400));
    expect(bytes(rows[0])).toBe(400);
    // 400 + 400 fit 1000; a third would make 1200.
    const page = pageOf(rows, 100, view, (r) => r.key, 1000);
    expect(page.data.map((r) => r.key)).toEqual(['k01', 'k02']);
    expect(decode(page.nextCursor!)).toBe('k02');
    // Exactly at the budget is within it.
    expect(pageOf(rows, 100, view, (r) => r.key, 800).data).toHaveLength(2);
    expect(pageOf(rows, 100, view, (r) => r.key, 799).data).toHaveLength(1);
  });

  it('holds a record larger than the budget alone, and a last page has no cursor', () => {
    const rows = [row('k01', 5000), row('k02', 100)];
    const first = pageOf(rows, 100, view, (r) => r.key, 1000);
    expect(first.data.map((r) => r.key)).toEqual(['k01']);
    expect(decode(first.nextCursor!)).toBe('k01');
    const second = pageOf(rows.slice(1), 100, view, (r) => r.key, 1000);
    expect(second).toEqual({ data: [rows[1]], nextCursor: null });
  });

  it('keeps the count limit as a maximum, and within the budget says a next page exists only when rows were left', () => {
    const rows = ['k01', 'k02', 'k03'].map((key) => row(key, 100));
    const limited = pageOf(rows, 2, view, (r) => r.key, 1_000_000);
    expect(limited.data).toHaveLength(2);
    expect(decode(limited.nextCursor!)).toBe('k02');
    expect(pageOf(rows, 3, view, (r) => r.key, 1_000_000).nextCursor).toBeNull();
  });

  it('walks every record once, in order, whatever the mix of sizes, limit and budget', () => {
    // Sizes from 30 bytes to 3 budgets: some pages cut by the count, some by bytes, some one oversized record.
    const sizes = [30, 900, 2500, 40, 40, 40, 700, 700, 3000, 30, 999, 1000, 1001, 60, 5, 400].map((n) =>
      Math.max(n, 23),
    );
    const rows = sizes.map((size, index) => row(`k${String(index).padStart(2, '0')}`, size));
    for (const limit of [1, 2, 3, 5, 100]) {
      for (const budget of [100, 1000, 2000, 50_000]) {
        const pages = walk(rows, limit, budget);
        expect(pages.flat()).toEqual(rows.map((r) => r.key));
        for (const keys of pages) {
          expect(keys.length).toBeGreaterThan(0);
          expect(keys.length).toBeLessThanOrEqual(limit);
          const held = rows.filter((r) => keys.includes(r.key));
          if (held.length > 1) expect(held.reduce((sum, r) => sum + bytes(r), 0)).toBeLessThanOrEqual(budget);
        }
      }
    }
  });

  it('is 1 MiB unless the host says; createKeyhook refuses a budget that is not whole bytes of at least 16 KiB', () => {
    const options = {
      store: new MemoryStore(),
      adminSession: { secret: TEST_ADMIN_SECRET },
      encryptionKey: TEST_ENCRYPTION_KEY,
      logger: silentLogger,
    };
    expect(createKeyhook(options).listByteBudget).toBe(DEFAULT_LIST_BYTE_BUDGET);
    expect(DEFAULT_LIST_BYTE_BUDGET).toBe(1024 * 1024);
    expect(createKeyhook({ ...options, listByteBudget: 16 * 1024 }).listByteBudget).toBe(16 * 1024);
    for (const listByteBudget of [16 * 1024 - 1, 0, -1, 20_000.5, Number.NaN, '65536' as unknown as number]) {
      expect(() => createKeyhook({ ...options, listByteBudget })).toThrow(
        /^keyhook: listByteBudget must be whole bytes, at least 16384/,
      );
    }
  });

  it("cuts core's own lists at the host's budget: GET /admin/keys with long key names", async () => {
    const keyhook = createKeyhook({
      store: new MemoryStore(),
      adminSession: { secret: TEST_ADMIN_SECRET },
      encryptionKey: TEST_ENCRYPTION_KEY,
      logger: silentLogger,
      listByteBudget: 16 * 1024,
    });
    const token = await adminToken({ tenantId: 'tenant_a' });
    for (let i = 0; i < 60; i++) {
      await keyhook.keys.create('tenant_a', { name: `${i}:${'n'.repeat(190)}`, scopes: [] });
    }
    const list = async (cursor?: string) => {
      const response = await keyhook.handle({
        method: 'GET',
        path: '/admin/keys',
        query: `limit=100${cursor ? `&cursor=${cursor}` : ''}`,
        headers: { authorization: `Bearer ${token}` },
        rawBody: null,
      });
      expect(response.status).toBe(200);
      return JSON.parse(response.body!) as { data: { id: string }[]; nextCursor: string | null };
    };
    const first = await list();
    expect(first.data.length).toBeGreaterThan(1);
    expect(first.data.length).toBeLessThan(60);
    expect(bytes(first.data)).toBeLessThanOrEqual(16 * 1024 + first.data.length + 1);
    const ids = first.data.map((key) => key.id);
    let cursor = first.nextCursor;
    while (cursor !== null) {
      const page = await list(cursor);
      ids.push(...page.data.map((key) => key.id));
      cursor = page.nextCursor;
    }
    expect(new Set(ids).size).toBe(60);
    expect(ids).toHaveLength(60);
  });
});
