import { describe, expect, it } from 'vitest';
import { canonicalAddress, clientAddressName, UNREADABLE_ADDRESS } from '../src/http/client-address.js';
import { RateLimits } from '../src/keys/rate-limit.js';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

/** Each spelling a proxy may report, and the name its failures are counted under. */
const SPELLINGS: [spelled: string, name: string][] = [
  // Canonical forms.
  ['198.51.100.1', '198.51.100.1'],
  ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
  ['2001:0DB8:0001:0002::1', '2001:db8:1:2::/64'],
  ['2001:db8::1', '2001:db8:0:0::/64'],
  ['::1', '0:0:0:0::/64'],
  ['fe80::1%eth0', 'fe80:0:0:0::/64'],
  // With a port, as some proxies send it.
  ['198.51.100.1:1234', '198.51.100.1'],
  [' 198.51.100.1 ', '198.51.100.1'],
  // IPv4-mapped IPv6, dotted or in hex, short or long.
  ['::ffff:198.51.100.1', '198.51.100.1'],
  ['::FFFF:198.51.100.1', '198.51.100.1'],
  ['0:0:0:0:0:ffff:198.51.100.1', '198.51.100.1'],
  ['::ffff:c633:6401', '198.51.100.1'],
  ['0000:0000:0000:0000:0000:ffff:c633:6401', '198.51.100.1'],
  // Bracketed IPv6, with or without a port; mapped inside brackets too.
  ['[2001:db8::1]', '2001:db8:0:0::/64'],
  ['[2001:db8::1]:443', '2001:db8:0:0::/64'],
  ['[::ffff:198.51.100.1]:1234', '198.51.100.1'],
  // Not canonical: one shared name, never a name of their own.
  ['0306.063.0144.01', UNREADABLE_ADDRESS],
  ['0306.063.0144.01:1234', UNREADABLE_ADDRESS],
  ['3325256705', UNREADABLE_ADDRESS],
  ['0xc6336401', UNREADABLE_ADDRESS],
  ['0xc6.0x33.0x64.0x01', UNREADABLE_ADDRESS],
  ['198.51.25601', UNREADABLE_ADDRESS],
  ['[198.51.100.1]', UNREADABLE_ADDRESS],
  ['2001:db8::1:1234:', UNREADABLE_ADDRESS],
  ['unknown', UNREADABLE_ADDRESS],
  ['', UNREADABLE_ADDRESS],
];

describe('client addresses from a proxy', () => {
  it.each(SPELLINGS)('%j is counted as %j', (spelled, name) => {
    expect(clientAddressName(spelled)).toBe(name);
    expect(canonicalAddress(spelled) === undefined).toBe(name === UNREADABLE_ADDRESS);
  });

  it('once an address is blocked, each of its spellings is refused; spellings that are no address share one budget', () => {
    const limits = new RateLimits({ failedAuth: { limit: 2, window: 60 } });
    const fail = (address: string) => limits.reserve(address, 'guess', T0);
    fail('198.51.100.1');
    fail('198.51.100.1');
    fail('2001:db8::1');
    fail('2001:db8::2');
    for (const [spelled, name] of SPELLINGS) {
      if (name === '198.51.100.1' || name === '2001:db8:0:0::/64') {
        expect(() => fail(spelled), spelled).toThrow(/Too many failed/);
      }
    }
    // The first two spellings that are no address spend the shared budget; every later one is refused.
    const unreadable = SPELLINGS.filter(([, name]) => name === UNREADABLE_ADDRESS).map(
      ([spelled]) => spelled,
    );
    expect(fail(unreadable[0]!)?.name).toBe(UNREADABLE_ADDRESS);
    expect(fail(unreadable[1]!)?.name).toBe(UNREADABLE_ADDRESS);
    for (const spelled of unreadable) expect(() => fail(spelled), spelled).toThrow(/Too many failed/);
    // Another address is counted on its own.
    expect(fail('198.51.100.2')?.name).toBe('198.51.100.2');
  });
});
