/** One refusal of the portal API, from its `{ error: { code, message, details } }` envelope. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: { path?: string; message: string; reason?: string }[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The message of the detail about `path` (a form field), if there is one. */
  fieldMessage(path: string): string | undefined {
    return this.details.find((detail) => detail.path === path)?.message;
  }
}

export interface ApiClientOptions {
  /** The portal's base path; calls go to `${basePath}/api/…`. */
  basePath: string;
  /**
   * Called once when the API says the session is gone (401), so the app shows the ended page;
   * `replaced` when this browser opened another session since the page started.
   */
  onSessionEnded: (reason: 'ended' | 'replaced') => void;
}

/**
 * The portal API's client. It holds the CSRF token and, inside an iframe or until the person
 * chooses to switch accounts, the session token, in memory only: never in localStorage or
 * sessionStorage, where a script could read them later. Every request names the session the page
 * started with (`x-portal-session`), so a cookie that now opens another session is refused.
 */
export class ApiClient {
  private csrfToken: string | null = null;
  private sessionToken: string | null = null;
  private sessionId: string | null = null;

  constructor(private readonly options: ApiClientOptions) {}

  /** Keeps what the exchange or `GET /session` answered. */
  holdSession(csrfToken: string, sessionToken?: string, sessionId?: string): void {
    this.csrfToken = csrfToken;
    if (sessionToken !== undefined) this.sessionToken = sessionToken;
    if (sessionId !== undefined) this.sessionId = sessionId;
  }

  /** The session is the browser's cookie now: stop sending its token. */
  useCookie(): void {
    this.sessionToken = null;
  }

  /** Whether the session is held in memory (a framed page, or a link not switched to). */
  get inMemory(): boolean {
    return this.sessionToken !== null;
  }

  forgetSession(): void {
    this.csrfToken = null;
    this.sessionToken = null;
    this.sessionId = null;
  }

  get<T>(path: string, query?: Record<string, string | null | undefined>): Promise<T> {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query ?? {})) if (value) params.set(name, value);
    const search = params.toString();
    return this.call<T>('GET', search ? `${path}?${search}` : path);
  }

  post<T>(path: string, body?: unknown): Promise<T> {
    return this.call<T>('POST', path, body);
  }

  patch<T>(path: string, body: unknown): Promise<T> {
    return this.call<T>('PATCH', path, body);
  }

  delete<T>(path: string): Promise<T> {
    return this.call<T>('DELETE', path);
  }

  /** A call made before there is a session to lose: a 401 is the caller's to explain. */
  async call<T>(
    method: string,
    path: string,
    body?: unknown,
    options: { quiet401?: boolean } = {},
  ): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (method !== 'GET' && this.csrfToken) headers['x-csrf-token'] = this.csrfToken;
    if (this.sessionToken) headers['authorization'] = `Bearer ${this.sessionToken}`;
    if (this.sessionId) headers['x-portal-session'] = this.sessionId;
    let response: Response;
    try {
      response = await fetch(`${this.options.basePath}/api${path}`, {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
        credentials: 'same-origin',
      });
    } catch {
      throw new ApiError(
        0,
        'network',
        'The portal could not be reached. Check your connection and try again.',
      );
    }
    if (response.status === 204) return undefined as T;
    const payload: unknown = await response.json().catch(() => null);
    if (response.ok) return payload as T;
    const error = toApiError(response.status, payload);
    if (response.status === 401 && !options.quiet401) {
      this.forgetSession();
      const replaced = error.details.some((detail) => detail.reason === 'replaced');
      this.options.onSessionEnded(replaced ? 'replaced' : 'ended');
    }
    throw error;
  }
}

function toApiError(status: number, payload: unknown): ApiError {
  const envelope = (payload as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)
    ?.error;
  if (envelope && typeof envelope.code === 'string' && typeof envelope.message === 'string') {
    const details = Array.isArray(envelope.details) ? (envelope.details as ApiError['details']) : [];
    return new ApiError(status, envelope.code, envelope.message, details);
  }
  return new ApiError(status, 'unexpected', `The portal answered ${status}. Try again in a moment.`);
}
