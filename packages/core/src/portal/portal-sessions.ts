import { createHmac, hash } from 'node:crypto';
import { z } from 'zod';
import type { ScopeCatalog } from '../catalog/scopes.js';
import type { Clock, RandomBytes } from '../clock.js';
import { KeyhookError } from '../errors.js';
import { newId } from '../ids.js';
import { digestsEqual } from '../keys/hash.js';
import type { PortalSessionRecord, PortalSessionStore } from '../store/types.js';
import { parseOrThrow, storableText } from '../validation.js';
import {
  type CreatePortalSessionInput,
  PORTAL_PERMISSIONS,
  type PortalPermission,
  type PortalSessionLink,
} from './portal-types.js';

/** A session's default life, and the longest one (docs/decisions.md §22.2). */
export const DEFAULT_PORTAL_SESSION_SECONDS = 3_600;
export const MAX_PORTAL_SESSION_SECONDS = 86_400;

/** Expired sessions are kept this long for the "expired" answer, then deleted at the next mint. */
const KEEP_EXPIRED_MS = 24 * 3_600_000;

const LINK_PREFIX = 'kpl_';
const SESSION_PREFIX = 'kps_';
/** 32 random bytes as base64url: 43 characters. */
const TOKEN_PATTERN = /^kp[ls]_[A-Za-z0-9_-]{43}$/;

/** Why a link was refused, in plain words: the portal's page shows the message as it is. */
const REFUSED_LINK: Record<'unknown' | 'used' | 'expired' | 'revoked', string> = {
  unknown: 'This link is not valid.',
  used: 'This link was already used. Each link opens the portal once.',
  expired: 'This link has expired.',
  revoked: 'This link was revoked.',
};

export interface PortalSessionsDeps {
  store: PortalSessionStore;
  clock: Clock;
  randomBytes: RandomBytes;
  scopes: ScopeCatalog;
  /** The portal's URL, without the fragment: the link is `${url}#token=…`. */
  url: string;
}

/** A session that stands: who it is for and what it may do. */
export interface PortalGrant {
  sessionId: string;
  tenantId: string;
  permissions: readonly PortalPermission[];
  /** The scopes a key created in the session may carry; null: any of the host's. */
  scopes: readonly string[] | null;
  expiresAt: Date;
  /** The session token, as presented: the CSRF token is derived from it. */
  token: string;
}

/** The link's exchange: a new session token, and the session it opened. */
export interface ExchangedSession {
  grant: PortalGrant;
  csrfToken: string;
}

/**
 * Portal sessions (docs/decisions.md §22): a one-time link minted by the host's backend, its one
 * exchange for a session token, and that token's checks. Only SHA-256 hashes of the link and
 * session tokens are stored.
 */
export class PortalSessions {
  private readonly createSchema: z.ZodType<{
    tenantId: string;
    permissions: PortalPermission[];
    expiresIn: number;
    scopes?: string[] | undefined;
  }>;

  constructor(private readonly deps: PortalSessionsDeps) {
    this.createSchema = z.strictObject({
      tenantId: storableText().min(1).max(255),
      permissions: z
        .array(z.enum(PORTAL_PERMISSIONS))
        .min(1)
        .refine((list) => new Set(list).size === list.length, 'must not repeat a permission'),
      expiresIn: z
        .number()
        .int()
        .min(60)
        .max(MAX_PORTAL_SESSION_SECONDS)
        .default(DEFAULT_PORTAL_SESSION_SECONDS),
      scopes: z.array(deps.scopes.schema).optional(),
    });
  }

