import { createHash, createHmac } from 'node:crypto'
import { canonicalJson, eventContracts, type CloudEvent, type EventContract } from '@clinic/platform/core'

/**
 * The audit record of DESIGN.md section 4. What an event becomes on the trail: who, what, on which
 * resource, when, with which result; never the values of a resource's fields nor any body.
 */
export const OUTCOMES = ['success', 'failure'] as const
export type Outcome = (typeof OUTCOMES)[number]

export interface AuditActor {
  user_id: string | null
  username: string | null
  token_id: string | null
}

export interface AuditHttp {
  method: string
  path: string
  status: number
  duration_ms: number
  ip: string | null
  /** http.refused, http.public: how many requests the event stands for (one per address and minute). */
  count?: number
}

/** An event mapped to its audit fields, before it takes its place in the company's chain. */
export interface AuditDraft {
  idempresa: number
  id: string
  occurred_at: string
  action: string
  outcome: Outcome
  resource_type: string | null
  resource_id: string | null
  codalmacen: string | null
  actor: AuditActor
  request_id: string | null
  source: string
  http: AuditHttp | null
  changes: string[] | null
}

/** A stored audit event: the draft plus its link in the hash chain. */
export interface AuditEvent extends AuditDraft {
  recorded_at: string
  seq: number
  prev_hash: string
  hash: string
}

/** prev_hash of the first event of every company. */
export const GENESIS_HASH = '0'.repeat(64)

/** Text columns cannot hold NUL; nothing a producer sends may stop an event from being recorded. */
const text = (v: unknown): string | null => (typeof v === 'string' ? v.replaceAll('\u0000', '') : null)
const nonEmpty = (v: unknown): string | null => {
  const s = text(v)
  return s ? s : null
}

/** Instants are kept at millisecond precision, so the hash recomputes from what the database returns. */
export const toInstant = (v: string | Date): string => new Date(v).toISOString()

/** What the publisher's contract says an event type means on the trail (undefined: a type no contract declares). */
const contractOf = (type: string): EventContract | undefined =>
  Object.hasOwn(eventContracts, type) ? (eventContracts as Record<string, EventContract>)[type] : undefined

/** A domain event's outcome, by its contract: a failure always, or when a field of its data holds one of the values. */
function domainOutcome(type: string, data: Record<string, unknown>): Outcome {
  const failure = contractOf(type)?.failure
  if (failure === 'always') return 'failure'
  const value = failure ? data[failure.field] : undefined
  if (failure && typeof value === 'string' && failure.values.includes(value)) return 'failure'
  return 'success'
}

/** The resource its contract names; a type no contract declares is about its first segment. */
const resourceTypeOf = (type: string): string => contractOf(type)?.resource ?? type.split('.')[0] ?? type

/**
 * Maps an event of `clinic.events` to its audit fields. Only names, ids and request metadata
 * are kept: `data` contributes `changes` (field names) and, for http.request, the access fields.
 */
