import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/store-conformance/support';

const viteNode = fileURLToPath(new URL('../../../../node_modules/.bin/vite-node', import.meta.url));

/** What a host-process fixture reads from KEYHOOK_TEST_SECRETS: the suites' credentials. */
export interface HostProcessSecrets {
  adminSecret: string;
  encryptionKey: string;
}

/**
 * Runs the TypeScript `fixture` in a process of its own (vite-node, with the package's vitest
 * `config`) with `env`, and kills it (SIGKILL) as soon as it has printed `line`: a host process
 * that dies at that point. Resolves with the signal it died of; rejects when it exits before
 * printing `line`. The fixture gets the suites' credentials as JSON in KEYHOOK_TEST_SECRETS
 * (`HostProcessSecrets`): `@keyhook/testing/support` runs only under vitest.
 */
export async function killHostProcessAt(
  fixture: string,
  config: string,
  env: Record<string, string>,
  line: string,
): Promise<NodeJS.Signals | null> {
  const secrets: HostProcessSecrets = { adminSecret: TEST_ADMIN_SECRET, encryptionKey: TEST_ENCRYPTION_KEY };
  const child = spawn(viteNode, ['--config', config, fixture], {
    env: { ...process.env, ...env, KEYHOOK_TEST_SECRETS: JSON.stringify(secrets) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<NodeJS.Signals | null>((resolve) =>
    child.on('close', (_code, signal) => resolve(signal)),
  );
  try {
    await new Promise<void>((resolve, reject) => {
      const read = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes(`${line}\n`)) resolve();
      };
      child.stdout.on('data', read);
      child.stderr.on('data', read);
      child.on('error', reject);
      child.on('close', (code) => reject(new Error(`the host process exited with ${code}: ${output}`)));
    });
  } finally {
    child.kill('SIGKILL');
  }
  return exited;
}
