import { createHash } from 'node:crypto';
import type { EventTypeCatalog } from '../catalog/events.js';
import type { Clock, RandomBytes } from '../clock.js';
import type { SecretBox } from '../crypto/secret-box.js';
import type { SentTestEvent, TestEventInput, TestEventSender } from '../delivery/test-event.js';
import { KeyhookError } from '../errors.js';
import { isWellFormedId, newId } from '../ids.js';
import type { IssuedWebhook, Webhooks } from '../service-interfaces.js';
import type {
  DeliveryRate,
  IdempotencyCompletion,
  SignatureScheme,
  Store,
  WebhookRecord,
  WebhookStatus,
  WebhookSubscription,
} from '../store/types.js';
import { parseOrThrow, validationFailed } from '../validation.js';
import { mintEd25519KeyPair, mintWebhookSecret, type WebhookKeyType } from './signing-secret.js';
import { checkWebhookUrl, type UrlPolicy } from './url-policy.js';
import {
  type CreateWebhookInput,
  type RotateWebhookOptions,
  rotateWebhookSchema,
  sentRate,
  type UpdateWebhookInput,
  updateWebhookSchemaFor,
  webhookSchemaFor,
} from './webhook-schemas.js';

export interface WebhooksDeps {
  store: Store;
  clock: Clock;
  randomBytes: RandomBytes;
  secrets: SecretBox;
  urlPolicy: UrlPolicy;
  /** The event types an endpoint may subscribe to. */
  events: EventTypeCatalog;
  /**
   * Called after an endpoint was enabled (its held deliveries released), or its delivery rate set
   * (the deliveries it made wait are due), to wake workers.
   */
  onEnabled?: (() => void) | undefined;
  /** Test events, sent to one endpoint (docs/decisions.md §8.16). */
  testEvents: TestEventSender;
  /** The scheme of an endpoint whose create does not name one (delivery.signatureScheme). */
  defaultSignatureScheme: SignatureScheme;
  /** The rate of an endpoint whose create does not name one (delivery.deliveryRate). */
  defaultDeliveryRate: DeliveryRate | null;
}

const idempotencyInProgress = () =>
  new KeyhookError(
    'idempotency_in_progress',
    'A request with this Idempotency-Key is still in progress; retry later.',
  );

const notFound = () => new KeyhookError('not_found', 'No webhook with that id.');

const activeTwin = () =>
  new KeyhookError('webhook_conflict', 'An active webhook with the same url and event set already exists.');

/** What the twin rule compares (docs/http-api.md §4.3 rule 5): the normalised URL and the event set. */
export function twinKeyOf(url: string, events: readonly string[]): string {
  return createHash('sha256')
    .update(url)
    .update('\n')
    .update([...events].sort().join(','))
    .digest('hex');
}

/**
 * Whether an endpoint with this status claims its twin key (docs/decisions.md §5.7): only an
 * active one does. Stores keep the claim in a column of its own (the twin key, or null) under a
 * plain unique index, so the index enforces the rule without naming a status.
 */
export function claimsTwinKey(status: WebhookStatus): boolean {
  return status === 'active';
}

/** The claim a webhook makes, as a store writes it beside the row: its twin key, or null. */
export function twinClaimOf(webhook: Pick<WebhookRecord, 'status' | 'twinKey'>): string | null {
  return claimsTwinKey(webhook.status) ? webhook.twinKey : null;
}

/** The rules of webhook endpoints (docs/http-api.md §2–§4; docs/decisions.md §5). Stores only store. */
export class WebhookService implements Webhooks {
  /** The create body, for the host's event types: its JSON Schema is the document's. */
  readonly createSchema: ReturnType<typeof webhookSchemaFor>;
  /** The PATCH body, for the host's event types. */
  readonly updateSchema: ReturnType<typeof updateWebhookSchemaFor>;
  /** The test event body, for the host's event types. */
  readonly testEventSchema: TestEventSender['schema'];

  constructor(private readonly deps: WebhooksDeps) {
    this.createSchema = webhookSchemaFor(deps.events);
    this.updateSchema = updateWebhookSchemaFor(deps.events);
    this.testEventSchema = deps.testEvents.schema;
  }

