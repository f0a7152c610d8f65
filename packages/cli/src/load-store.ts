/**
 * Imports a store package, an optional peer of the CLI: the app that runs migrations already
 * depends on its store. When it (or its driver) is missing, the error says what to install.
 */
export async function loadStorePackage<T>(
  packageName: string,
  driver: string,
  load: () => Promise<T>,
): Promise<T> {
  try {
    return await load();
  } catch (error) {
    if ((error as { code?: unknown } | null)?.code !== 'ERR_MODULE_NOT_FOUND') throw error;
    const missing = /Cannot find (?:package|module) '([^']+)'/.exec((error as Error).message)?.[1];
    const what = missing === driver ? `${driver}, which ${packageName} needs,` : packageName;
    throw new Error(`${what} is not installed. Install it in your app: npm install ${packageName} ${driver}`);
  }
}
