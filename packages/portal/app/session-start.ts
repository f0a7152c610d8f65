import { type ApiClient, ApiError } from './api-client.js';
import type { PortalExchangeAnswer, PortalSessionAnswer, PortalSessionView } from './api-types.js';

export type SessionStart =
  | { state: 'ready'; session: PortalSessionView }
  /** A link of another account than the session this browser has open: the person chooses. */
  | { state: 'choose'; current: PortalSessionView; next: PortalSessionView }
  | { state: 'refused'; message: string }
  | { state: 'ended' }
  | { state: 'failed'; message: string };

/** Whether the URL's fragment carries a portal link's token (`#token=kpl_…`). */
export function hasLinkToken(): boolean {
  return new URLSearchParams(location.hash.slice(1)).has('token');
}

/**
 * Opens the session: a `#token=` in the URL is exchanged once (and taken out of the URL and
 * the history at once, whatever the answer); without one, the standing session is asked for.
 *
 * - Inside an iframe the exchange asks for a session token, since a cross-site frame cannot count
 *   on its cookie.
 * - When this browser has a session open already, the link's session is held in memory too. It
 *   becomes the browser's (its cookie) at once when it is the same account's, and only after the
 *   person chooses when it is another's (docs/decisions.md §22.14).
 */
export async function startSession(api: ApiClient): Promise<SessionStart> {
  const token = new URLSearchParams(location.hash.slice(1)).get('token');
  try {
    if (!token) return { state: 'ready', session: await standingSession(api) };
    history.replaceState(null, '', `${location.pathname}${location.search}`);
    const framed = window.self !== window.top;
    const open = framed ? null : await standingSession(api).catch(ifNoSession(null));
    const answer = await api.call<PortalExchangeAnswer>(
      'POST',
      '/exchange',
      { token, embedded: framed || open !== null },
      { quiet401: true },
    );
    api.holdSession(answer.csrfToken, answer.sessionToken, answer.session.id);
    if (open === null || open.tenantId === answer.session.tenantId) {
      if (open !== null) await switchSession(api);
      return { state: 'ready', session: answer.session };
    }
    return { state: 'choose', current: open, next: answer.session };
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.status === 401)
      return token ? { state: 'refused', message: error.message } : { state: 'ended' };
    return { state: 'failed', message: error.message };
  }
}

/** Makes the session held in memory the browser's: its cookie from now on. */
export async function switchSession(api: ApiClient): Promise<void> {
  await api.call('POST', '/switch', undefined, { quiet401: true });
  api.useCookie();
}

/** Ends the session held in memory, keeping the browser's, and goes on in that one. */
export async function keepStandingSession(api: ApiClient): Promise<PortalSessionView> {
  await api.call('POST', '/sign-out', undefined, { quiet401: true });
  api.forgetSession();
  return standingSession(api);
}

/** The session the browser's cookie opens; a 401 when there is none. */
async function standingSession(api: ApiClient): Promise<PortalSessionView> {
  const answer = await api.call<PortalSessionAnswer>('GET', '/session', undefined, { quiet401: true });
  api.holdSession(answer.csrfToken, undefined, answer.session.id);
  return answer.session;
}

function ifNoSession<T>(value: T): (error: unknown) => T {
  return (error) => {
    if (error instanceof ApiError && error.status === 401) return value;
    throw error;
  };
}
