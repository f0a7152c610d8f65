import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { judgeAttempt } from '../src/delivery/outcome.js';
import { planAfterAttempt } from '../src/delivery/plan.js';
import { autoDisables, DELIVERY_RULES } from '../src/delivery/rules.js';
import {
  checkRetrySchedule,
  DEFAULT_RETRY_SCHEDULE_MS,
  maxAttempts,
  nextAttemptAt,
  parseRetryAfter,
  RETRY_JITTER,
} from '../src/delivery/schedule.js';
import { signatureHeader } from '../src/delivery/signature.js';
import { canTransition, DELIVERY_STATUSES, DELIVERY_TRANSITIONS } from '../src/delivery/states.js';

const T = new Date('2026-05-01T10:00:00.000Z');
const MIN = 60_000;

describe('signing (docs/http-api.md §6.4, docs/decisions.md §6.2)', () => {
  it('is HMAC-SHA256 keyed with the whole whsec_ string over "<t>.<body>", as t=…,v1=<hex>', () => {
    const secret = `whsec_${'ab'.repeat(32)}`;
    const body = '{"id":"evt_1","type":"run.completed","data":{"ünï":"cödé"}}';
    const expected = createHmac('sha256', Buffer.from(secret, 'utf8'))
      .update(`1767225600.${body}`)
      .digest('hex');
    expect(signatureHeader(secret, body, 1_767_225_600)).toBe(`t=1767225600,v1=${expected}`);
    // Bytes and the same text sign alike; one changed byte does not.
    expect(signatureHeader(secret, Buffer.from(body), 1_767_225_600)).toBe(`t=1767225600,v1=${expected}`);
    expect(signatureHeader(secret, body.replace('1', '2'), 1_767_225_600)).not.toContain(expected);
    expect(() => signatureHeader(secret, body, 1.5)).toThrow(/whole seconds/);
  });
});

describe('the retry schedule (docs/http-api.md §6.5, §8)', () => {
  const noJitter = { schedule: DEFAULT_RETRY_SCHEDULE_MS, random: () => 0.5 };

  it('is 1m, 5m, 15m, 1h, 3h, 6h, 12h, 24h after each failure: 9 attempts in all, then none, over more than a day', () => {
    const delays = [1, 2, 3, 4, 5, 6, 7, 8].map(
      (n) => nextAttemptAt(n, T, noJitter)!.getTime() - T.getTime(),
    );
    expect(delays).toEqual([MIN, 5 * MIN, 15 * MIN, 60 * MIN, 180 * MIN, 360 * MIN, 720 * MIN, 1440 * MIN]);
    expect(nextAttemptAt(9, T, noJitter)).toBeNull();
    expect(maxAttempts(DEFAULT_RETRY_SCHEDULE_MS)).toBe(9);
    // 46 h 21 min from the first attempt to the last: at least a day, even jittered low.
    const total = DEFAULT_RETRY_SCHEDULE_MS.reduce((sum, wait) => sum + wait, 0);
    expect(total).toBe((46 * 60 + 21) * MIN);
    expect(total * (1 - RETRY_JITTER)).toBeGreaterThanOrEqual(24 * 60 * MIN);
  });

  it('a host schedule takes up to 12 steps; more, or a wait that is not a positive number, is a TypeError', () => {
    expect(checkRetrySchedule(Array(12).fill(MIN))).toHaveLength(12);
    expect(checkRetrySchedule([])).toEqual([]);
    expect(checkRetrySchedule(undefined)).toBe(DEFAULT_RETRY_SCHEDULE_MS);
    for (const bad of [Array(13).fill(MIN), [MIN, 0], [MIN, -1], [Number.NaN], [Infinity], ['1m']])
      expect(() => checkRetrySchedule(bad as number[]), JSON.stringify(bad)).toThrow(TypeError);
  });

  it('jitters each delay within ±10 %', () => {
    const low = nextAttemptAt(2, T, { ...noJitter, random: () => 0 })!.getTime() - T.getTime();
    const high = nextAttemptAt(2, T, { ...noJitter, random: () => 0.999999 })!.getTime() - T.getTime();
    expect(low).toBe(4.5 * MIN);
    expect(high).toBeGreaterThan(5.49 * MIN);
    expect(high).toBeLessThanOrEqual(5.5 * MIN);
  });

  it('a Retry-After pushes the retry later, never earlier', () => {
    expect(nextAttemptAt(1, T, noJitter, 10 * MIN)!.getTime() - T.getTime()).toBe(10 * MIN);
    expect(nextAttemptAt(1, T, noJitter, 5_000)!.getTime() - T.getTime()).toBe(MIN);
    // At most a day: a receiver cannot park a delivery for years.
    expect(nextAttemptAt(1, T, noJitter, 999_999_999_000)!.getTime() - T.getTime()).toBe(24 * 60 * MIN);
    // Not even on the last attempt: Retry-After does not add attempts.
    expect(nextAttemptAt(9, T, noJitter, 5_000)).toBeNull();
  });

  it('is configurable, down to milliseconds for tests', () => {
    const fast = { schedule: [200, 200], random: () => 0.5 };
    expect(nextAttemptAt(1, T, fast)!.getTime() - T.getTime()).toBe(200);
    expect(nextAttemptAt(3, T, fast)).toBeNull();
    expect(() => nextAttemptAt(0, T, fast)).toThrow(RangeError);
  });

  it('reads Retry-After as seconds or an HTTP date', () => {
    expect(parseRetryAfter('120', T)).toBe(120_000);
    expect(parseRetryAfter(' 0 ', T)).toBe(0);
    expect(parseRetryAfter('Fri, 01 May 2026 10:02:00 GMT', T)).toBe(120_000);
    expect(parseRetryAfter('Fri, 01 May 2026 09:00:00 GMT', T)).toBe(0);
    for (const bad of [null, undefined, '', 'soon', '-5', '1.5', '99999999999']) {
      expect(parseRetryAfter(bad, T)).toBeNull();
    }
  });
});

