import { describe, expect, it } from 'vitest';
import { systemTimers } from '../src/clock.js';

describe('systemTimers', () => {
  it("unrefs a timer only when asked, with Node's own unref", () => {
    // Set and cleared at once, never waited on: only the handles are looked at.
    const kept = systemTimers.setTimeout(() => {}, 60_000);
    const background = systemTimers.setTimeout(() => {}, 60_000, { unref: true });
    const rounds = systemTimers.setInterval(() => {}, 60_000, { unref: true });
    try {
      expect((kept as NodeJS.Timeout).hasRef()).toBe(true);
      expect((background as NodeJS.Timeout).hasRef()).toBe(false);
      expect((rounds as NodeJS.Timeout).hasRef()).toBe(false);
    } finally {
      systemTimers.clearTimeout(kept);
      systemTimers.clearTimeout(background);
      systemTimers.clearInterval(rounds);
    }
  });
});
