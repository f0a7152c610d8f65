import { browserSuitePlan } from '@keyhook/testing/browser';
import { describe, expect, it } from 'vitest';

describe('the browser suites without Chromium', () => {
  const missing = () => false;

  it('run where Chromium is installed', () => {
    expect(browserSuitePlan('/usr/bin/chromium', { CI: 'true' }, () => true)).toEqual({ action: 'run' });
  });

  it('are skipped locally, with one line that says why and how to install it', () => {
    const plan = browserSuitePlan('/nowhere/chromium', {}, missing);
    expect(plan).toEqual({
      action: 'skip',
      message:
        'Chromium is not installed at /nowhere/chromium: skipping the browser suites (apt-get install chromium).',
    });
  });

  it('fail under CI=true or CI=1, and are skipped under CI=false, as every check that reads CI', () => {
    expect(browserSuitePlan('/nowhere/chromium', { CI: 'true' }, missing).action).toBe('fail');
    expect(browserSuitePlan('/nowhere/chromium', { CI: '1' }, missing).action).toBe('fail');
    expect(browserSuitePlan('/nowhere/chromium', { CI: 'false' }, missing).action).toBe('skip');
  });
});
