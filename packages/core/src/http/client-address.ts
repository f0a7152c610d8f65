import { isIP } from 'node:net';

/**
 * The name every client address that is not a canonical IPv4 or IPv6 address is counted under
 * (docs/decisions.md §12.6). It cannot be an address's name: those are digits and dots, or end
 * in `::/64`.
 */
export const UNREADABLE_ADDRESS = 'unreadable';

/**
 * The address in a client address as a proxy may spell it: without a port (`198.51.100.1:1234`,
 * `[2001:db8::1]:443`), brackets or an IPv6 zone, an IPv4-mapped IPv6 address as its IPv4.
 * `undefined` when what is left is not a canonical address: octal, hex or integer IPv4
 * (`0306.063.0144.01`, `3325256705`), which resolvers read in more than one way, or anything else.
 */
export function canonicalAddress(spelled: string): string | undefined {
  let host = spelled.trim();
  const bracketed = /^\[([^\]]*)\](?::\d{1,5})?$/.exec(host);
  if (bracketed) {
    // Brackets hold an IPv6 address only (RFC 3986).
    host = bracketed[1]!;
    if (!host.includes(':')) return undefined;
  } else {
    // A port after an IPv4 address; an IPv6 address without brackets cannot carry one.
    const port = /^([^:]*):\d{1,5}$/.exec(host);
    if (port) host = port[1]!;
  }
  host = host.split('%', 1)[0]!;
  const family = isIP(host);
  if (family === 4) return host;
  if (family !== 6) return undefined;
  const groups = ipv6Groups(host);
  const mapped = groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff;
  if (mapped) return [groups[6]! >> 8, groups[6]! & 0xff, groups[7]! >> 8, groups[7]! & 0xff].join('.');
  return groups.map((group) => group.toString(16)).join(':');
}

/**
 * What one client's failures are counted under: an IPv4 address as it is, an IPv6 address by
 * its /64 (the block one host usually holds whole), and every spelling that is not an address
 * under one shared name.
 */
export function clientAddressName(spelled: string): string {
  const address = canonicalAddress(spelled);
  if (address === undefined) return UNREADABLE_ADDRESS;
  if (!address.includes(':')) return address;
  return `${address.split(':').slice(0, 4).join(':')}::/64`;
}

/** The eight 16-bit groups of an IPv6 address `isIP` accepted, an IPv4 tail taken as two. */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase();
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::', 2);
  const front = head === '' ? [] : head.split(':');
  const back = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups =
    tail === undefined ? front : [...front, ...Array(8 - front.length - back.length).fill('0'), ...back];
  return groups.map((group) => Number.parseInt(group, 16));
}