  /**
   * Registers an endpoint. `completeWith`, when given, turns the finished answer into the
   * idempotency completion that the store writes in the same transaction as the webhook.
   */
  create(
    tenantId: string,
    input: CreateWebhookInput & { keyType?: 'hmac' | undefined },
    completeWith?: (issued: IssuedWebhook) => IdempotencyCompletion,
  ): Promise<IssuedWebhook & { secret: string }>;
  create(
    tenantId: string,
    input: CreateWebhookInput,
    completeWith?: (issued: IssuedWebhook) => IdempotencyCompletion,
  ): Promise<IssuedWebhook>;
  async create(
    tenantId: string,
    input: CreateWebhookInput,
    completeWith?: (issued: IssuedWebhook) => IdempotencyCompletion,
  ): Promise<IssuedWebhook> {
    const parsed = parseOrThrow(this.createSchema, input);
    const checked = checkWebhookUrl(parsed.url, this.deps.urlPolicy);
    if (!checked.ok) throw validationFailed([{ path: 'url', message: checked.reason }]);
    const events = [...new Set(parsed.events)].sort();
    const now = this.deps.clock.now();
    const id = newId('wh', this.deps.clock, this.deps.randomBytes);
    const ed25519 = parsed.keyType === 'ed25519';
    const rate = sentRate(parsed);
    const key = this.newKey(parsed.keyType ?? 'hmac', parsed.secret);
    const webhook: WebhookRecord = {
      id,
      tenantId,
      url: checked.normalized,
      events,
      twinKey: twinKeyOf(checked.normalized, events),
      status: 'active',
      disabledReason: null,
      disabledAt: null,
      description: parsed.description ?? null,
      secretSealed: this.deps.secrets.seal(key.signingKey, secretContext(tenantId, id)),
      previousSecretSealed: null,
      previousSecretExpiresAt: null,
      // An ed25519 key signs Standard Webhooks' v1a only (docs/decisions.md §6.10).
      signatureScheme:
        parsed.signatureScheme ?? (ed25519 ? 'standard-webhooks' : this.deps.defaultSignatureScheme),
      deliveryRate: rate === undefined ? this.deps.defaultDeliveryRate : rate,
      publicKey: key.publicKey,
      createdAt: now,
      updatedAt: now,
    };
    const issued = { webhook, secret: key.shown };
    const outcome = await this.deps.store.insertWebhook(webhook, completeWith?.(issued));
    if (outcome === 'active_twin') throw activeTwin();
    // Our claim ran past its lock and another request with the key took over: that one answers.
    if (outcome === 'claim_lost') throw idempotencyInProgress();
    return issued;
  }

  async get(tenantId: string, id: string): Promise<WebhookRecord> {
    const webhook = isWellFormedId(id, 'wh') ? await this.deps.store.getWebhook(tenantId, id) : null;
    if (!webhook) throw notFound();
    return webhook;
  }

  async list(tenantId: string, limit: number, before?: string): Promise<WebhookRecord[]> {
    return this.deps.store.listWebhooks(tenantId, { limit, before });
  }

  /**
   * PATCH: the status (a manual disable says so; enabling clears the reason, docs/http-api.md §3),
   * or the URL, events, signature scheme, delivery rate and description, checked as at create, with the twin rule
   * of docs/http-api.md §4.3 rule 5.
   */
  async update(tenantId: string, id: string, input: UpdateWebhookInput): Promise<WebhookRecord> {
    const parsed = parseOrThrow(this.updateSchema, input);
    const { status, url, events, signatureScheme, description } = parsed;
    const deliveryRate = sentRate(parsed);
    if (!isWellFormedId(id, 'wh')) throw notFound();
    if (status === undefined) {
      const settings = { signatureScheme, deliveryRate, description };
      const updated = await this.resubscribe(tenantId, id, url, events, settings);
      // Deliveries the old rate made wait are due now (docs/decisions.md §8.18).
      if (deliveryRate !== undefined) this.deps.onEnabled?.();
      return updated;
    }
    const reason = status === 'disabled' ? 'manual' : null;
    const result = await this.deps.store.setWebhookStatus(
      tenantId,
      id,
      status,
      reason,
      this.deps.clock.now(),
    );
    if (result.outcome === 'not_found') throw notFound();
    // Re-enabling beside a twin that became active meanwhile (docs/decisions.md §5.7).
    if (result.outcome === 'active_twin') throw activeTwin();
    if (status === 'active') this.deps.onEnabled?.();
    return result.webhook;
  }

