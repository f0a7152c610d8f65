/**
 * Whether the tests run in CI, where a suite that cannot run (no PostgreSQL, no Chromium, no
 * small disk) is a failure, not a skip. One reading for every such check: `CI=true` or `CI=1`, as
 * `.ci/run` and the hosted CIs set it; `CI=false` or no `CI` is a workstation.
 */
export function inCi(env: Record<string, string | undefined> = process.env): boolean {
  return env['CI'] === 'true' || env['CI'] === '1';
}
