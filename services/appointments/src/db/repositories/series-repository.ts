import { NotFound } from '@clinic/platform/core'
import { TenantRepository, companyRead, isoInstant } from '@clinic/platform/db'
import type { Knex } from 'knex'
import type { Occurrence, SeriesRow, SeriesStore, SeriesTx, SeriesValues } from '../../domain/series-store'
import { Appointment } from '../../schemas/appointment'
import type { SkippedOccurrence } from '../../schemas/series'
import type { ConflictQuery } from '../../domain/appointment-store'
import type { AppointmentsRepository } from './appointments-repository'
import { conflictQuery } from './calendar-sql'
import { practitionerZoneQuery } from './practitioners-repository'

const TABLE = 'series'
/** The series' columns as the domain reads them (never idempresa). */
const COLUMNS = [
  'id',
  'patient_id',
  'practitioner',
  'codalmacen',
  'time_zone',
  'start',
  'duration_minutes',
  'rrule',
  'exdates',
  'reason',
  'notes',
  'status',
  'previous_series_id',
  'next_series_id',
  'skipped',
  'created_at',
  'updated_at',
  'version',
] as const
/** What insertSeries and updateSeries write (jsonb columns as JSON text). */
const VALUES: ReadonlyArray<keyof SeriesValues> = COLUMNS.filter(
  (c): c is (typeof COLUMNS)[number] & keyof SeriesValues =>
    !['id', 'created_at', 'updated_at', 'version'].includes(c),
)
const JSON_COLUMNS = new Set(['exdates', 'skipped'])

const iso = (v: unknown) => isoInstant(v) as string

function toSeries(r: Record<string, unknown>): SeriesRow {
  return {
    id: String(r.id),
    patient_id: String(r.patient_id),
    practitioner: String(r.practitioner),
    codalmacen: String(r.codalmacen),
    time_zone: String(r.time_zone),
    start: String(r.start),
    duration_minutes: Number(r.duration_minutes),
    rrule: String(r.rrule),
    exdates: r.exdates as string[],
    reason: (r.reason as string | null) ?? null,
    notes: (r.notes as string | null) ?? null,
    status: r.status as SeriesRow['status'],
    previous_series_id: (r.previous_series_id as string | null) ?? null,
    next_series_id: (r.next_series_id as string | null) ?? null,
    skipped: r.skipped as SkippedOccurrence[],
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    version: Number(r.version),
  }
}

/** An appointment's columns as the API shows them (the Appointment schema's), and the series' flag. */
const APPOINTMENT_COLUMNS = Object.keys(Appointment.properties) as Array<keyof Appointment>
const INSTANTS = new Set([
  'starts_at',
  'ends_at',
  'checked_in_at',
  'recurrence_id',
  'created_at',
  'updated_at',
])
function toOccurrence(r: Record<string, unknown>): Occurrence {
  const out: Record<string, unknown> = {}
  for (const c of APPOINTMENT_COLUMNS) out[c] = INSTANTS.has(c) ? isoInstant(r[c]) : r[c]
  out.series_exception = r.series_exception === true
  return out as unknown as Occurrence
}

/** The values of a write, jsonb columns as JSON text. */
function writable(values: Partial<SeriesValues>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const c of VALUES)
    if (values[c] !== undefined) out[c] = JSON_COLUMNS.has(c) ? JSON.stringify(values[c]) : values[c]
  return out
}

