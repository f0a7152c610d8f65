import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { exampleDataFor, exampleFromJsonSchema } from '../src/catalog/example-data.js';

/** The generated example of a one-property object schema: the value made for `field`. */
const made = (field: z.ZodType) => exampleDataFor(z.object({ field }))?.['field'];

describe('example data made from an event schema (docs/decisions.md §8.16)', () => {
  it('a type without a schema has {}', () => {
    expect(exampleDataFor(undefined)).toEqual({});
  });

  it('strings honour their format, each as zod checks it', () => {
    expect(made(z.email())).toBe('user@example.com');
    expect(made(z.url())).toBe('https://example.com/');
    expect(made(z.uuid())).toBe('123e4567-e89b-42d3-a456-426614174000');
    expect(made(z.iso.datetime())).toBe('2026-01-01T00:00:00Z');
    expect(made(z.iso.datetime({ offset: true }))).toBe('2026-01-01T00:00:00Z');
    expect(made(z.iso.date())).toBe('2026-01-01');
    expect(made(z.iso.duration())).toBe('P1D');
    expect(made(z.ipv4())).toBe('192.0.2.1');
    expect(made(z.ipv6())).toBe('2001:db8::1');
    for (const format of [
      z.guid(),
      z.cuid(),
      z.cuid2(),
      z.ulid(),
      z.nanoid(),
      z.e164(),
      z.base64(),
      z.cidrv4(),
    ]) {
      expect(made(format), format.format ?? '').toBeTypeOf('string');
    }
  });

  it('a string zod writes as a pattern alone (a time, a local date-time) takes a candidate the pattern matches', () => {
    expect(made(z.iso.time())).toBe('12:00:00');
    expect(made(z.iso.datetime({ local: true }))).toBe('2026-01-01T00:00:00Z');
  });

  it('a plain string is `string`, made as long as minLength asks and cut at maxLength', () => {
    expect(made(z.string())).toBe('string');
    expect(made(z.string().min(10).max(11))).toBe('stringstrin');
    expect(made(z.string().max(3))).toBe('str');
  });

  it('enum and const take the first; examples and defaults the schema declares come before anything made', () => {
    expect(made(z.enum(['draft', 'open']))).toBe('draft');
    expect(made(z.literal('invoice'))).toBe('invoice');
    expect(made(z.string().meta({ examples: ['in_123', 'in_456'] }))).toBe('in_123');
    expect(made(z.number().default(42))).toBe(42);
  });

  it('numbers are 0 moved into their bounds, onto multipleOf, whole for integers', () => {
    expect(made(z.number())).toBe(0);
    expect(made(z.int())).toBe(0);
    expect(made(z.number().positive())).toBe(1);
    expect(made(z.int().min(3).max(9).multipleOf(2))).toBe(4);
    expect(made(z.int().max(-5))).toBe(-5);
    expect(made(z.number().gt(0).lt(0.5))).toBe(0.25);
    expect(made(z.int().nonnegative())).toBe(0);
  });

  it('objects fill required and optional properties; arrays one item, or minItems; tuples each place', () => {
    const schema = z.object({
      id: z.string(),
      note: z.string().optional(),
      paid: z.boolean(),
      voided: z.null(),
      lines: z.array(z.object({ sku: z.string(), quantity: z.int().positive() })),
      tags: z.array(z.string()).min(2),
      point: z.tuple([z.number(), z.number()]),
      totals: z.record(z.enum(['net', 'gross']), z.number()),
      extra: z.record(z.string(), z.number()),
    });
    expect(exampleDataFor(schema)).toEqual({
      id: 'string',
      note: 'string',
      paid: true,
      voided: null,
      lines: [{ sku: 'string', quantity: 1 }],
      tags: ['string', 'string'],
      point: [0, 0],
      totals: { net: 0, gross: 0 },
      extra: {},
    });
  });

  it('unions take their first branch that is not null; a nullable field its value', () => {
    expect(made(z.string().nullable())).toBe('string');
    expect(made(z.union([z.number(), z.string()]))).toBe(0);
    expect(
      made(
        z.discriminatedUnion('kind', [
          z.object({ kind: z.literal('card'), last4: z.string() }),
          z.object({ kind: z.literal('bank') }),
        ]),
      ),
    ).toEqual({ kind: 'card', last4: 'string' });
  });

  it('a recursive schema ends: deep down only what is required is made', () => {
    type Category = { name: string; children?: Category[] };
    const category: z.ZodType<Category> = z.object({
      name: z.string(),
      get children() {
        return z.array(category).optional();
      },
    });
    const example = exampleDataFor(z.object({ root: category })) as { root: Category };
    let depth = 0;
    for (let node: Category | undefined = example.root; node; node = node.children?.[0]) depth++;
    expect(depth).toBeGreaterThan(1);
    expect(depth).toBeLessThan(10);
  });

  it('is deterministic: the same schema always gives the same example', () => {
    const schema = z.object({ at: z.iso.datetime(), id: z.uuid(), amount: z.number().min(5) });
    expect(exampleDataFor(schema)).toEqual(exampleDataFor(schema));
    expect(exampleDataFor(schema)).toEqual({
      at: '2026-01-01T00:00:00Z',
      id: '123e4567-e89b-42d3-a456-426614174000',
      amount: 5,
    });
  });

  it('none when the made value fails the schema: a refinement, a pattern no candidate matches, a Date, a required endless recursion', () => {
    expect(exampleDataFor(z.object({ code: z.string().refine((value) => value === 'EUR') }))).toBeUndefined();
    expect(exampleDataFor(z.object({ code: z.string().regex(/^[A-Z]{3}$/) }))).toBeUndefined();
    expect(exampleDataFor(z.object({ at: z.date() }))).toBeUndefined();
    expect(exampleDataFor(z.object({ when: z.string() }).refine(() => false))).toBeUndefined();
    type Chain = { next: Chain };
    const chain: z.ZodType<Chain> = z.object({
      get next() {
        return chain;
      },
    });
    expect(exampleDataFor(z.object({ chain }))).toBeUndefined();
  });

  it('a transform that accepts what was made keeps the example (the input side, what publish takes)', () => {
    const schema = z.object({ cents: z.string().transform((text) => text.length) });
    expect(exampleDataFor(schema)).toEqual({ cents: 'string' });
  });

  it('from a JSON Schema it cannot read a value of: undefined', () => {
    expect(exampleFromJsonSchema(false)).toBeUndefined();
    expect(exampleFromJsonSchema({ $ref: '#/$defs/missing' })).toBeUndefined();
    expect(exampleFromJsonSchema(true)).toBeNull();
  });
});