export function toAuditDraft(event: CloudEvent): AuditDraft {
  const data = event.data as Record<string, unknown>
  const isHttp = event.type === 'http.request'
  let http: AuditHttp | null = null
  let outcome: Outcome = domainOutcome(event.type, data)
  // Counted per address and minute by the gateway: refusals (http.refused, a 401 each) and requests
  // served without a token, provider callbacks and CORS preflights (http.public: one method and status).
  if (event.type === 'http.refused' || event.type === 'http.public') {
    const count = Number.isInteger(data.count) && (data.count as number) > 0 ? (data.count as number) : 1
    const paths = Array.isArray(data.paths) ? data.paths.map(text).filter((p) => p !== null) : []
    const refused = event.type === 'http.refused'
    const status = refused ? 401 : Number.isInteger(data.status) ? (data.status as number) : 0
    http = {
      method: refused ? '' : (text(data.method) ?? ''),
      path: paths.join(' ').slice(0, 500),
      status,
      duration_ms: 0,
      ip: nonEmpty(data.ip),
      count,
    }
    outcome = status > 0 && status < 400 ? 'success' : 'failure'
  }
  if (isHttp) {
    const status = Number.isInteger(data.status) ? (data.status as number) : 0
    http = {
      method: text(data.method) ?? '',
      // The path alone: a query string can carry a patient's name.
      path: (text(data.path) ?? '').split('?')[0]!,
      status,
      duration_ms:
        typeof data.duration_ms === 'number' && Number.isFinite(data.duration_ms) ? data.duration_ms : 0,
      ip: nonEmpty(data.ip),
    }
    outcome = status > 0 && status < 400 ? 'success' : 'failure'
  }
  let changes = Array.isArray(data.changes)
    ? data.changes.map(text).filter((c): c is string => c !== null)
    : null
  // A booking or move outside a registered practitioner's hours on purpose (DESIGN.md section 11).
  if (data.outside_hours === true) changes = [...(changes ?? []), 'outside_hours']
  // A message to a patient who requires a guardian, sent to the patient on purpose (DESIGN.md section 3).
  if (data.override_guardian === true) changes = [...(changes ?? []), 'override_guardian']
  return {
    idempresa: event.idempresa,
    id: event.id.toLowerCase(),
    occurred_at: toInstant(event.time),
    action: text(event.type) ?? '',
    outcome,
    resource_type: isHttp ? nonEmpty(data.resource_type) : resourceTypeOf(event.type),
    resource_id: nonEmpty(event.subject) ?? nonEmpty(data.resource_id) ?? (isHttp ? null : nonEmpty(data.id)),
    codalmacen: nonEmpty(event.codalmacen),
    actor: {
      user_id: nonEmpty(event.actorid),
      username: nonEmpty(event.actorname),
      token_id: nonEmpty(event.actortokenid),
    },
    request_id: nonEmpty(event.requestid),
    source: text(event.source) ?? '',
    http,
    changes: isHttp ? null : changes,
  }
}

/** The fields a hash covers: every stored field (company included) except the hash itself. */
export function hashedFields(e: Omit<AuditEvent, 'hash'> & { hash?: string }): Omit<AuditEvent, 'hash'> {
  return {
    idempresa: e.idempresa,
    id: e.id,
    seq: e.seq,
    prev_hash: e.prev_hash,
    occurred_at: e.occurred_at,
    recorded_at: e.recorded_at,
    action: e.action,
    outcome: e.outcome,
    resource_type: e.resource_type,
    resource_id: e.resource_id,
    codalmacen: e.codalmacen,
    actor: { user_id: e.actor.user_id, username: e.actor.username, token_id: e.actor.token_id },
    request_id: e.request_id,
    source: e.source,
    http: e.http && {
      method: e.http.method,
      path: e.http.path,
      status: e.http.status,
      duration_ms: e.http.duration_ms,
      ip: e.http.ip,
    },
    changes: e.changes,
  }
}

/** The prefix of a keyed hash; a hash without it is a plain SHA-256 of a row recorded before keys. */
export const KEYED_PREFIX = 'k1.'

/**
 * With `key` (AUDIT_CHAIN_KEY, kept outside the database): `k1.` + HMAC-SHA256(key, prev_hash +
 * canonical JSON of the event without its hash), hex. Without: the plain SHA-256 of the same input,
 * as rows recorded before keyed chains (audit migration 0002) have it.
 */
export function computeHash(e: Omit<AuditEvent, 'hash'> & { hash?: string }, key?: string): string {
  const input = e.prev_hash + canonicalJson(hashedFields(e))
  if (key === undefined) return createHash('sha256').update(input).digest('hex')
  return KEYED_PREFIX + createHmac('sha256', key).update(input).digest('hex')
}

/** Gives a draft its place in the chain: the next seq after the head, linked to the head's hash. */
export function sealEvent(
  draft: AuditDraft,
  link: { seq: number; prevHash: string; recordedAt: string | Date },
  key?: string,
): AuditEvent {
  const unsealed = {
    ...draft,
    recorded_at: toInstant(link.recordedAt),
    seq: link.seq,
    prev_hash: link.prevHash,
  }
  return { ...unsealed, hash: computeHash(unsealed, key) }
}
