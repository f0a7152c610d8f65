/** One field of an event's data, as the catalog page lists it. */
export interface SchemaField {
  /** Dotted from the top: `counts.added`. */
  name: string;
  /** "integer", "string or null", "array of string", … */
  type: string;
  required: boolean;
  description: string | undefined;
}

type Node = {
  type?: string | string[];
  description?: string;
  properties?: Record<string, Node>;
  required?: string[];
  items?: Node;
  anyOf?: Node[];
  enum?: unknown[];
  const?: unknown;
};

/**
 * The fields a JSON Schema (as zod writes it) describes, depth first, each nested object's after
 * its own row. What it cannot say plainly it calls "any".
 */
export function schemaFields(schema: Record<string, unknown> | null): SchemaField[] {
  const fields: SchemaField[] = [];
  const walk = (node: Node, prefix: string) => {
    for (const [key, child] of Object.entries(node.properties ?? {})) {
      const name = prefix ? `${prefix}.${key}` : key;
      const object = objectOf(child);
      fields.push({
        name,
        type: typeOf(child),
        required: node.required?.includes(key) ?? false,
        description: child.description ?? child.anyOf?.find((option) => option.description)?.description,
      });
      if (object) walk(object, name);
    }
  };
  if (schema) walk(schema as Node, '');
  return fields;
}

function objectOf(node: Node): Node | undefined {
  if (node.properties) return node;
  return node.anyOf?.find((option) => option.properties);
}

function typeOf(node: Node): string {
  if (node.enum) return node.enum.map((value) => JSON.stringify(value)).join(' or ');
  if (node.const !== undefined) return JSON.stringify(node.const);
  if (node.anyOf) return [...new Set(node.anyOf.map(typeOf))].join(' or ');
  const types = Array.isArray(node.type) ? node.type : node.type ? [node.type] : [];
  if (types.length === 0) return 'any';
  return types
    .map((type) => (type === 'array' ? `array of ${node.items ? typeOf(node.items) : 'any'}` : type))
    .join(' or ');
}
