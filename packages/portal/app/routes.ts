/** The portal's pages as hash routes: `#/keys`, `#/webhooks/<id>`, … */

export type Route =
  | { page: 'keys' }
  | { page: 'webhooks' }
  | { page: 'webhook'; webhookId: string }
  | { page: 'delivery'; webhookId: string; deliveryId: string }
  | { page: 'catalog' }
  | { page: 'unknown' };

const ID = '([A-Za-z0-9_]+)';
const PATTERNS: [RegExp, (match: RegExpExecArray) => Route][] = [
  [/^#\/keys$/, () => ({ page: 'keys' })],
  [/^#\/webhooks$/, () => ({ page: 'webhooks' })],
  [new RegExp(`^#/webhooks/${ID}$`), (m) => ({ page: 'webhook', webhookId: m[1]! })],
  [
    new RegExp(`^#/webhooks/${ID}/deliveries/${ID}$`),
    (m) => ({ page: 'delivery', webhookId: m[1]!, deliveryId: m[2]! }),
  ],
  [/^#\/catalog$/, () => ({ page: 'catalog' })],
  // The catalog's first address, for links kept from before.
  [/^#\/events$/, () => ({ page: 'catalog' })],
];

export function parseRoute(hash: string): Route {
  for (const [pattern, route] of PATTERNS) {
    const match = pattern.exec(hash);
    if (match) return route(match);
  }
  return { page: 'unknown' };
}

/** The hash of a route, for links. */
export function hrefOf(route: Exclude<Route, { page: 'unknown' }>): string {
  switch (route.page) {
    case 'webhook':
      return `#/webhooks/${route.webhookId}`;
    case 'delivery':
      return `#/webhooks/${route.webhookId}/deliveries/${route.deliveryId}`;
    default:
      return `#/${route.page}`;
  }
}