describe('judging an attempt (docs/decisions.md §8.5)', () => {
  it('2xx succeeds; 410 fails for good; everything else retries', () => {
    for (const status of [200, 201, 204, 299]) {
      expect(judgeAttempt({ kind: 'response', status }, T)).toEqual({ verdict: 'succeeded' });
    }
    expect(judgeAttempt({ kind: 'response', status: 410 }, T)).toEqual({ verdict: 'failed_permanently' });
    for (const status of [301, 302, 400, 404, 500, 502]) {
      expect(judgeAttempt({ kind: 'response', status, retryAfter: '600' }, T)).toEqual({
        verdict: 'retry',
        retryAfterMs: null,
      });
    }
    expect(judgeAttempt({ kind: 'error', message: 'timeout' }, T)).toEqual({
      verdict: 'retry',
      retryAfterMs: null,
    });
  });

  it('honours Retry-After on 429 and 503 only', () => {
    expect(judgeAttempt({ kind: 'response', status: 429, retryAfter: '30' }, T)).toEqual({
      verdict: 'retry',
      retryAfterMs: 30_000,
    });
    expect(judgeAttempt({ kind: 'response', status: 503, retryAfter: null }, T)).toEqual({
      verdict: 'retry',
      retryAfterMs: null,
    });
  });
});

describe('the delivery state machine, as data', () => {
  it('names every state once, and every transition leads to a known state', () => {
    expect(Object.keys(DELIVERY_TRANSITIONS).sort()).toEqual([...DELIVERY_STATUSES].sort());
    for (const targets of Object.values(DELIVERY_TRANSITIONS)) {
      for (const to of targets) expect(DELIVERY_STATUSES).toContain(to);
    }
    // No state is final: an admin resends a succeeded delivery and retries a failed one.
    for (const state of DELIVERY_STATUSES)
      expect(DELIVERY_TRANSITIONS[state].length, state).toBeGreaterThan(0);
  });

  it('allows the paths of docs/http-api.md §3 and nothing that skips the lease', () => {
    const path: [string, string][] = [
      ['pending', 'in_flight'],
      ['in_flight', 'retry_scheduled'],
      ['retry_scheduled', 'in_flight'],
      ['in_flight', 'succeeded'],
      ['pending', 'held'],
      ['held', 'pending'],
      ['in_flight', 'failed'],
      ['failed', 'pending'],
      ['succeeded', 'pending'],
      ['retry_scheduled', 'pending'],
    ];
    for (const [from, to] of path)
      expect(canTransition(from as never, to as never), `${from} → ${to}`).toBe(true);
    for (const [from, to] of [
      ['pending', 'succeeded'],
      ['retry_scheduled', 'succeeded'],
      ['succeeded', 'in_flight'],
      ['succeeded', 'failed'],
      ['held', 'in_flight'],
      ['failed', 'succeeded'],
    ]) {
      expect(canTransition(from as never, to as never), `${from} → ${to}`).toBe(false);
    }
  });
});

describe('planning after an attempt (docs/http-api.md §6.5, docs/decisions.md §9, §10.1)', () => {
  const plan = { schedule: DEFAULT_RETRY_SCHEDULE_MS, random: () => 0.5 };
  const fail = { verdict: 'retry', retryAfterMs: null } as const;

  it('walks a delivery that always fails through 9 attempts, then fails it and counts one failure', () => {
    const seen: string[] = [];
    let at = T;
    for (let attempt = 1; attempt <= 9; attempt++) {
      const next = planAfterAttempt(attempt, fail, at, plan);
      seen.push(next.status);
      if (next.status === 'retry_scheduled') at = next.nextAttemptAt!;
      else
        expect(next).toEqual({
          status: 'failed',
          nextAttemptAt: null,
          endpointFailures: 'increment',
          autoDisable: DELIVERY_RULES.autoDisable,
        });
    }
    expect(seen).toEqual([...Array(8).fill('retry_scheduled'), 'failed']);
    // The last attempt goes out 1m + 5m + 15m + 1h + 3h + 6h + 12h + 24h after the first.
    expect(at.getTime() - T.getTime()).toBe((1 + 5 + 15 + 60 + 180 + 360 + 720 + 1440) * MIN);
  });

  it('a success resets the endpoint count; a 410 fails at once and disables at once; Retry-After pushes the retry', () => {
    expect(planAfterAttempt(3, { verdict: 'succeeded' }, T, plan)).toEqual({
      status: 'succeeded',
      nextAttemptAt: null,
      endpointFailures: 'reset',
      autoDisable: DELIVERY_RULES.autoDisable,
    });
    expect(planAfterAttempt(1, { verdict: 'failed_permanently' }, T, plan)).toEqual({
      status: 'failed',
      nextAttemptAt: null,
      endpointFailures: 'increment',
      autoDisable: { after: 1, reason: 'gone' },
    });
    expect(autoDisables(1, 'active', DELIVERY_RULES.gone)).toBe(true);
    const pushed = planAfterAttempt(1, { verdict: 'retry', retryAfterMs: 30 * MIN }, T, plan);
    expect(pushed.nextAttemptAt!.getTime() - T.getTime()).toBe(30 * MIN);
  });
});
