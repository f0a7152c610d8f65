import { type ApiClient, ApiError } from './api-client.js';
import type { PortalSession } from './api-types.js';

export type SessionStart =
  | { state: 'ready'; session: PortalSession }
  | { state: 'refused'; message: string }
  | { state: 'ended' }
  | { state: 'failed'; message: string };

interface SessionAnswer {
  session: PortalSession;
  csrfToken: string;
  sessionToken?: string;
}

/** Whether the URL's fragment carries a portal link's token (`#token=kpl_…`). */
export function hasLinkToken(): boolean {
  return new URLSearchParams(location.hash.slice(1)).has('token');
}

/**
 * Opens the session: a `#token=` in the URL is exchanged once (and taken out of the URL and
 * the history at once, whatever the answer); without one, the standing session is asked for.
 * Inside an iframe the exchange asks for a session token, since a cross-site frame cannot count
 * on its cookie.
 */
export async function startSession(api: ApiClient): Promise<SessionStart> {
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  try {
    if (token) {
      history.replaceState(null, '', `${location.pathname}${location.search}`);
      const embedded = window.self !== window.top;
      const answer = await api.call<SessionAnswer>(
        'POST',
        '/exchange',
        { token, embedded },
        { quiet401: true },
      );
      api.holdSession(answer.csrfToken, answer.sessionToken);
      return { state: 'ready', session: answer.session };
    }
    const answer = await api.call<SessionAnswer>('GET', '/session', undefined, { quiet401: true });
    api.holdSession(answer.csrfToken);
    return { state: 'ready', session: answer.session };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.status === 401)
      return token ? { state: 'refused', message: error.message } : { state: 'ended' };
    return { state: 'failed', message: error.message };
  }
}
