/** See generate.mjs. */
export function generatePrismaClient(options: { into: string; javascript?: boolean }): Promise<string>;
