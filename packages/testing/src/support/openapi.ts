import { Validator } from '@seriousme/openapi-schema-validator';

/** What is wrong with `document` as an OpenAPI 3.1 document: nothing, when it is valid. */
export async function openApiProblems(document: unknown): Promise<unknown[]> {
  const result = await new Validator().validate(document as Parameters<Validator['validate']>[0]);
  return result.valid ? [] : [result.errors ?? 'invalid'].flat();
}

/** `METHOD /path/{param}` for each route a server registered (HEAD left out), sorted. */
export function registeredRouteKeys(routes: readonly { method: string; url: string }[]): string[] {
  return routes
    .filter((route) => route.method !== 'HEAD')
    .map((route) => `${route.method} ${route.url.replace(/:(\w+)/g, '{$1}')}`)
    .sort();
}

/** The same keys for each operation an OpenAPI document describes, sorted. */
export function documentedRouteKeys(document: { paths?: Record<string, object> }): string[] {
  return Object.entries(document.paths ?? {})
    .flatMap(([path, methods]) => Object.keys(methods).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();
}
