import { NotFound } from '@clinic/platform/core'
import {
  TenantRepository,
  applyKeyset,
  companyPageStatement,
  companyRead,
  isoInstant,
  runPrepared,
  runPreparedQuery,
} from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import type { AvailabilityFilter as StoreFilter, Span } from '../../domain/appointment-store'
import type {
  AppointmentStore,
  AppointmentTx,
  ConflictQuery,
  ListFilter,
} from '../../domain/appointment-store'
import { APPOINTMENT_KEYSETS } from '../../domain/list-appointments'
import { Appointment, type AppointmentFields } from '../../schemas/appointment'
import type { Hold, Slot } from '../../schemas/availability'
import { lockCalendars, prepareClaim, translate } from './claims'
import {
  availabilityQuery,
  conflictQuery,
  holdColumns,
  stretches,
  sweepExpiredHolds,
  toHold,
  workingCheck,
} from './calendar-sql'
import { practitionerZoneQuery } from './practitioners-repository'

const TABLE = 'appointments'
const INSTANTS = [
  'starts_at',
  'ends_at',
  'checked_in_at',
  'recurrence_id',
  'created_at',
  'updated_at',
] as const
/** Every column the API shows, in the order of the response schema (never idempresa). */
const COLUMNS = Object.keys(Appointment.properties) as Array<keyof Appointment>
const SELECT: string[] = [...COLUMNS]

type Row = Record<keyof Appointment, unknown>

/** A row as the API shows it: no company column, instants as RFC 3339 UTC. */
function toAppointment(row: Row): Appointment {
  const out: Record<string, unknown> = {}
  for (const c of COLUMNS) out[c] = row[c]
  for (const c of INSTANTS) out[c] = isoInstant(row[c])
  return out as Appointment
}

/**
 * What a transaction does with the calendar beyond appointments: holds and working hours. Each
 * statement runs prepared: one text per call site (a release by n centers is one per n).
 */
function calendarTx(trx: Knex.Transaction, companyId: number, clock: () => Date) {
  const holds = () => trx('calendar').where({ idempresa: companyId, kind: 'hold' })
  const columns = holdColumns(trx)
  return {
    workingCheck: (s: Span) => workingCheck(trx, companyId, s),
    async practitionerZone(practitioner: string) {
      const [row] = await practitionerZoneQuery(trx, companyId, practitioner)
      return (row?.time_zone as string | undefined) ?? null
    },
    async findHold(id: string) {
      const live = holds().where('id', id).where('expires_at', '>', clock())
      const [row] = await runPreparedQuery<Record<string, unknown>>(trx, live.select(columns).forUpdate())
      return row ? toHold(row) : null
    },
    async releaseHold(id: string, centers: string[] | null) {
      const q = holds().where('id', id).where('expires_at', '>', clock())
      if (centers) q.whereIn('codalmacen', centers)
      return (await runPreparedQuery(trx, q.delete().returning('id'))).length > 0
    },
    async insertHold(hold: Omit<Hold, 'created_at'>) {
      await prepareClaim(trx, companyId, clock, { ...hold, patientId: null })
      await sweepExpiredHolds(trx, companyId, clock())
      const [row] = await translate(
        runPreparedQuery<Record<string, unknown>>(
          trx,
          trx('calendar')
            .insert({
              idempresa: companyId,
              id: hold.id,
              kind: 'hold',
              practitioner: hold.practitioner,
              codalmacen: hold.codalmacen,
              during: trx.raw('tstzrange(CAST(? AS timestamptz), CAST(? AS timestamptz))', [
                hold.starts_at,
                hold.ends_at,
              ]),
              patient_id: hold.patient_id,
              expires_at: hold.expires_at,
            })
            .returning(columns),
        ),
      )
      if (!row) throw new Error('insertHold: no row returned')
      return toHold(row)
    },
  }
}

/**
 * The only code that touches the `appointments` schema. Every method takes the company and every
 * statement filters by it; each transaction also sets `app.idempresa`, which the row-level
 * security policies check, so a statement that forgot the filter would still see one company.
 * `clock` decides which holds have expired (tests move it).
 */
