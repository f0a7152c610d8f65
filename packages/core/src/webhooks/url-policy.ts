import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

export const MAX_WEBHOOK_URL_LENGTH = 2048;

export interface UrlPolicy {
  /** http:// accepted (development). */
  allowHttp: boolean;
  /** Literal non-public IPs and local names accepted (development). */
  allowPrivateAddresses: boolean;
}

export type UrlCheck = { ok: true; url: URL; normalized: string } | { ok: false; reason: string };

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type LookupAll = (hostname: string) => Promise<ResolvedAddress[]>;

export class UrlPolicyError extends Error {
  /** What the attempt log says, which the tenant reads. */
  readonly reason: string;
  /** The reason with the host and what it resolved to: for the operator's log only. */
  readonly detail: string;

  constructor(reason: string, detail: string = reason) {
    super(reason);
    this.name = 'UrlPolicyError';
    this.reason = reason;
    this.detail = detail;
  }
}

/**
 * A tenant's one answer for a host that resolves to a non-public address, to none, or not at
 * all: neither the addresses nor which of the three, so the attempt log maps no internal name
 * (docs/decisions.md §5.4).
 */
export const NOT_PUBLIC = 'The host did not resolve to a public address.';

// Reserved for private use (RFC 6761, RFC 6762, RFC 8375, ICANN .internal); never a public webhook receiver.
const LOCAL_SUFFIXES = ['localhost', 'local', 'internal', 'home.arpa', 'localdomain'];

// IANA's global unicast block: ipaddr.js calls e.g. IPv4-compatible ::7f00:1 'unicast', but it is not public.
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/** True when the address (IPv4 or IPv6 text, no brackets) is public unicast. IPv4-mapped IPv6 is judged as its IPv4. */
export function isPublicAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return false;
  }
  if (parsed.kind() === 'ipv4') return parsed.range() === 'unicast';
  const v6 = parsed as ipaddr.IPv6;
  if (v6.isIPv4MappedAddress()) return v6.toIPv4Address().range() === 'unicast';
  return v6.range() === 'unicast' && v6.match(IPV6_GLOBAL_UNICAST);
}

function isLocalName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.+$/, ''); // `localhost..` resolves like `localhost`
  return LOCAL_SUFFIXES.some((suffix) => name === suffix || name.endsWith(`.${suffix}`));
}

function stripBrackets(hostname: string): string {
  return hostname.startsWith('[') && hostname.endsWith(']') ? hostname.slice(1, -1) : hostname;
}

// Only canonical literals count: other spellings of an IPv4 go through the resolver and get checked there.
function literalFamily(host: string): 4 | 6 | undefined {
  if (ipaddr.IPv4.isValidFourPartDecimal(host)) return 4;
  if (host.includes(':') && ipaddr.IPv6.isValid(host)) return 6;
  return undefined;
}

const refuse = (reason: string): UrlCheck => ({ ok: false, reason });

/** Parses and checks a webhook URL at registration. `normalized` is the WHATWG `href`. */
export function checkWebhookUrl(input: string, policy: UrlPolicy): UrlCheck {
  if (typeof input !== 'string') return refuse('The URL must be a string.');
  if (input.length > MAX_WEBHOOK_URL_LENGTH) {
    return refuse(`The URL must be at most ${MAX_WEBHOOK_URL_LENGTH} characters.`);
  }
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return refuse('The URL must be an absolute URL such as https://example.com/webhooks.');
  }
  if (url.protocol === 'http:') {
    if (!policy.allowHttp) return refuse('The URL must use https://.');
  } else if (url.protocol !== 'https:') {
    return refuse(policy.allowHttp ? 'The URL must use https:// or http://.' : 'The URL must use https://.');
  }
  if (url.username !== '' || url.password !== '') {
    return refuse('The URL must not contain a username or password.');
  }
  // The parser drops an empty fragment from href, so only the raw input shows `#`.
  if (input.includes('#')) return refuse('The URL must not contain a fragment (#).');
  if (url.hostname === '') return refuse('The URL must name a host.');
  // Percent-encoding can make href longer than the input, and href is what gets stored.
  if (url.href.length > MAX_WEBHOOK_URL_LENGTH) {
    return refuse(`The URL must be at most ${MAX_WEBHOOK_URL_LENGTH} characters.`);
  }
  if (!policy.allowPrivateAddresses) {
    if (isLocalName(url.hostname)) return refuse('The URL must not point to a local or private host name.');
    const host = stripBrackets(url.hostname);
    if (literalFamily(host) !== undefined && !isPublicAddress(host)) {
      return refuse(
        'The URL must not point to a loopback, private, link-local or otherwise non-public address.',
      );
    }
  }
  return { ok: true, url, normalized: url.href };
}

const defaultLookup: LookupAll = async (hostname) => {
  const results = await dnsLookup(hostname, { all: true, verbatim: true });
  return results.map((r) => ({ address: r.address, family: r.family === 6 ? 6 : 4 }));
};

/**
 * The connect-time step for the delivery worker: resolve `hostname` (or take a literal IP), refuse unless
 * EVERY address is public (unless policy.allowPrivateAddresses), and return the addresses checked, so the
 * caller connects to those only (no DNS rebinding). Throws UrlPolicyError when refused or unresolvable,
 * its reason the same for every refused resolution.
 */
export async function resolveCheckedAddresses(
  hostname: string,
  policy: UrlPolicy,
  lookup: LookupAll = defaultLookup,
): Promise<ResolvedAddress[]> {
  const host = stripBrackets(hostname);
  if (host === '') throw new UrlPolicyError('The webhook URL has no host.');
  if (!policy.allowPrivateAddresses && isLocalName(host)) {
    throw new UrlPolicyError(`The host ${host} is a local or private host name.`);
  }
  const family = literalFamily(host);
  let addresses: ResolvedAddress[];
  if (family !== undefined) {
    addresses = [{ address: host, family }];
  } else {
    try {
      addresses = await lookup(host);
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      throw new UrlPolicyError(
        NOT_PUBLIC,
        `The host ${host} could not be resolved${typeof code === 'string' ? ` (${code})` : ''}.`,
      );
    }
  }
  if (addresses.length === 0) {
    throw new UrlPolicyError(NOT_PUBLIC, `The host ${host} resolved to no addresses.`);
  }
  if (!policy.allowPrivateAddresses) {
    // One private answer is enough to refuse: the caller might otherwise pick it.
    const blocked = addresses.find((a) => !isPublicAddress(a.address));
    if (blocked) {
      throw new UrlPolicyError(
        NOT_PUBLIC,
        `The host ${host} resolves to a non-public address (${blocked.address}).`,
      );
    }
  }
  return addresses;
}
