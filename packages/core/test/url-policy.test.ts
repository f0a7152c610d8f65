import { describe, expect, it } from 'vitest';
import {
  checkWebhookUrl,
  isPublicAddress,
  type LookupAll,
  MAX_WEBHOOK_URL_LENGTH,
  NOT_PUBLIC,
  resolveCheckedAddresses,
  UrlPolicyError,
} from '../src/webhooks/url-policy.js';

const production = { allowHttp: false, allowPrivateAddresses: false };
const development = { allowHttp: true, allowPrivateAddresses: true };

const tooLong = `https://example.com/${'a'.repeat(MAX_WEBHOOK_URL_LENGTH - 'https://example.com/'.length + 1)}`;

// Loopback spellings, embedded IPv4, private ranges, local names, then malformed URLs, in that order.
const refused: string[] = [
  ...['https://127.0.0.1/', 'https://2130706433/', 'https://0x7f000001/', 'https://0177.0.0.1/'],
  ...['https://017700000001/', 'https://127.1/', 'https://0x7f.1/', 'https://127.0.0.1./'],
  ...['https://127.0.0.1%2e/', 'https://\uff11\uff12\uff17.\uff10.\uff10.\uff11/', 'https://0/'],
  ...['https://0.0.0.0/', 'https://[::1]/', 'https://[0:0:0:0:0:0:0:1]/', 'https://[::]/'],
  ...['https://[::ffff:127.0.0.1]/', 'https://[::ffff:7f00:1]/', 'https://[::ffff:169.254.169.254]/'],
  ...['https://[::127.0.0.1]/', 'https://[::ffff:0:127.0.0.1]/', 'https://[64:ff9b::127.0.0.1]/'],
  ...['https://[2002:7f00:1::]/', 'https://[fd00::1]/', 'https://[fc00::1]/', 'https://[fe80::1]/'],
  ...['https://[ff02::1]/', 'https://[2001:db8::1]/', 'https://100.64.0.1/', 'https://10.0.0.1/'],
  ...['https://169.254.169.254/latest/meta-data', 'https://172.16.0.1/', 'https://172.31.255.255/'],
  ...['https://192.168.1.1/', 'https://224.0.0.1/', 'https://239.255.255.250/', 'https://255.255.255.255/'],
  ...[
    'https://192.0.2.1/',
    'https://localhost/',
    'https://LOCALHOST./',
    'https://localhost../',
    'https://api.localhost.../',
    'https://api.localhost/',
  ],
  ...['https://metadata.google.internal/', 'https://printer.local/', 'https://router.home.arpa/'],
  ...['https://box.localdomain/', 'https://user:pw@example.com/', 'https://user@example.com/'],
  ...['https://:pw@example.com/', 'https://example.com/hook#frag', 'https://example.com/hook#'],
  ...['http://example.com/hook', 'ftp://example.com/hook', 'javascript:alert(1)', 'file:///etc/passwd'],
  ...['data:text/plain,hi', 'ws://example.com/', tooLong, '/relative/hook'],
  ...['example.com/hook', '', 'https://', 'https:// /'],
];

const accepted: Array<[string, string]> = [
  ['https://hooks.example.com/x', 'https://hooks.example.com/x'],
  ['https://Hooks.Example.COM:443/x?a=1', 'https://hooks.example.com/x?a=1'],
  ['https://hooks.example.com:8443/x', 'https://hooks.example.com:8443/x'],
  ['https://93.184.215.14/hook', 'https://93.184.215.14/hook'],
  ['https://[2606:4700::1111]/', 'https://[2606:4700::1111]/'],
  ['https://[2606:4700:0:0:0:0:0:1111]/', 'https://[2606:4700::1111]/'],
  ['https://[::ffff:8.8.8.8]/', 'https://[::ffff:808:808]/'],
  ['https://example.com', 'https://example.com/'],
  ['https://localhost.example.com/', 'https://localhost.example.com/'],
];

