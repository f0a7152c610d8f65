import { TEST_ADMIN_SECRET, TEST_ENCRYPTION_KEY } from '@keyhook/testing/support';
import { describe, expect, it } from 'vitest';
import { createKeyhook, type KeyhookOptions, MemoryStore, silentLogger } from '../src/index.js';
import type { Store } from '../src/store/types.js';

/** A store that keeps its data past the process, as far as core can tell: the key is then required. */
const persistentStore = (): Store => Object.assign(new MemoryStore(), { persistent: true }) as Store;

const complete = (): KeyhookOptions => ({
  store: persistentStore(),
  adminSession: { secret: TEST_ADMIN_SECRET },
  encryptionKey: TEST_ENCRYPTION_KEY,
  logger: silentLogger,
  mode: 'development',
});

/** Every option createKeyhook cannot start without: where it is, what it is called, how to make one. */
const REQUIRED: {
  option: string;
  set: (options: KeyhookOptions, value: unknown) => KeyhookOptions;
  names: RegExp;
  how: RegExp;
}[] = [
  {
    option: 'store',
    set: (options, store) => ({ ...options, store: store as Store }),
    names: /keyhook: store is required\./,
    how: /createSqliteStore\(\{ filename \}\).*createPostgresStore.*new MemoryStore\(\)/,
  },
  {
    option: 'adminSession',
    set: (options, adminSession) => ({
      ...options,
      adminSession: adminSession as KeyhookOptions['adminSession'],
    }),
    names: /keyhook: adminSession is required\./,
    how: /jwksUrl.*publicKey.*secret.*openssl rand -base64 32/,
  },
  {
    option: 'adminSession.secret (the only key source)',
    set: (options, secret) => ({ ...options, adminSession: { secret: secret as string } }),
    names: /keyhook: adminSession\.jwksUrl, adminSession\.publicKey or adminSession\.secret is required\./,
    how: /jwksUrl.*publicKey.*secret.*openssl rand -base64 32/,
  },
  {
    option: 'adminSession.jwksUrl (the only key source)',
    set: (options, jwksUrl) => ({ ...options, adminSession: { jwksUrl: jwksUrl as string } }),
    names: /keyhook: adminSession\.jwksUrl, adminSession\.publicKey or adminSession\.secret is required\./,
    how: /jwksUrl.*publicKey.*secret/,
  },
  {
    option: 'adminSession.publicKey (the only key source)',
    set: (options, publicKey) => ({ ...options, adminSession: { publicKey: publicKey as string } }),
    names: /keyhook: adminSession\.jwksUrl, adminSession\.publicKey or adminSession\.secret is required\./,
    how: /jwksUrl.*publicKey.*secret/,
  },
  {
    option: 'encryptionKey (a persistent store)',
    set: (options, encryptionKey) => ({ ...options, encryptionKey: encryptionKey as string }),
    names: /keyhook: encryptionKey is required with a persistent store/,
    how: /generateEncryptionKey\(\).*KEYHOOK_ENCRYPTION_KEY.*createKeyhook\(\{ encryptionKey \}\)/,
  },
  {
    option: 'encryptionKey (production)',
    set: (options, encryptionKey) => ({
      ...options,
      store: new MemoryStore(),
      mode: 'production',
      encryptionKey: encryptionKey as string,
    }),
    names: /keyhook: encryptionKey is required in production\./,
    how: /generateEncryptionKey\(\).*KEYHOOK_ENCRYPTION_KEY/,
  },
];

/** Left out, and the ways an unset variable arrives: empty, spaces only, null. */
const ABSENT: [string, unknown][] = [
  ['left out', undefined],
  ['empty', ''],
  ['spaces', '  \t'],
  ['null', null],
];

describe('a required option left out or empty gets one message: its name and how to make a value', () => {
  it('the complete options start', () => {
    expect(() => createKeyhook(complete())).not.toThrow();
  });

  describe.each(REQUIRED)('$option', ({ set, names, how }) => {
    const messageOf = (value: unknown): string => {
      try {
        createKeyhook(set(complete(), value));
      } catch (error) {
        if (error instanceof TypeError) return error.message;
        throw error;
      }
      throw new Error('createKeyhook started without it');
    };

    it('names the option and says how to make a value', () => {
      expect(messageOf(undefined)).toMatch(names);
      expect(messageOf(undefined)).toMatch(how);
    });

    it.each(ABSENT)('%s: the same message as missing', (_name, value) => {
      expect(messageOf(value)).toBe(messageOf(undefined));
    });
  });
});
