import { isoInstant } from '@clinic/platform/db'
import type { Knex } from 'knex'
import type { Candidate, OfferRow, WaitlistJob } from '../../domain/waitlist-store'
import { WEEKDAYS, type WaitlistEntry } from '../../schemas/waitlist'

/** Rows of the waitlist's tables as the domain and the API see them. */

const iso = (v: unknown) => isoInstant(v) as string
/** An instant of a JSON object PostgreSQL built (text with an offset), as the API shows instants. */
const jsonInstant = (v: unknown) => new Date(String(v)).toISOString()

/** An entry's columns and its open offer (a JSON object, or null), in one select. */
export const entrySelect = (db: Knex | Knex.Transaction) => [
  'w.*',
  db.raw(`(SELECT json_build_object('id', o.id, 'starts_at', o.starts_at, 'ends_at', o.ends_at,
      'practitioner', o.practitioner, 'sends_at', o.sends_at, 'expires_at', o.expires_at)
    FROM waitlist_offers o WHERE o.idempresa = w.idempresa AND o.entry_id = w.id AND o.state = 'open') AS offer`),
]

export function toEntry(r: Record<string, unknown>): WaitlistEntry {
  const offer = r.offer as Record<string, unknown> | null
  const days = r.days as number[] | null
  return {
    id: String(r.id),
    patient_id: String(r.patient_id),
    codalmacen: String(r.codalmacen),
    practitioner: (r.practitioner as string | null) ?? null,
    duration_minutes: Number(r.duration_minutes),
    earliest: isoInstant(r.earliest) as string | null,
    latest: isoInstant(r.latest) as string | null,
    days: days ? days.map((d) => WEEKDAYS[d - 1]!) : null,
    times: r.times_from ? { from: String(r.times_from), to: String(r.times_to) } : null,
    time_zone: String(r.time_zone),
    priority: Number(r.priority),
    channel: (r.channel as 'email' | 'sms' | null) ?? null,
    notes: (r.notes as string | null) ?? null,
    status: r.status as WaitlistEntry['status'],
    offer: offer
      ? {
          id: String(offer.id),
          starts_at: jsonInstant(offer.starts_at),
          ends_at: jsonInstant(offer.ends_at),
          practitioner: String(offer.practitioner),
          sends_at: jsonInstant(offer.sends_at),
          expires_at: jsonInstant(offer.expires_at),
        }
      : null,
    appointment_id: (r.appointment_id as string | null) ?? null,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    version: Number(r.version),
  }
}

export function toCandidate(r: Record<string, unknown>): Candidate {
  return {
    id: String(r.id),
    patient_id: String(r.patient_id),
    codalmacen: String(r.codalmacen),
    practitioner: (r.practitioner as string | null) ?? null,
    duration_minutes: Number(r.duration_minutes),
    earliest: isoInstant(r.earliest) as string | null,
    latest: isoInstant(r.latest) as string | null,
    days: (r.days as number[] | null) ?? null,
    times: r.times_from ? { from: String(r.times_from), to: String(r.times_to) } : null,
    time_zone: String(r.time_zone),
    channel: (r.channel as 'email' | 'sms' | null) ?? null,
    version: Number(r.version),
  }
}

export function toOffer(r: Record<string, unknown>): OfferRow {
  return {
    id: String(r.id),
    entry_id: String(r.entry_id),
    patient_id: String(r.patient_id),
    codalmacen: String(r.codalmacen),
    practitioner: String(r.practitioner),
    starts_at: iso(r.starts_at),
    ends_at: iso(r.ends_at),
    time_zone: String(r.time_zone),
    sends_at: iso(r.sends_at),
    expires_at: iso(r.expires_at),
    state: r.state as OfferRow['state'],
    appointment_id: (r.appointment_id as string | null) ?? null,
  }
}

export function toJob(r: Record<string, unknown>): WaitlistJob {
  const base = {
    id: String(r.id),
    companyId: Number(r.idempresa),
    attempts: Number(r.attempts),
    traceparent: (r.traceparent as string | null) ?? null,
  }
  if (r.kind === 'announce') return { ...base, kind: 'announce', offerId: String(r.offer_id) }
  const during = String(r.during).match(/^[[(]"?([^",]+)"?,"?([^")]+)"?[)\]]$/)
  if (!during) throw new Error(`waitlist job ${base.id}: unreadable span ${String(r.during)}`)
  return {
    ...base,
    kind: 'freed',
    practitioner: String(r.practitioner),
    codalmacen: String(r.codalmacen),
    from: new Date(during[1]!).toISOString(),
    to: new Date(during[2]!).toISOString(),
  }
}
