import type { AdminSession } from '../admin/session.js';
import type { ApiKeyRecord } from '../store/types.js';
import type { KeyhookRequest, KeyhookResponse, RouteDefinition } from './types.js';

interface BaseContext {
  request: KeyhookRequest;
  params: Record<string, string>;
  query: URLSearchParams;
  /** The parsed JSON body, for routes with `body: 'json'`. */
  body: unknown;
}

export type RouteSpec =
  | (RouteDefinition & {
      auth: 'admin';
      body: 'json' | 'none';
      run(context: BaseContext & { admin: AdminSession }): Promise<KeyhookResponse>;
    })
  | (RouteDefinition & {
      auth: 'apiKey';
      body: 'json' | 'none';
      run(context: BaseContext & { apiKey: ApiKeyRecord }): Promise<KeyhookResponse>;
    });