export class AppointmentsRepository
  extends TenantRepository<AppointmentTx, Appointment>
  implements AppointmentStore
{
  constructor(
    knex: Knex,
    private readonly clock: () => Date = () => new Date(),
  ) {
    super(knex, { name: TABLE, columns: SELECT, toRow: (row) => toAppointment(row as Row) })
  }

  /** What a use case may do with appointments and the calendar in `trx` (the waitlist's repository builds on it). */
  txOf(companyId: number, trx: Knex.Transaction): AppointmentTx {
    return this.tx(companyId, trx)
  }

  protected tx(companyId: number, trx: Knex.Transaction): AppointmentTx {
    const clock = this.clock
    const rows = () => trx(TABLE).where('idempresa', companyId)
    const write = async (id: string, values: Record<string, unknown>) => {
      const [row] = await translate(
        rows()
          .where('id', id)
          .update({ ...values, version: trx.raw('version + 1'), updated_at: trx.raw('now()') })
          .returning(SELECT),
      )
      if (!row) throw new NotFound('No such appointment')
      return toAppointment(row as Row)
    }
    return {
      ...calendarTx(trx, companyId, clock),
      lockCalendars: (practitioner, patientId) => lockCalendars(trx, companyId, practitioner, patientId),
      findById: (id, opts) => this.rowById(trx, id, opts),
      async insert(id, fields: AppointmentFields) {
        await prepareClaim(trx, companyId, clock, { ...fields, patientId: fields.patient_id })
        const [row] = await translate(
          trx(TABLE)
            .insert({ idempresa: companyId, id, ...fields })
            .returning(SELECT),
        )
        return toAppointment(row as Row)
      },
      async update(current, changes) {
        if (
          changes.starts_at !== undefined ||
          changes.ends_at !== undefined ||
          changes.practitioner !== undefined
        )
          await prepareClaim(trx, companyId, clock, {
            practitioner: changes.practitioner ?? current.practitioner,
            patientId: current.patient_id,
            starts_at: changes.starts_at ?? current.starts_at,
            ends_at: changes.ends_at ?? current.ends_at,
          })
        return write(current.id, changes)
      },
      async insertMany(rows) {
        const first = rows[0]?.fields
        if (!first) return []
        // One claim for them all (one practitioner, one patient): the locks, the expired holds of
        // the whole stretch, then one statement; the constraints still refuse any overlap.
        const starts = rows.map((r) => r.fields.starts_at).sort()
        const ends = rows.map((r) => r.fields.ends_at).sort()
        await prepareClaim(trx, companyId, clock, {
          practitioner: first.practitioner,
          patientId: first.patient_id,
          starts_at: starts[0]!,
          ends_at: ends[ends.length - 1]!,
        })
        const inserted = await translate(
          trx(TABLE)
            .insert(rows.map((r) => ({ idempresa: companyId, id: r.id, ...r.fields })))
            .returning(SELECT),
        )
        return (inserted as Row[]).map(toAppointment)
      },
      checkIn: (id) => write(id, { status: 'checked_in', checked_in_at: trx.raw('now()') }),
      publish: (events) => enqueueEvents(trx, events),
    }
  }

  /**
   * One page and the exact total in one statement (one snapshot, one round trip, the company's
   * setting included: companyPage).
   */
  async list(companyId: number, f: ListFilter): Promise<{ rows: Appointment[]; total: number }> {
    return this.page(companyId, listParts(this.knex, companyId, f))
  }

  /**
   * Free slots (calendar-sql.ts), stretch after stretch until `limit` slots: each stretch's slots
   * start after the last one's, so the pages join in order. Each stretch is one statement that sets
   * the company for row-level security itself (its own transaction, one round trip; a transaction
   * around them would give no more: at read committed each statement has its own snapshot), run
   * prepared (runPrepared): planned once per connection, not per request.
   */
  async availability(companyId: number, f: StoreFilter): Promise<Slot[]> {
    const now = this.clock()
    const slots: Slot[] = []
    for (const stretch of stretches(f.from, f.to)) {
      const limit = f.limit - slots.length
      const { sql, bindings } = availabilityQuery(companyId, { ...f, ...stretch, limit, now })
      // The statement gives each slot as the API shows it (instants already RFC 3339 text).
      slots.push(...(await runPrepared<Slot>(this.knex, sql, bindings)))
      if (slots.length >= f.limit) break
    }
    return slots
  }

  /**
   * The centers of what takes that time from the practitioner or the patient (calendar-sql.ts), in
   * one round trip with the company's setting, prepared (companyRead).
   */
  async conflictCenters(companyId: number, c: ConflictQuery): Promise<string[]> {
    const q = conflictQuery(this.knex, companyId, { ...c, now: this.clock() })
    const rows = await companyRead<{ codalmacen: string }>(this.knex, companyId, q)
    return rows.map((r) => r.codalmacen)
  }
}

/** The statement `list` sends (the benchmark explains this very statement: `.toSQL().toNative()`). */
export const listStatement = (db: Knex, companyId: number, f: ListFilter): Knex.Raw =>
  companyPageStatement(db, companyId, listParts(db, companyId, f))

/**
 * The page and its exact total. Filtered by center and status only, the total is the sum of a few
 * counter rows; with a time range, patient or practitioner it is counted over the same index
 * range as the page (a center's day: a few dozen index entries).
 */
function listParts(db: Knex, companyId: number, f: ListFilter) {
  const matching = db(TABLE).where('idempresa', companyId)
  if (f.centers) matching.whereIn('codalmacen', f.centers)
  if (f.statuses) matching.whereIn('status', f.statuses)
  if (f.patientId) matching.where('patient_id', f.patientId)
  if (f.seriesId) matching.where('series_id', f.seriesId)
  if (f.practitioner !== undefined) matching.where('practitioner', f.practitioner)
  if (f.from) matching.where('starts_at', '>=', f.from)
  if (f.to) matching.where('starts_at', '<', f.to)

  const page = matching.clone().select(SELECT)
  const orderBy = applyKeyset(page, APPOINTMENT_KEYSETS[f.sort], f.after)
  page.offset(f.offset).limit(f.limit)

  let total: Knex.QueryBuilder
  if (f.patientId || f.seriesId || f.practitioner !== undefined || f.from || f.to)
    total = matching.clone().count({ n: '*' })
  else {
    total = db('appointment_counts').where('idempresa', companyId).select(db.raw('coalesce(sum(n), 0) as n'))
    if (f.centers) total.whereIn('codalmacen', f.centers)
    if (f.statuses) total.whereIn('status', f.statuses)
  }
  return { page, total, orderBy }
}
