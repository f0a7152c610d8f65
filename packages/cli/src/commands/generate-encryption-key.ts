import { generateEncryptionKey } from '@keyhook/core';
import { parseOptions } from '../args.js';
import type { Command } from '../io.js';

export const generateEncryptionKeyCommand: Command = {
  name: 'generate-encryption-key',
  summary: "Print a new encryptionKey (32 random bytes, base64) for createKeyhook's encryptionKey",
  help: `Usage: keyhook generate-encryption-key

Prints a new master key for secrets at rest: 32 random bytes, base64. Keep it in your secret
manager (for example as KEYHOOK_ENCRYPTION_KEY) and pass it as createKeyhook({ encryptionKey }).
Only the key is printed, so it can be piped.

Options:
  -h, --help  Show this help.
`,
  async run(args, io) {
    parseOptions(args, {}, 'it takes none');
    io.stdout.write(`${generateEncryptionKey()}\n`);
  },
};
