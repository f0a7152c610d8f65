import { POSTGRES_TEST_URL, postgresAvailable } from '@keyhook/testing/postgres';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { StatementBounds } from '../src/bounds.js';
import { PreparedStatements } from '../src/prepared.js';
import { parseTimestamptz, readIsoTimestamptz } from '../src/timestamps.js';

const available = await postgresAvailable();
const pgParser = pg.types.getTypeParser(1184, 'text') as (text: string) => Date | number;

(available ? describe : describe.skip)('the store’s timestamptz parser', () => {
  const client = new pg.Client({ connectionString: POSTGRES_TEST_URL });
  afterAll(() => client.end());

  it('reads every timestamptz Postgres writes as pg’s own parser does, in any time zone', async () => {
    await client.connect();
    const instants = [
      '2026-11-25 18:08:04+00',
      '2026-11-25 18:08:04.1+00',
      '2026-11-25 18:08:04.12+00',
      '2026-11-25 18:08:04.123+00',
      '2026-11-25 18:08:04.123456+00',
      '2026-11-25 18:08:04.999999+00',
      '1970-01-01 00:00:00+00',
      '2000-02-29 23:59:59.5+00',
      '1000-01-02 00:00:00+00',
      '1900-01-01 00:00:00+00',
      '9999-12-30 23:59:59.999+00',
    ];
    // Offsets of whole hours, of minutes, and of seconds (local mean time before 1900).
    const zones = [
      'UTC',
      'America/St_Johns',
      'Asia/Kolkata',
      'Pacific/Chatham',
      'Europe/Amsterdam',
      'Asia/Tokyo',
    ];
    let fast = 0;
    for (const zone of zones) {
      await client.query(`SET TimeZone = '${zone}'`);
      const { rows } = await client.query<{ text: string }>({
        text: 'SELECT unnest($1::timestamptz[])::text AS text',
        values: [instants],
      });
      for (const { text } of rows) {
        const expected = pgParser(text) as Date;
        expect(parseTimestamptz(text).getTime(), `${zone}: ${text}`).toBe(expected.getTime());
        if (readIsoTimestamptz(text) !== null) fast++;
      }
    }
    // All of them by position: none fell back to pg's parser.
    expect(fast).toBe(instants.length * zones.length);
  });

  it('is what the store’s queries read with, whatever pg’s global parser for timestamptz is', async () => {
    await client.query(`SET TimeZone = 'UTC'`);
    const config = new PreparedStatements(true, new StatementBounds(0, false)).config(
      `SELECT '2026-11-25 18:08:04.123+00'::timestamptz AS at`,
      [],
    );
    pg.types.setTypeParser(1184, (text: string) => `global: ${text}`);
    try {
      const { rows } = await client.query<{ at: unknown }>(config);
      expect(rows[0]!.at).toEqual(new Date('2026-11-25T18:08:04.123Z'));
      // The same query without the store's parsers gets the global one.
      const plain = await client.query<{ at: unknown }>(config.text);
      expect(plain.rows[0]!.at).toBe('global: 2026-11-25 18:08:04.123+00');
    } finally {
      pg.types.setTypeParser(1184, pgParser);
    }
  });

  it('hands every other form to pg’s parser: BC, years past 9999 or before 1000, infinity', async () => {
    await client.query(`SET TimeZone = 'Asia/Kolkata'`);
    const { rows } = await client.query<{ text: string }>(
      `SELECT unnest(ARRAY['0044-03-15 12:00:00+00', '0001-01-01 00:00:00+00 BC', '12026-01-01 00:00:00+00',
        '0999-06-01 00:00:00.25+00', 'infinity', '-infinity']::timestamptz[])::text AS text`,
    );
    for (const { text } of rows) {
      expect(readIsoTimestamptz(text), text).toBeNull();
      const expected = pgParser(text);
      const got = parseTimestamptz(text);
      if (typeof expected === 'number') expect(got).toBe(expected);
      else expect((got as Date).getTime(), text).toBe(expected.getTime());
    }
    // Malformed forms pg's parser makes of what it can: the same answer, whatever it is.
    for (const text of [
      '2026-11-25 18:08:04',
      '2026-11-25 18:08:04.+00',
      '2026-11-25T18:08:04Z',
      '2026-11-25 18:08:04+0',
    ]) {
      expect(readIsoTimestamptz(text), text).toBeNull();
      expect(String(parseTimestamptz(text)), text).toBe(String(pgParser(text)));
    }
  });
});