describe('checkWebhookUrl (production policy)', () => {
  it(`the corpus holds at least 30 SSRF and malformed URLs (${refused.length})`, () => {
    expect(refused.length).toBeGreaterThanOrEqual(30);
  });

  it.each(refused)('refuses %s', (input) => {
    const result = checkWebhookUrl(input, production);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.reason).toMatch(/^The URL must /);
  });

  it('refuses a non-string', () => {
    expect(checkWebhookUrl(42 as unknown as string, production).ok).toBe(false);
  });

  it.each(accepted)('accepts %s as %s', (input, normalized) => {
    const result = checkWebhookUrl(input, production);
    expect(result).toMatchObject({ ok: true, normalized });
    if (result.ok) expect(result.url.href).toBe(normalized);
  });

  it('accepts a URL of exactly the maximum length', () => {
    const url = `https://example.com/${'a'.repeat(MAX_WEBHOOK_URL_LENGTH - 'https://example.com/'.length)}`;
    expect(url).toHaveLength(MAX_WEBHOOK_URL_LENGTH);
    expect(checkWebhookUrl(url, production).ok).toBe(true);
  });

  it('gives a reason a person can act on', () => {
    expect(checkWebhookUrl('http://example.com/', production)).toEqual({
      ok: false,
      reason: 'The URL must use https://.',
    });
    expect(checkWebhookUrl('https://10.0.0.1/', production)).toMatchObject({ reason: /non-public address/ });
  });
});

describe('checkWebhookUrl (development policy)', () => {
  it.each([
    'http://127.0.0.1:4000/hook',
    'http://localhost:3000/',
    'https://[::1]:8443/',
    'https://printer.local/',
  ])('accepts %s', (input) => {
    expect(checkWebhookUrl(input, development)).toMatchObject({ ok: true, normalized: new URL(input).href });
  });

  it.each([
    'http://user:pw@localhost:3000/',
    'http://localhost:3000/#x',
    'ftp://localhost/',
    'javascript:alert(1)',
    '/hook',
    tooLong,
  ])('still refuses %s', (input) => {
    expect(checkWebhookUrl(input, development).ok).toBe(false);
  });

  it('keeps http and private addresses as separate switches', () => {
    expect(checkWebhookUrl('http://127.0.0.1/', { allowHttp: true, allowPrivateAddresses: false }).ok).toBe(
      false,
    );
    expect(checkWebhookUrl('http://127.0.0.1/', { allowHttp: false, allowPrivateAddresses: true }).ok).toBe(
      false,
    );
    expect(checkWebhookUrl('https://127.0.0.1/', { allowHttp: false, allowPrivateAddresses: true }).ok).toBe(
      true,
    );
  });
});

