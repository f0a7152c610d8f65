import type { HttpMethod, RouteDefinition } from './messages.js';

export interface Matched<Route> {
  route: Route;
  params: Record<string, string>;
}

/** A small exact-segment router; `:name` segments capture one percent-decoded segment. */
export class Router<Route extends RouteDefinition> {
  private readonly compiled: { route: Route; segments: string[] }[];

  constructor(readonly routes: readonly Route[]) {
    this.compiled = routes.map((route) => ({ route, segments: split(route.path) }));
  }

  match(method: string, path: string): Matched<Route> | null {
    const segments = split(path);
    // HEAD is GET without the body; the HTTP server drops the body.
    const wanted = method.toUpperCase() === 'HEAD' ? 'GET' : (method.toUpperCase() as HttpMethod);
    for (const { route, segments: pattern } of this.compiled) {
      if (route.method !== wanted || pattern.length !== segments.length) continue;
      const params: Record<string, string> = {};
      let ok = true;
      for (let i = 0; i < pattern.length && ok; i++) {
        const expected = pattern[i]!;
        const actual = segments[i]!;
        if (expected.startsWith(':')) {
          const decoded = safeDecode(actual);
          if (decoded === null || decoded === '') ok = false;
          else params[expected.slice(1)] = decoded;
        } else if (expected !== actual) {
          ok = false;
        }
      }
      if (ok) return { route, params };
    }
    return null;
  }
}

function split(path: string): string[] {
  return path.split('/').filter((segment) => segment !== '');
}

function safeDecode(segment: string): string | null {
  try {
    return decodeURIComponent(segment);
  } catch {
    return null;
  }
}