  private async resubscribe(
    tenantId: string,
    id: string,
    url: string | undefined,
    events: string[] | undefined,
    settings: Pick<WebhookSubscription, 'signatureScheme' | 'deliveryRate' | 'description'>,
  ): Promise<WebhookRecord> {
    let checkedUrl: string | undefined;
    if (url !== undefined) {
      const checked = checkWebhookUrl(url, this.deps.urlPolicy);
      if (!checked.ok) throw validationFailed([{ path: 'url', message: checked.reason }]);
      checkedUrl = checked.normalized;
    }
    // The part not sent is kept as it is; a change between the read and the write is read again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await this.get(tenantId, id);
      if (settings.signatureScheme === 'keyhook' && current.publicKey !== null) {
        throw validationFailed([
          {
            path: 'signatureScheme',
            message:
              'an ed25519 endpoint signs Standard Webhooks deliveries (v1a) only: rotate to keyType hmac first',
          },
        ]);
      }
      const next = {
        url: checkedUrl ?? current.url,
        events: events ? [...new Set(events)].sort() : current.events,
      };
      const result = await this.deps.store.updateWebhookSubscription(
        tenantId,
        id,
        { ...next, twinKey: twinKeyOf(next.url, next.events), from: current.twinKey, ...settings },
        this.deps.clock.now(),
      );
      if (result.outcome === 'not_found') throw notFound();
      if (result.outcome === 'active_twin') throw activeTwin();
      if (result.outcome === 'updated') return result.webhook;
    }
    throw new KeyhookError('unavailable', 'The webhook was changed by other requests meanwhile; retry.');
  }

  /**
   * A new signing secret. Without `overlapSeconds` (or with 0) the old one stops signing at
   * once; with it, the old one signs beside the new until then, and only it: a rotation inside
   * an overlap drops the secret before it.
   */
  rotate(
    tenantId: string,
    id: string,
    options: RotateWebhookOptions & ({ keyType: 'hmac' } | { secret: string }),
  ): Promise<IssuedWebhook & { secret: string }>;
  rotate(tenantId: string, id: string, options?: RotateWebhookOptions): Promise<IssuedWebhook>;
  async rotate(tenantId: string, id: string, options: RotateWebhookOptions = {}): Promise<IssuedWebhook> {
    const { overlapSeconds = 0, secret: given, keyType } = parseOrThrow(rotateWebhookSchema, options);
    if (!isWellFormedId(id, 'wh')) throw notFound();
    // A host's secret is a shared one; otherwise the kind asked for, or the endpoint's current one.
    let kind: WebhookKeyType | undefined = keyType ?? (given === undefined ? undefined : 'hmac');
    if (kind !== 'hmac') {
      const current = await this.get(tenantId, id);
      kind ??= current.publicKey === null ? 'hmac' : 'ed25519';
      if (kind === 'ed25519' && current.signatureScheme === 'keyhook') {
        throw validationFailed([
          {
            path: 'keyType',
            message:
              'ed25519 signs Standard Webhooks deliveries (v1a): set signatureScheme standard-webhooks first',
          },
        ]);
      }
    }
    const key = this.newKey(kind, given);
    const sealed = this.deps.secrets.seal(key.signingKey, secretContext(tenantId, id));
    const now = this.deps.clock.now();
    const previousExpiresAt = overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000) : null;
    const webhook = await this.deps.store.rotateWebhookSecret(
      tenantId,
      id,
      sealed,
      key.publicKey,
      now,
      previousExpiresAt,
    );
    if (!webhook) throw notFound();
    return { webhook, secret: key.shown };
  }

  /**
   * A new signing key of that kind: the host's shared secret or a new one, shown once; or an
   * ed25519 key pair, whose secret key is sealed and never shown, and whose public key reads show.
   */
  private newKey(
    kind: WebhookKeyType,
    given: string | undefined,
  ): { signingKey: string; publicKey: string | null; shown: string | null } {
    if (kind === 'ed25519') {
      const pair = mintEd25519KeyPair(this.deps.randomBytes);
      return { signingKey: pair.secretKey, publicKey: pair.publicKey, shown: null };
    }
    const secret = given ?? mintWebhookSecret(this.deps.randomBytes);
    return { signingKey: secret, publicKey: null, shown: secret };
  }

  async delete(tenantId: string, id: string): Promise<void> {
    if (!isWellFormedId(id, 'wh') || !(await this.deps.store.deleteWebhook(tenantId, id))) throw notFound();
  }

  /**
   * One event of any catalog type, `data` or the type's example, delivered to this endpoint only
   * (held while it is disabled); each call is a new test.
   */
  async sendTestEvent(tenantId: string, id: string, input: TestEventInput): Promise<SentTestEvent> {
    return this.deps.testEvents.send(tenantId, id, input);
  }

  /** The plaintext signing secret, for the sender. */
  signingSecret(webhook: WebhookRecord): string {
    return this.deps.secrets.open(webhook.secretSealed, secretContext(webhook.tenantId, webhook.id));
  }

  /** The secret an overlapping rotation replaced, opened; the caller checks it has not expired. */
  previousSigningSecret(webhook: WebhookRecord): string | null {
    const sealed = webhook.previousSecretSealed;
    return sealed === null
      ? null
      : this.deps.secrets.open(sealed, secretContext(webhook.tenantId, webhook.id));
  }
}

// The associated data of a sealed secret: it opens only on the row it was sealed for.
const secretContext = (tenantId: string, id: string) => JSON.stringify(['webhook-secret', tenantId, id]);