describe('isPublicAddress', () => {
  it.each(['93.184.215.14', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8', '::ffff:808:808'])(
    '%s is public',
    (address) => {
      expect(isPublicAddress(address)).toBe(true);
    },
  );

  it.each([
    '127.0.0.1',
    '2130706433',
    '10.1.2.3',
    '100.64.0.1',
    '169.254.169.254',
    '0.0.0.0',
    '255.255.255.255',
    '224.0.0.251',
    '::1',
    '::',
    'fe80::1%eth0',
    'fd00::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::7f00:1',
    '2002:7f00:1::',
    '2001::1',
    '64:ff9b::7f00:1',
    '[::1]',
    'example.com',
    '',
  ])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
});

describe('resolveCheckedAddresses', () => {
  const fixed =
    (answers: Record<string, Array<[string, 4 | 6]>>): LookupAll =>
    async (hostname) => {
      const found = answers[hostname];
      if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
      return found.map(([address, family]) => ({ address, family }));
    };
  const lookup = fixed({
    'hooks.example.com': [
      ['93.184.215.14', 4],
      ['2606:4700::1111', 6],
    ],
    'rebind.example.com': [
      ['93.184.215.14', 4],
      ['127.0.0.1', 4],
    ],
    'mapped.example.com': [['::ffff:169.254.169.254', 6]],
    'empty.example.com': [],
  });

  it('returns every address when all are public', async () => {
    await expect(resolveCheckedAddresses('hooks.example.com', production, lookup)).resolves.toEqual([
      { address: '93.184.215.14', family: 4 },
      { address: '2606:4700::1111', family: 6 },
    ]);
  });

  it.each(['rebind.example.com', 'mapped.example.com'])(
    'refuses %s when any address is not public',
    async (host) => {
      await expect(resolveCheckedAddresses(host, production, lookup)).rejects.toThrow(UrlPolicyError);
    },
  );

  it('turns a lookup failure or an empty answer into UrlPolicyError', async () => {
    await expect(resolveCheckedAddresses('nxdomain.example.com', production, lookup)).rejects.toMatchObject({
      name: 'UrlPolicyError',
      detail: 'The host nxdomain.example.com could not be resolved (ENOTFOUND).',
    });
    await expect(resolveCheckedAddresses('empty.example.com', production, lookup)).rejects.toMatchObject({
      name: 'UrlPolicyError',
      detail: 'The host empty.example.com resolved to no addresses.',
    });
  });

  it('gives one reason for every refused resolution, naming neither host nor address; the detail names both', async () => {
    const refusals = await Promise.all(
      [
        'rebind.example.com',
        'mapped.example.com',
        'nxdomain.example.com',
        'empty.example.com',
        '10.1.2.3',
      ].map((host) =>
        resolveCheckedAddresses(host, production, lookup).catch((error: UrlPolicyError) => error),
      ),
    );
    for (const refusal of refusals) {
      expect(refusal).toBeInstanceOf(UrlPolicyError);
      expect(refusal).toMatchObject({ reason: NOT_PUBLIC, message: NOT_PUBLIC });
    }
    expect(refusals.map((refusal) => (refusal as UrlPolicyError).detail)).toEqual([
      'The host rebind.example.com resolves to a non-public address (127.0.0.1).',
      'The host mapped.example.com resolves to a non-public address (::ffff:169.254.169.254).',
      'The host nxdomain.example.com could not be resolved (ENOTFOUND).',
      'The host empty.example.com resolved to no addresses.',
      'The host 10.1.2.3 resolves to a non-public address (10.1.2.3).',
    ]);
  });

  it('takes a literal IP without a lookup', async () => {
    const never: LookupAll = async () => {
      throw new Error('lookup must not be called');
    };
    await expect(resolveCheckedAddresses('93.184.215.14', production, never)).resolves.toEqual([
      { address: '93.184.215.14', family: 4 },
    ]);
    await expect(resolveCheckedAddresses('[2606:4700::1111]', production, never)).resolves.toEqual([
      { address: '2606:4700::1111', family: 6 },
    ]);
    await expect(resolveCheckedAddresses('[::1]', production, never)).rejects.toThrow(UrlPolicyError);
    await expect(resolveCheckedAddresses('169.254.169.254', production, never)).rejects.toThrow(
      UrlPolicyError,
    );
  });

  it('allows private addresses under the development policy', async () => {
    await expect(resolveCheckedAddresses('rebind.example.com', development, lookup)).resolves.toHaveLength(2);
    await expect(resolveCheckedAddresses('127.0.0.1', development, lookup)).resolves.toEqual([
      { address: '127.0.0.1', family: 4 },
    ]);
  });

  it('uses the system resolver by default: localhost is refused in production, accepted in development', async () => {
    await expect(resolveCheckedAddresses('localhost', production)).rejects.toThrow(UrlPolicyError);
    const local = await resolveCheckedAddresses('localhost', development);
    expect(local.length).toBeGreaterThan(0);
    for (const { address } of local) expect(isPublicAddress(address)).toBe(false);
  });
});
