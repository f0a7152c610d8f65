/** What `keyhook migrate` calls on a store package: both appeared in 0.2.0. */
const MIGRATION_EXPORTS = ['migrate', 'pendingMigrations'] as const;

/**
 * Imports a store package, an optional peer of the CLI: the app that runs migrations already
 * depends on its store. When it (or its driver) is missing, the error says what to install;
 * when it is a version without `migrate()` (0.1.0 had none), what to upgrade.
 */
export async function loadStorePackage<T>(
  packageName: string,
  driver: string,
  load: () => Promise<T>,
): Promise<T> {
  let store: T;
  try {
    store = await load();
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    const missing = /Cannot find (?:package|module) '([^']+)'/.exec((error as Error).message)?.[1];
    const what = missing === driver ? `${driver}, which ${packageName} needs,` : packageName;
    throw new Error(`${what} is not installed. Install it in your app: npm install ${packageName} ${driver}`);
  }
  const exports = store as Record<string, unknown>;
  if (MIGRATION_EXPORTS.some((name) => typeof exports[name] !== 'function')) {
    throw new Error(
      `the installed ${packageName} has no migrate(): upgrade ${packageName} to a version with migrate() (0.2.0 or later)`,
    );
  }
  return store;
}
