import { z } from 'zod';

/** A scope a host's keys may carry, with what it allows (shown in the OpenAPI document). */
export interface ScopeDefinition<Name extends string = string> {
  name: Name;
  description?: string | undefined;
}

/** A scope as `createKeyhook({ scopes })` takes it: its name, or its name and description. */
export type ScopeInput = string | ScopeDefinition;

/** The names in a scope list: `'invoices:read' | 'invoices:write'` for a list declared inline or `as const`. */
export type ScopeNameOf<List extends readonly ScopeInput[]> = List[number] extends infer Item
  ? Item extends string
    ? Item
    : Item extends ScopeDefinition<infer Name>
      ? Name
      : never
  : never;

/** Scope names are stored and compared as they are: letters, digits and `:._-`, 1–64 of them. */
export const SCOPE_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9:._-]{0,63}$/;

/** A host's scopes, checked once at start: what keys may carry and how the document describes them. */
export class ScopeCatalog {
  readonly names: readonly string[];
  readonly descriptions: ReadonlyMap<string, string>;
  /** One scope name, as the key routes validate it (400 `validation_failed` names the allowed values). */
  readonly schema: z.ZodType<string>;
  private readonly known: ReadonlySet<string>;

  constructor(inputs: readonly ScopeInput[] = []) {
    if (!Array.isArray(inputs)) throw new TypeError('keyhook: scopes must be a list of scope names');
    const descriptions = new Map<string, string>();
    const names: string[] = [];
    for (const input of inputs) {
      const name = typeof input === 'string' ? input : input?.name;
      if (typeof name !== 'string' || !SCOPE_NAME_PATTERN.test(name)) {
        throw new TypeError(
          `keyhook: scope ${JSON.stringify(name)} is not a scope name (1–64 of A–Z a–z 0–9 : . _ -, starting with a letter or digit)`,
        );
      }
      if (names.includes(name)) throw new TypeError(`keyhook: scope ${name} is declared twice`);
      names.push(name);
      const description = typeof input === 'string' ? undefined : input.description;
      if (description !== undefined) descriptions.set(name, description);
    }
    this.names = names;
    this.descriptions = descriptions;
    this.known = new Set(names);
    this.schema =
      names.length === 0
        ? z.never({ error: 'this API declares no scopes (createKeyhook({ scopes }))' })
        : z.enum(names as [string, ...string[]]).meta({
            description: scopeListing(names, descriptions),
            'x-enumDescriptions': Object.fromEntries(descriptions),
          });
  }

  has(name: unknown): boolean {
    return typeof name === 'string' && this.known.has(name);
  }

  /** For code that names a scope (a guard): a name outside the list is a bug, refused at setup. */
  assertKnown(name: string | undefined, where: string): void {
    if (name !== undefined && !this.has(name)) {
      throw new TypeError(
        `keyhook: ${where}: unknown scope ${JSON.stringify(name)}; declared: ${this.names.join(', ')}`,
      );
    }
  }
}

function scopeListing(names: readonly string[], descriptions: ReadonlyMap<string, string>): string {
  return [
    'A scope this API defines:',
    ...names.map((name) => {
      const description = descriptions.get(name);
      return description === undefined ? `- \`${name}\`` : `- \`${name}\`: ${description}`;
    }),
  ].join('\n');
}
