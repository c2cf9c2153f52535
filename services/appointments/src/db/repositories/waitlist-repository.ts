import { NotFound } from '@clinic/platform/core'
import { TenantRepository, companyRead, keysetPageParts } from '@clinic/platform/db'
import type { Knex } from 'knex'
import type {
  EntryFilter,
  OfferRow,
  WaitlistJob,
  WaitlistStore,
  WaitlistTx,
} from '../../domain/waitlist-store'
import { WAITLIST_KEYSET } from '../../domain/waitlist'
import type { WaitlistEntry } from '../../schemas/waitlist'
import type { AppointmentTx } from '../../domain/appointment-store'
import type { AppointmentsRepository } from './appointments-repository'
import { entrySelect, toCandidate, toEntry, toJob, toOffer } from './waitlist-rows'

const ENTRIES = 'waitlist_entries'
const OFFERS = 'waitlist_offers'
/**
 * The waitlist's tables (migration 0009), in the same transactions as the calendar's: a use case
 * gets the appointments' `AppointmentTx` and the waitlist's statements on one connection.
 */
export class WaitlistRepository extends TenantRepository<WaitlistTx, WaitlistEntry> implements WaitlistStore {
  constructor(
    knex: Knex,
    private readonly appointments: AppointmentsRepository,
  ) {
    super(knex, { name: ENTRIES, columns: [], toRow: toEntry })
  }

  availability: WaitlistStore['availability'] = (companyId, f) => this.appointments.availability(companyId, f)

  async findById(companyId: number, id: string): Promise<WaitlistEntry | null> {
    const q = this.knex({ w: ENTRIES })
      .where({ 'w.idempresa': companyId, 'w.id': id })
      .select(entrySelect(this.knex))
    const [row] = await companyRead<Record<string, unknown>>(this.knex, companyId, q)
    return row ? toEntry(row) : null
  }

  async offer(companyId: number, id: string): Promise<OfferRow | null> {
    const q = this.knex(OFFERS).where({ idempresa: companyId, id }).select('*')
    const [row] = await companyRead<Record<string, unknown>>(this.knex, companyId, q)
    return row ? toOffer(row) : null
  }

  async entries(companyId: number, f: EntryFilter) {
    const matching = this.knex({ w: ENTRIES }).where('w.idempresa', companyId)
    if (f.centers) matching.whereIn('w.codalmacen', f.centers)
    if (f.status) matching.where('w.status', f.status)
    if (f.practitioner !== undefined) matching.where('w.practitioner', f.practitioner)
    if (f.patientId) matching.where('w.patient_id', f.patientId)
    return this.page(companyId, keysetPageParts(matching, entrySelect(this.knex), WAITLIST_KEYSET, f))
  }

  async claimJobs(now: Date, limit: number, leaseMs: number): Promise<WaitlistJob[]> {
    const { rows } = await this.knex.raw<{ rows: Array<Record<string, unknown>> }>(
      'SELECT * FROM claim_waitlist_jobs(?, ?, make_interval(secs => ?))',
      [now, limit, leaseMs / 1000],
    )
    return rows.map(toJob)
  }

  async lapsedCompanies(now: Date): Promise<number[]> {
    const { rows } = await this.knex.raw<{ rows: Array<{ c: number }> }>(
      'SELECT waitlist_lapsed_companies(?) AS c',
      [now],
    )
    return rows.map((r) => Number(r.c))
  }

  protected tx(companyId: number, trx: Knex.Transaction): WaitlistTx {
    return { ...this.appointments.txOf(companyId, trx), ...waitlistTx(trx, companyId) }
  }
}

type Own = Omit<WaitlistTx, keyof AppointmentTx>

/** The waitlist's statements in one company's transaction. */
const waitlistTx = (trx: Knex.Transaction, companyId: number): Own => ({
  ...entryStatements(trx, companyId),
  ...offerStatements(trx, companyId),
})

