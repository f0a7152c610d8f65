import { z } from 'zod';

/** A JSON Schema (2020-12) as `z.toJSONSchema` writes one: an object, or `true` / `false`. */
type JsonSchema = boolean | { [keyword: string]: unknown };

/** Values for the string formats zod writes, each one its own check accepts. */
const FORMAT_EXAMPLES: Record<string, string> = {
  email: 'user@example.com',
  uri: 'https://example.com/',
  url: 'https://example.com/',
  uuid: '123e4567-e89b-42d3-a456-426614174000',
  'date-time': '2026-01-01T00:00:00Z',
  date: '2026-01-01',
  time: '12:00:00',
  duration: 'P1D',
  ipv4: '192.0.2.1',
  ipv6: '2001:db8::1',
  hostname: 'example.com',
  base64: 'ZXhhbXBsZQ==',
  base64url: 'ZXhhbXBsZQ',
  cidrv4: '192.0.2.0/24',
  cidrv6: '2001:db8::/32',
  e164: '+14155550100',
  cuid: 'cjld2cjxh0000qzrmn831i7rn',
  cuid2: 'tz4a98xxat96iws9zmbrgj3a',
  ulid: '01ARZ3NDEKTSV4RRFFQ69G5FAV',
  nanoid: 'V1StGXR8_Z5jdHi6B-myT',
};

/** What a string with a `pattern` but no known format is tried with, in order: the first it matches. */
const PATTERN_CANDIDATES = ['string', ...new Set(Object.values(FORMAT_EXAMPLES))];

/** Below this depth optional properties and one array item are filled in; from it on, only what is required. */
const OPTIONAL_DEPTH = 4;

/** A schema that nests deeper than this even with only what is required gets no example. */
const MAX_DEPTH = 32;

/** Thrown inside the walk when no value can be made: exampleFromJsonSchema answers undefined. */
const NO_EXAMPLE = Symbol('no example');

/**
 * An example `data` for an event type (docs/decisions.md §8.16): `{}` without a schema; with one,
 * a value made from its JSON Schema (the input side, what publish takes), kept only when the
 * schema's own `safeParse` accepts it. A schema whose refinements or transforms refuse the made
 * value, or that JSON Schema cannot describe, has none: undefined. Deterministic: the same schema
 * always gives the same example.
 */
export function exampleDataFor(schema: z.ZodType | undefined): Record<string, unknown> | undefined {
  if (schema === undefined) return {};
  let made: unknown;
  try {
    made = exampleFromJsonSchema(z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }));
    // An async refinement throws from a synchronous parse: such a schema gets no example either.
    if (!isPlainObject(made) || !schema.safeParse(made).success) return undefined;
  } catch {
    return undefined;
  }
  return made;
}

/**
 * A value for a JSON Schema: what the schema declares (`examples`, `default`, `const`, the first
 * of an `enum`), else one made from its type: every required property and, near the top, the
 * optional ones; one array item; strings by `format` and length; numbers within their bounds.
 * Unions take their first branch. Undefined when no value can be made (a `false` schema, a
 * required recursion without end, a `$ref` it cannot resolve).
 */
export function exampleFromJsonSchema(root: JsonSchema): unknown {
  const definitions = isPlainObject(root) && isPlainObject(root['$defs']) ? root['$defs'] : {};

  const resolve = (ref: string): JsonSchema => {
    if (ref === '#') return root;
    const name = /^#\/\$defs\/(.+)$/.exec(ref)?.[1];
    const target = name === undefined ? undefined : definitions[decodeURIComponent(name)];
    if (typeof target !== 'boolean' && !isPlainObject(target)) throw NO_EXAMPLE;
    return target;
  };

  const walk = (schema: JsonSchema, depth: number): unknown => {
    if (depth > MAX_DEPTH || schema === false) throw NO_EXAMPLE;
    if (schema === true) return null;
    const declared = declaredValue(schema);
    if (declared.found) return structuredClone(declared.value);
    if (typeof schema['$ref'] === 'string') return walk(resolve(schema['$ref']), depth + 1);
    const shallow = depth >= OPTIONAL_DEPTH;
    const allOf = schemas(schema['allOf']);
    if (allOf.length > 0) {
      const parts = allOf.map((part) => walk(part, depth + 1));
      return parts.every(isPlainObject) ? Object.assign({}, ...parts) : parts[0];
    }
    const branches = [...schemas(schema['anyOf']), ...schemas(schema['oneOf'])];
    if (branches.length > 0) {
      const isNull = (branch: JsonSchema) => isPlainObject(branch) && branch['type'] === 'null';
      // Deep down, a nullable branch ends a recursive schema.
      if (shallow && branches.some(isNull)) return null;
      return walk(branches.find((branch) => !isNull(branch)) ?? branches[0]!, depth + 1);
    }
    switch (typeOf(schema, shallow)) {
      case 'null':
        return null;
      case 'boolean':
        return true;
      case 'integer':
        return numberFor(schema, true);
      case 'number':
        return numberFor(schema, false);
      case 'string':
        return stringFor(schema);
      case 'array':
        return arrayFor(schema, depth, shallow);
      case 'object':
        return objectFor(schema, depth, shallow);
      default:
        return null; // no type: any value passes
    }
  };

  const arrayFor = (schema: Record<string, unknown>, depth: number, shallow: boolean): unknown[] => {
    const items = schema['prefixItems'] === undefined ? [] : schemas(schema['prefixItems']);
    const made = items.map((item) => walk(item, depth + 1));
    const rest = schema['items'];
    if (rest === undefined || rest === false) return made;
    const min = numberOr(schema['minItems'], 0);
    const max = numberOr(schema['maxItems'], Number.POSITIVE_INFINITY);
    const count = Math.min(Math.max(min, made.length + (shallow ? 0 : 1)), max);
    while (made.length < count) made.push(walk(rest as JsonSchema, depth + 1));
    return made;
  };

  const objectFor = (schema: Record<string, unknown>, depth: number, shallow: boolean) => {
    const properties = isPlainObject(schema['properties']) ? schema['properties'] : {};
    const required = new Set(Array.isArray(schema['required']) ? (schema['required'] as string[]) : []);
    const made: Record<string, unknown> = {};
    for (const [name, property] of Object.entries(properties)) {
      if (required.has(name) || !shallow) made[name] = walk(property as JsonSchema, depth + 1);
    }
    // A record with required keys (a zod record over an enum): each key, with the record's value.
    const values = schema['additionalProperties'];
    for (const name of required) {
      if (name in made) continue;
      if (values === undefined || values === false) throw NO_EXAMPLE;
      made[name] = walk(values as JsonSchema, depth + 1);
    }
    return made;
  };

  try {
    return walk(root, 0);
  } catch (error) {
    if (error === NO_EXAMPLE) return undefined;
    throw error;
  }
}