/** The series' own statements in a company's transaction. */
function seriesTx(trx: Knex.Transaction, companyId: number, clock: () => Date) {
  const series = () => trx(TABLE).where('idempresa', companyId)
  const occurrences = (seriesId: string) =>
    trx('appointments').where({ idempresa: companyId, series_id: seriesId }).orderBy('occurrence')
  // A savepoint is released when the next one begins (one round trip for both: a series books
  // dozens in a row), or by the commit.
  let open = false
  return {
    async savepoint<T>(fn: () => Promise<T>): Promise<T> {
      await trx.raw(open ? 'RELEASE SAVEPOINT occurrence; SAVEPOINT occurrence' : 'SAVEPOINT occurrence')
      open = true
      try {
        return await fn()
      } catch (err) {
        await trx.raw('ROLLBACK TO SAVEPOINT occurrence')
        throw err
      }
    },
    async insertSeries(id: string, values: SeriesValues) {
      const [row] = await trx(TABLE)
        .insert({ idempresa: companyId, id, ...writable(values) })
        .returning([...COLUMNS])
      return toSeries(row as Record<string, unknown>)
    },
    async findSeries(id: string, opts?: { forUpdate?: boolean }) {
      const q = series()
        .where('id', id)
        .first([...COLUMNS])
      const row = (await (opts?.forUpdate ? q.forUpdate() : q)) as Record<string, unknown> | undefined
      return row ? toSeries(row) : null
    },
    async updateSeries(id: string, values: Partial<SeriesValues>) {
      const [row] = await series()
        .where('id', id)
        .update({ ...writable(values), version: trx.raw('version + 1'), updated_at: trx.raw('now()') })
        .returning([...COLUMNS])
      if (!row) throw new NotFound('No such series')
      return toSeries(row as Record<string, unknown>)
    },
    async lockOccurrences(seriesId: string) {
      const rows = await occurrences(seriesId)
        .select([...APPOINTMENT_COLUMNS, 'series_exception'])
        .forUpdate()
      return (rows as Array<Record<string, unknown>>).map(toOccurrence)
    },
    async conflictCenters(c: ConflictQuery) {
      const rows = await conflictQuery(trx, companyId, { ...c, now: clock() })
      return (rows as Array<{ codalmacen: string }>).map((r) => r.codalmacen)
    },
    async setException(ids: string[], exception: boolean) {
      if (ids.length)
        await trx('appointments')
          .where('idempresa', companyId)
          .whereIn('id', ids)
          .update({ series_exception: exception })
    },
  }
}

/**
 * Series (DESIGN.md section 20) over the `series` table; their occurrences are written through the
 * appointments' own transaction (AppointmentsRepository.txOf: the same insert, update and calendar
 * statements as a single booking). Every statement is scoped by company, under row-level security.
 */
export class SeriesRepository extends TenantRepository<SeriesTx, SeriesRow> implements SeriesStore {
  constructor(
    knex: Knex,
    private readonly appointments: AppointmentsRepository,
    private readonly clock: () => Date = () => new Date(),
  ) {
    super(knex, { name: TABLE, columns: COLUMNS, toRow: toSeries })
  }

  protected tx(companyId: number, trx: Knex.Transaction): SeriesTx {
    return { ...this.appointments.txOf(companyId, trx), ...seriesTx(trx, companyId, this.clock) }
  }

  availability: SeriesStore['availability'] = (companyId, f) => this.appointments.availability(companyId, f)
  conflictCenters: SeriesStore['conflictCenters'] = (companyId, c) =>
    this.appointments.conflictCenters(companyId, c)

  /** One round trip (companyRead). */
  async practitionerZone(companyId: number, practitioner: string): Promise<string | null> {
    const q = practitionerZoneQuery(this.knex, companyId, practitioner)
    const [row] = await companyRead<{ time_zone: string }>(this.knex, companyId, q)
    return row?.time_zone ?? null
  }

  /** One round trip (companyRead), by occurrence (the unique index appointments_by_series). */
  async occurrences(companyId: number, seriesId: string): Promise<Appointment[]> {
    const q = this.knex('appointments')
      .where({ idempresa: companyId, series_id: seriesId })
      .orderBy('occurrence')
      .select([...APPOINTMENT_COLUMNS])
    const rows = await companyRead<Record<string, unknown>>(this.knex, companyId, q)
    // (The read is a subquery of companyRead's: its order is restated here.)
    return rows
      .map((r) => {
        const { series_exception: _flag, ...a } = toOccurrence(r)
        return a
      })
      .sort((x, y) => (x.occurrence ?? 0) - (y.occurrence ?? 0))
  }
}