/** Entries: written, read with their open offer, and the next one waiting for a span. */
function entryStatements(trx: Knex.Transaction, companyId: number) {
  const entries = () => trx({ w: ENTRIES }).where('w.idempresa', companyId)
  const entryById = async (id: string, forUpdate = false) => {
    const q = entries().where('w.id', id).select(entrySelect(trx))
    const [row] = (await (forUpdate ? q.forUpdate('w') : q)) as Array<Record<string, unknown>>
    return row ? toEntry(row) : null
  }
  return {
    entryById,
    async insertEntry(e) {
      await trx(ENTRIES).insert({
        idempresa: companyId,
        id: e.id,
        patient_id: e.patient_id,
        codalmacen: e.codalmacen,
        practitioner: e.practitioner,
        duration_minutes: e.duration_minutes,
        earliest: e.earliest,
        latest: e.latest,
        days: e.days,
        times_from: e.times?.from ?? null,
        times_to: e.times?.to ?? null,
        time_zone: e.time_zone,
        priority: e.priority,
        channel: e.channel,
        notes: e.notes,
      })
      return (await entryById(e.id))!
    },
    async setEntry(id, status, appointmentId) {
      const changes: Record<string, unknown> = {
        status,
        version: trx.raw('version + 1'),
        updated_at: trx.raw('now()'),
      }
      if (appointmentId !== undefined) changes.appointment_id = appointmentId
      const n = await trx(ENTRIES).where({ idempresa: companyId, id }).update(changes)
      if (!n) throw new NotFound('No such waitlist entry')
      return (await entryById(id))!
    },
    async nextWaiting(c) {
      const q = trx({ w: ENTRIES })
        .where({ 'w.idempresa': companyId, 'w.codalmacen': c.codalmacen, 'w.status': 'waiting' })
        .where((b) => b.whereNull('w.practitioner').orWhere('w.practitioner', c.practitioner))
        .whereRaw("w.duration_minutes * interval '1 minute' <= ?::timestamptz - ?::timestamptz", [
          c.to,
          c.from,
        ])
        .where((b) => b.whereNull('w.latest').orWhere('w.latest', '>=', c.from))
        .where((b) => b.whereNull('w.earliest').orWhere('w.earliest', '<', c.to))
        .whereNotExists(
          trx(OFFERS)
            .whereRaw('idempresa = w.idempresa AND entry_id = w.id')
            .where('state', 'declined')
            .where('starts_at', '<', c.to)
            .where('ends_at', '>', c.from),
        )
        .orderBy([{ column: 'w.priority', order: 'desc' }, 'w.created_at', 'w.id'])
        .first('w.*')
        .forUpdate('w')
        .skipLocked()
      if (c.exclude.length) q.whereNotIn('w.id', c.exclude)
      const row = (await q) as Record<string, unknown> | undefined
      return row ? toCandidate(row) : null
    },
    async expireEntries(now) {
      const rows = await trx(ENTRIES)
        .where({ idempresa: companyId, status: 'waiting' })
        .where('latest', '<=', now)
        .update({ status: 'expired', version: trx.raw('version + 1'), updated_at: trx.raw('now()') })
        .returning('id')
      const out: WaitlistEntry[] = []
      for (const r of rows as Array<{ id: string }>) out.push((await entryById(r.id))!)
      return out
    },
  } satisfies Partial<Own>
}

/** Offers, the holds they keep, and the jobs. */
function offerStatements(trx: Knex.Transaction, companyId: number) {
  const offers = () => trx(OFFERS).where('idempresa', companyId)
  return {
    async insertOffer(o) {
      await trx(OFFERS).insert({ idempresa: companyId, ...o })
    },
    async offerById(id, forUpdate = false) {
      const q = offers().where('id', id).first('*')
      const row = (await (forUpdate ? q.forUpdate() : q)) as Record<string, unknown> | undefined
      return row ? toOffer(row) : null
    },
    async setOffer(id, state, appointmentId) {
      const changes: Record<string, unknown> = { state, answered_at: trx.raw('now()') }
      if (appointmentId !== undefined) changes.appointment_id = appointmentId
      const [row] = await offers().where('id', id).update(changes).returning('*')
      if (!row) throw new NotFound('No such offer')
      return toOffer(row as Record<string, unknown>)
    },
    async isFree(practitioner, from, to, now) {
      const row = await trx('calendar')
        .where({ idempresa: companyId, practitioner })
        .where('starts_at', '>', trx.raw("?::timestamptz - interval '12 hours'", [to]))
        .where('starts_at', '<', to)
        .whereRaw('during && tstzrange(?::timestamptz, ?::timestamptz)', [from, to])
        .where((b) => b.whereNull('expires_at').orWhere('expires_at', '>', now))
        .first('id')
      return !row
    },
    async expireOffers(now) {
      const rows = await offers()
        .where('state', 'open')
        .where('expires_at', '<=', now)
        .update({ state: 'expired', answered_at: trx.raw('now()') })
        .returning('*')
      return (rows as Array<Record<string, unknown>>).map(toOffer)
    },
    async deleteHold(id) {
      await trx('calendar').where({ idempresa: companyId, id, kind: 'hold' }).delete()
    },
    async sweepHolds(now) {
      return trx('calendar')
        .where({ idempresa: companyId, kind: 'hold' })
        .where('expires_at', '<=', now)
        .delete()
    },
    async addAnnounce(offerId, at, traceparent) {
      await trx('waitlist_jobs').insert({
        idempresa: companyId,
        kind: 'announce',
        offer_id: offerId,
        due_at: at,
        traceparent,
      })
    },
    async finishJob(id) {
      await trx('waitlist_jobs').where({ idempresa: companyId, id }).delete()
    },
  } satisfies Partial<Own>
}