  async create(input: CreatePortalSessionInput): Promise<PortalSessionLink> {
    const { tenantId, permissions, expiresIn, scopes } = parseOrThrow(this.createSchema, input);
    const now = this.deps.clock.now();
    const token = this.mint(LINK_PREFIX);
    const record: PortalSessionRecord = {
      id: newId('ps', this.deps.clock, this.deps.randomBytes),
      tenantId,
      linkHash: tokenHash(token),
      sessionHash: null,
      permissions: [...permissions].sort(),
      scopes: scopes === undefined ? null : [...new Set(scopes)].sort(),
      createdAt: now,
      expiresAt: new Date(now.getTime() + expiresIn * 1000),
      exchangedAt: null,
      revokedAt: null,
    };
    await this.deps.store.insertPortalSession(record, new Date(now.getTime() - KEEP_EXPIRED_MS));
    return { id: record.id, url: `${this.deps.url}#token=${token}`, token, expiresAt: record.expiresAt };
  }

  /** The link's one exchange; `invalid_portal_link` says why it was refused, in plain words. */
  async exchange(link: unknown): Promise<ExchangedSession> {
    if (typeof link !== 'string' || !link.startsWith(LINK_PREFIX) || !TOKEN_PATTERN.test(link)) {
      throw refusedLink('unknown');
    }
    const token = this.mint(SESSION_PREFIX);
    const outcome = await this.deps.store.exchangePortalLink(
      tokenHash(link),
      tokenHash(token),
      this.deps.clock.now(),
    );
    if (outcome.outcome === 'refused') throw refusedLink(outcome.reason);
    const grant = toGrant(outcome.session, token);
    return { grant, csrfToken: csrfTokenOf(token) };
  }

  /** The session a token opened, while it stands; `invalid_portal_session` otherwise. */
  async authenticate(token: string | undefined): Promise<PortalGrant> {
    if (token === undefined || !token.startsWith(SESSION_PREFIX) || !TOKEN_PATTERN.test(token)) {
      throw endedSession('There is no portal session. Open the portal from a new link.');
    }
    const session = await this.deps.store.findPortalSession(tokenHash(token));
    if (session === null) throw endedSession('There is no portal session. Open the portal from a new link.');
    if (session.revokedAt !== null) throw endedSession('This portal session was ended.');
    if (session.expiresAt.getTime() <= this.deps.clock.now().getTime()) {
      throw endedSession('This portal session has expired.');
    }
    return toGrant(session, token);
  }

  async revoke(tenantId: string, sessionId: string | undefined): Promise<number> {
    return this.deps.store.revokePortalSessions(tenantId, sessionId, this.deps.clock.now());
  }

  private mint(prefix: string): string {
    return prefix + Buffer.from(this.deps.randomBytes(32)).toString('base64url');
  }
}

/**
 * The CSRF token of a session: an HMAC of its session token, so it needs no storage and names
 * nothing but that session. A page holds it in memory and sends it as `x-csrf-token`.
 */
export function csrfTokenOf(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('keyhook portal csrf').digest('hex');
}

/** Constant-time: the presented CSRF token is the session's. */
export function csrfTokenMatches(grant: PortalGrant, presented: string | undefined): boolean {
  // Exactly 64 lowercase hex digits: hex decoding would otherwise overlook what follows them.
  return (
    presented !== undefined &&
    /^[0-9a-f]{64}$/.test(presented) &&
    digestsEqual(csrfTokenOf(grant.token), presented)
  );
}

function tokenHash(token: string): string {
  return hash('sha256', token, 'hex');
}

function toGrant(session: PortalSessionRecord, token: string): PortalGrant {
  return {
    sessionId: session.id,
    tenantId: session.tenantId,
    permissions: session.permissions as PortalPermission[],
    scopes: session.scopes,
    expiresAt: session.expiresAt,
    token,
  };
}

function refusedLink(reason: keyof typeof REFUSED_LINK): KeyhookError {
  return new KeyhookError('invalid_portal_link', REFUSED_LINK[reason], {
    details: [{ message: REFUSED_LINK[reason], reason }],
  });
}

function endedSession(message: string): KeyhookError {
  return new KeyhookError('invalid_portal_session', message);
}