/** `examples[0]`, `default`, `const` or `enum[0]`, when the schema declares one. */
function declaredValue(schema: Record<string, unknown>): { found: boolean; value?: unknown } {
  const examples = schema['examples'];
  if (Array.isArray(examples) && examples.length > 0) return { found: true, value: examples[0] };
  if ('default' in schema) return { found: true, value: schema['default'] };
  if ('const' in schema) return { found: true, value: schema['const'] };
  const choices = schema['enum'];
  if (Array.isArray(choices) && choices.length > 0) return { found: true, value: choices[0] };
  return { found: false };
}

/** The schema's type; of a list, the first that is not null (null deep down, where it ends recursion). */
function typeOf(schema: Record<string, unknown>, shallow: boolean): unknown {
  const type = schema['type'];
  if (Array.isArray(type)) {
    if (shallow && type.includes('null')) return 'null';
    return type.find((entry) => entry !== 'null') ?? type[0];
  }
  if (type !== undefined) return type;
  if ('properties' in schema || 'additionalProperties' in schema) return 'object';
  if ('items' in schema || 'prefixItems' in schema) return 'array';
  return undefined;
}

/** 0 moved into the bounds (inclusive or exclusive), then onto `multipleOf`, then whole for an integer. */
function numberFor(schema: Record<string, unknown>, integer: boolean): number {
  const minimum = numberOr(schema['minimum'], Number.NEGATIVE_INFINITY);
  const maximum = numberOr(schema['maximum'], Number.POSITIVE_INFINITY);
  const above = numberOr(schema['exclusiveMinimum'], Number.NEGATIVE_INFINITY);
  const below = numberOr(schema['exclusiveMaximum'], Number.POSITIVE_INFINITY);
  let value = 0;
  if (value < minimum) value = minimum;
  if (value <= above) value = above + 1;
  if (value > maximum) value = maximum;
  if (value >= below) value = below - 1;
  // A range narrower than 1, such as (0, 0.5): its middle.
  if (value < minimum || value <= above) value = (Math.max(minimum, above) + Math.min(maximum, below)) / 2;
  const step = schema['multipleOf'];
  if (typeof step === 'number' && step > 0) value = Math.ceil(value / step) * step;
  return integer ? Math.ceil(value) : value;
}

/**
 * The format's example; else, with a `pattern`, the first candidate it matches (a time, a local
 * date-time: zod writes them as a pattern alone); else `string`, repeated to `minLength` and cut
 * at `maxLength`.
 */
function stringFor(schema: Record<string, unknown>): string {
  const format = schema['format'] ?? schema['contentEncoding'];
  const known = typeof format === 'string' ? FORMAT_EXAMPLES[format] : undefined;
  if (known !== undefined) return known;
  const pattern = schema['pattern'];
  if (typeof pattern === 'string') {
    const matching = PATTERN_CANDIDATES.find((candidate) => matches(pattern, candidate));
    if (matching !== undefined) return matching;
  }
  const min = numberOr(schema['minLength'], 0);
  const max = numberOr(schema['maxLength'], Number.POSITIVE_INFINITY);
  let text = 'string';
  while (text.length < min) text += 'string';
  return text.slice(0, Math.max(min, Math.min(text.length, max)));
}

function matches(pattern: string, text: string): boolean {
  try {
    return new RegExp(pattern).test(text);
  } catch {
    return false; // not a pattern this engine reads
  }
}

function schemas(value: unknown): JsonSchema[] {
  return Array.isArray(value)
    ? value.filter((entry): entry is JsonSchema => typeof entry === 'boolean' || isPlainObject(entry))
    : [];
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === 'number' && Number.isFinite(value) ? value : fallback;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
