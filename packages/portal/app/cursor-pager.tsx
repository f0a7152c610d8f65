import { useState } from 'preact/hooks';

export interface CursorPager {
  /** The cursor of the page shown; null for the first. */
  cursor: string | null;
  /** 1 for the first page. */
  page: number;
  next: (nextCursor: string) => void;
  previous: () => void;
  reset: () => void;
}

/** Pages by the lists' opaque cursors; "previous" goes back through the cursors already seen. */
export function useCursorPager(): CursorPager {
  const [cursors, setCursors] = useState<(string | null)[]>([null]);
  return {
    cursor: cursors[cursors.length - 1] ?? null,
    page: cursors.length,
    next: (nextCursor) => setCursors((list) => [...list, nextCursor]),
    previous: () => setCursors((list) => (list.length > 1 ? list.slice(0, -1) : list)),
    reset: () => setCursors([null]),
  };
}

export function PagerControls({
  pager,
  nextCursor,
  label,
}: {
  pager: CursorPager;
  nextCursor: string | null | undefined;
  label: string;
}) {
  if (pager.page === 1 && !nextCursor) return null;
  return (
    <nav class="pager" aria-label={label}>
      <button type="button" onClick={pager.previous} disabled={pager.page === 1}>
        Previous page
      </button>
      <span>Page {pager.page}</span>
      <button type="button" onClick={() => nextCursor && pager.next(nextCursor)} disabled={!nextCursor}>
        Next page
      </button>
    </nav>
  );
}
