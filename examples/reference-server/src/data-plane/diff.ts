import type { Change, ChangeCounts, ChangeRecord } from './model.js';

export interface KeyedHash {
  key: string;
  contentHash: string;
}

/**
 * What a run changes (data-plane.md §4.3): its pinned item set against the base generation's.
 * A key only in the pinned set is added; in both with another hash, updated; with the same hash,
 * unchanged; only in the generation, removed. The result is in key order.
 */
export function diffItems(pinned: readonly KeyedHash[], base: readonly KeyedHash[]): ChangeRecord[] {
  const before = new Map(base.map((item) => [item.key, item.contentHash]));
  const changes: ChangeRecord[] = [];
  for (const item of pinned) {
    const previous = before.get(item.key);
    before.delete(item.key);
    const change: Change =
      previous === undefined ? 'added' : previous === item.contentHash ? 'unchanged' : 'updated';
    changes.push({ key: item.key, change, contentHash: item.contentHash, previousHash: previous ?? null });
  }
  for (const [key, previousHash] of before) {
    changes.push({ key, change: 'removed', contentHash: null, previousHash });
  }
  return changes.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
}

export function countChanges(changes: readonly ChangeRecord[]): ChangeCounts {
  const counts: ChangeCounts = { added: 0, updated: 0, removed: 0, unchanged: 0 };
  for (const { change } of changes) counts[change]++;
  return counts;
}

/** Nothing to publish: no item added, updated or removed. */
export function isNoop(counts: ChangeCounts): boolean {
  return counts.added === 0 && counts.updated === 0 && counts.removed === 0;
}
