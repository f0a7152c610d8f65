import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from './api-client.js';
import { asApiError } from './use-submit.js';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `deps` change or on `reload()`; an answer that arrives after a newer call is dropped. */
export function useLoader<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: ApiError | null; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  const [round, setRound] = useState(0);
  const latest = useRef(0);
  // The caller names what `load` depends on, as deps.
  useEffect(() => {
    const call = ++latest.current;
    setState((previous) => ({ ...previous, loading: true }));
    load().then(
      (data) => call === latest.current && setState({ data, error: null, loading: false }),
      (error: unknown) => {
        if (call !== latest.current) return;
        setState((previous) => ({ ...previous, error: asApiError(error), loading: false }));
      },
    );
  }, [...deps, round]);
  const reload = useCallback(() => setRound((n) => n + 1), []);
  return { ...state, reload };
}
