import { checkReadme } from '@keyhook/testing/readme';
import { expect, it } from 'vitest';

/** The reader's own values the README names, as its blocks see them. */
const README_AMBIENT = `declare const log: { warn(error: unknown, message: string): void };
  declare const pool: import('pg').Pool;
  declare const sql: import('postgres').Sql;
  declare const knex: import('knex').Knex;
  declare const dataSource: import('typeorm').DataSource;
  declare const prisma: {
    $transaction<T>(
      work: (tx: {
        invoice: { update(args: { where: { id: string }; data: { status: string } }): Promise<unknown> };
      }) => Promise<T>,
    ): Promise<T>;
  };
  declare const keyhook: import('@keyhook/core').Keyhook;
  declare const tenantId: string;
  declare const invoiceId: string;`;

it('every ts block of README.md compiles against the built packages', () => {
  const { blocks, problems } = checkReadme(new URL('..', import.meta.url), { ambient: README_AMBIENT });
  expect(blocks).toBeGreaterThan(0);
  expect(problems).toEqual([]);
}, 60_000);
