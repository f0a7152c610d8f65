import { describe, expect, it } from 'vitest';
import { createSqliteStore, migrate, openDatabase, pendingMigrations } from '../src/index.js';

/** The store's one required option, through each door that takes it. */
const OPENERS: [string, (filename: unknown) => unknown][] = [
  ['createSqliteStore', (filename) => createSqliteStore({ filename: filename as string })],
  [
    "createSqliteStore, migrations: 'refuse'",
    (filename) => createSqliteStore({ filename: filename as string, migrations: 'refuse' }),
  ],
  ['migrate', (filename) => migrate({ filename: filename as string })],
  ['pendingMigrations', (filename) => pendingMigrations({ filename: filename as string })],
  ['openDatabase', (filename) => openDatabase(filename as string)],
];

const messageOf = async (open: (filename: unknown) => unknown, filename: unknown): Promise<string> => {
  try {
    await open(filename);
  } catch (error) {
    if (error instanceof TypeError) return error.message;
    throw error;
  }
  throw new Error('opened without a filename');
};

describe.each(OPENERS)(
  '%s: filename left out or empty gets one message, with how to make a value',
  (_name, open) => {
    it('names the option and what to pass', async () => {
      const missing = await messageOf(open, undefined);
      expect(missing).toMatch(/^keyhook: filename is required\. /);
      expect(missing).toContain("createSqliteStore({ filename: './data/keyhook.db' })");
    });

    it.each([
      ['empty', ''],
      ['spaces', '  '],
      ['null', null],
    ])('%s: the same message as missing', async (_case, filename) => {
      expect(await messageOf(open, filename)).toBe(await messageOf(open, undefined));
    });
  },
);
