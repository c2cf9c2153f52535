import type { FhirRows, FhirSearch } from '@clinic/platform/core'
import { companyRead, fhirSearchPage, isoInstant, whereDateBounds } from '@clinic/platform/db'
import type { Knex } from 'knex'
import type {
  AppointmentFilter,
  AppointmentRow,
  FhirStore,
  ScheduleRow,
  SlotQuery,
  SlotRow,
} from '../../domain/fhir-store'
import { Appointment } from '../../schemas/appointment'
import { Practitioner } from '../../schemas/practitioner'

/**
 * The FHIR searches of Practitioner, Schedule, Slot and Appointment (domain/fhir-resources.ts):
 * each type's own parameters here, the shared part (`_id`, `_lastUpdated`, order, cursor, exact
 * total, one statement under the company's row-level security) is the platform's fhirSearchPage.
 * Schedules and slots are no table: they are derived from the practitioners' working hours and
 * the calendar, as a subquery with an `id` and an `updated_at` that fhirSearchPage pages like a
 * table's.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

const PRACTITIONER_COLUMNS = Object.keys(Practitioner.properties) as Array<keyof Practitioner>
const APPOINTMENT_COLUMNS = Object.keys(Appointment.properties) as Array<keyof Appointment>
const INSTANTS = new Set([
  'starts_at',
  'ends_at',
  'checked_in_at',
  'recurrence_id',
  'created_at',
  'updated_at',
])

function toPractitioner(row: Record<string, unknown>, id = row.id): Practitioner {
  const out: Record<string, unknown> = {}
  for (const c of PRACTITIONER_COLUMNS) out[c] = isoInstant(row[c])
  out.id = id
  return out as Practitioner
}
function toAppointmentRow(row: Record<string, unknown>): AppointmentRow {
  const out: Record<string, unknown> = {}
  for (const c of APPOINTMENT_COLUMNS) out[c] = INSTANTS.has(c) ? isoInstant(row[c]) : row[c]
  out.practitioner_name = row.practitioner_name ?? null
  return out as AppointmentRow
}
const toSlot = (row: Record<string, unknown>): SlotRow => ({
  id: String(row.id),
  schedule_id: String(row.schedule_id),
  status: row.status as SlotRow['status'],
  starts_at: isoInstant(row.starts_at) as string,
  ends_at: isoInstant(row.ends_at) as string,
  updated_at: isoInstant(row.updated_at) as string,
})

/**
 * A Schedule's id (domain/fhir-resources.ts): the practitioner's slug (its first 20 characters,
 * `X` and 11 hex digits of its md5 when longer than 32), `.`, the center (`_` written `.`).
 */
const SCHEDULE_ID = `(CASE WHEN length(p.id) <= 32 THEN p.id ELSE left(p.id, 20) || 'X' || left(md5(p.id), 11) END)
  || '.' || replace(h.codalmacen, '_', '.')`
/** Each practitioner once per center of their working hours: `h.codalmacen`. */
const AT_CENTERS = `practitioners p CROSS JOIN LATERAL (
  SELECT DISTINCT x->>'codalmacen' AS codalmacen FROM jsonb_array_elements(p.working_hours) x) h`
/** A Slot's start in its id: UTC `YYYYMMDDTHHMM`, seconds and milliseconds when not zero, `Z`. */
const startKey = (t: string) => `to_char(${t} AT TIME ZONE 'UTC', 'YYYYMMDD"T"HH24MI') || CASE
    WHEN date_trunc('minute', ${t} AT TIME ZONE 'UTC') = ${t} AT TIME ZONE 'UTC' THEN ''
    WHEN date_trunc('second', ${t} AT TIME ZONE 'UTC') = ${t} AT TIME ZONE 'UTC'
      THEN to_char(${t} AT TIME ZONE 'UTC', 'SS')
    ELSE to_char(${t} AT TIME ZONE 'UTC', 'SSMS') END || 'Z'`

/**
 * The slots of the chosen schedules starting in [from, to): the grid of each active one (every
 * slot_minutes from the start of each working window at that center, in the practitioner's time
 * zone, the slots that fit), minus the past, minus what is busy (live claims of the calendar and
 * time off, as availability: one multirange per practitioner), as `free`; and each live claim
 * (appointment that holds its slot, live hold) at that center as `busy`, its last change (the
 * calendar row is written again whenever its time, center or status changes) as `updated_at`. A
 * free slot's `updated_at` is its practitioner's (the hours that make the grid).
 */
const SLOTS = `(WITH chosen AS :chosen,
  busy AS MATERIALIZED (
    SELECT b.practitioner, range_agg(b.during) AS during FROM (
      SELECT c.practitioner, c.during FROM calendar c
      WHERE c.idempresa = :company AND c.practitioner IN (SELECT practitioner FROM chosen)
        AND c.starts_at >= CAST(:from AS timestamptz) - interval '12 hours'
        AND c.starts_at < CAST(:to AS timestamptz) + interval '12 hours'
        AND (c.expires_at IS NULL OR c.expires_at > CAST(:now AS timestamptz))
      UNION ALL
      SELECT t.practitioner, tstzrange(t.starts_at, t.ends_at) FROM time_off t
      WHERE t.idempresa = :company AND t.practitioner IN (SELECT practitioner FROM chosen)
        AND tstzrange(t.starts_at, t.ends_at)
          && tstzrange(CAST(:from AS timestamptz), CAST(:to AS timestamptz) + interval '12 hours')
    ) b GROUP BY b.practitioner
  ),
  free AS (
    SELECT s.schedule_id, g AS starts_at, g + s.len AS ends_at, CAST('free' AS text) AS status,
           s.updated_at
    FROM chosen s
    CROSS JOIN LATERAL working_windows(s.working_hours, s.time_zone, CAST(:from AS timestamptz),
                                       CAST(:to AS timestamptz) + s.len) w
    CROSS JOIN LATERAL generate_series(lower(w.during), upper(w.during) - s.len, s.len) g
    LEFT JOIN busy b ON b.practitioner = s.practitioner
    WHERE s.active AND w.codalmacen = s.codalmacen
      AND g >= greatest(CAST(:from AS timestamptz), CAST(:now AS timestamptz))
      AND g < CAST(:to AS timestamptz)
      AND (b.during IS NULL OR NOT b.during && tstzrange(g, g + s.len))
  ),
  taken AS (
    SELECT s.schedule_id, lower(c.during) AS starts_at, upper(c.during) AS ends_at,
           CAST('busy' AS text) AS status, c.created_at AS updated_at
    FROM calendar c JOIN chosen s ON s.practitioner = c.practitioner AND s.codalmacen = c.codalmacen
    WHERE c.idempresa = :company
      AND c.starts_at >= CAST(:from AS timestamptz) AND c.starts_at < CAST(:to AS timestamptz)
      AND (c.expires_at IS NULL OR c.expires_at > CAST(:now AS timestamptz))
  )
  SELECT u.schedule_id || '.' || ${startKey('u.starts_at')} AS id, u.*
  FROM (SELECT * FROM free UNION ALL SELECT * FROM taken) u
) AS slots`

const SLOT_COLUMNS = ['id', 'schedule_id', 'status', 'starts_at', 'ends_at', 'updated_at']
const SCHEDULE_COLUMNS = [
  'id',
  'practitioner',
  'codalmacen',
  ...PRACTITIONER_COLUMNS.filter((c) => c !== 'id'),
]

/** Every occurrence of a parameter (its alternatives OR, the occurrences AND) on a column. */
function whereEach(q: Knex.QueryBuilder, column: string, occurrences: readonly (readonly string[])[]) {
  for (const alts of occurrences) q.whereIn(column, [...alts])
}

export class FhirRepository implements FhirStore {
  constructor(private readonly knex: Knex) {}

  private practitionersOf(companyId: number, centers: string[] | null) {
    const q = this.knex('practitioners').where('idempresa', companyId)
    if (centers)
      q.whereRaw(
        "EXISTS (SELECT 1 FROM jsonb_array_elements(working_hours) h WHERE h->>'codalmacen' = ANY (?))",
        [centers],
      )
    return q
  }

  async practitioner(companyId: number, centers: string[] | null, id: string) {
    const q = this.practitionersOf(companyId, centers).where('id', id).select(PRACTITIONER_COLUMNS).limit(1)
    const [row] = await companyRead<Record<string, unknown>>(this.knex, companyId, q)
    return row ? toPractitioner(row) : null
  }

  async practitioners(companyId: number, centers: string[] | null, s: FhirSearch) {
    const page = await fhirSearchPage<Record<string, unknown>>(
      this.knex,
      companyId,
      this.practitionersOf(companyId, centers),
      PRACTITIONER_COLUMNS,
      s,
      { updatedAt: 'updated_at', idKind: 'text' },
    )
    return { ...page, rows: page.rows.map((r) => toPractitioner(r)) }
  }

  /** Each practitioner at each center of their working hours (of these centers), with its id. */
  private schedulesOf(companyId: number, centers: string[] | null) {
    const db = this.knex
    const q = db.from(
      db.raw(
        `(SELECT ${SCHEDULE_ID} AS id, p.id AS practitioner, h.codalmacen, ${PRACTITIONER_COLUMNS.filter(
          (c) => c !== 'id',
        )
          .map((c) => `p.${c}`)
          .join(', ')}
            FROM ${AT_CENTERS} WHERE p.idempresa = ?) AS schedules`,
        [companyId],
      ),
    )
    if (centers) q.whereIn('codalmacen', centers)
    return q
  }

  private toSchedule = (row: Record<string, unknown>): ScheduleRow => ({
    id: String(row.id),
    codalmacen: String(row.codalmacen),
    practitioner: toPractitioner(row, row.practitioner),
  })

  async schedule(companyId: number, centers: string[] | null, id: string) {
    const q = this.schedulesOf(companyId, centers).where('id', id).select(SCHEDULE_COLUMNS).limit(1)
    const [row] = await companyRead<Record<string, unknown>>(this.knex, companyId, q)
    return row ? this.toSchedule(row) : null
  }

  async schedules(companyId: number, centers: string[] | null, s: FhirSearch) {
    const page = await fhirSearchPage<Record<string, unknown>>(
      this.knex,
      companyId,
      this.schedulesOf(companyId, centers),
      SCHEDULE_COLUMNS,
      s,
      { updatedAt: 'updated_at', idKind: 'text' },
    )
    return { ...page, rows: page.rows.map(this.toSchedule) }
  }

  /** The slots of the window (SLOTS), with the query's schedules, centers and statuses. */
  private slotsOf(companyId: number, q: SlotQuery) {
    const db = this.knex
    const chosen = db
      .from(db.raw(AT_CENTERS))
      .where('p.idempresa', companyId)
      .select(
        db.raw(`${SCHEDULE_ID} AS schedule_id`),
        'p.id AS practitioner',
        'h.codalmacen',
        'p.active',
        'p.time_zone',
        db.raw('make_interval(mins => p.slot_minutes) AS len'),
        'p.working_hours',
        'p.updated_at',
      )
    if (q.centers) chosen.whereIn('h.codalmacen', q.centers)
    for (const alts of q.schedules) chosen.whereRaw(`${SCHEDULE_ID} = ANY (?)`, [alts])
    const matching = db.from(
      db.raw(SLOTS, { chosen, company: companyId, from: q.from, to: q.to, now: q.now }),
    )
    whereEach(matching, 'status', q.statuses)
    return matching
  }

  async slot(companyId: number, q: SlotQuery, id: string): Promise<SlotRow | null> {
    const query = this.slotsOf(companyId, q).where('id', id).select(SLOT_COLUMNS).limit(1)
    const [row] = await companyRead<Record<string, unknown>>(this.knex, companyId, query)
    return row ? toSlot(row) : null
  }

  async slots(companyId: number, q: SlotQuery, s: FhirSearch): Promise<FhirRows<SlotRow>> {
    const matching = this.slotsOf(companyId, q)
    whereDateBounds(matching, 'starts_at', s.dates('start'))
    const page = await fhirSearchPage<Record<string, unknown>>(
      this.knex,
      companyId,
      matching,
      SLOT_COLUMNS,
      s,
      { updatedAt: 'updated_at', idKind: 'text' },
    )
    return { ...page, rows: page.rows.map(toSlot) }
  }

  /** The company's appointments (of these centers), with the name of a registered practitioner. */
  private appointmentsOf(companyId: number, centers: string[] | null) {
    const q = this.knex('appointments as a')
      .leftJoin('practitioners as pr', (j) =>
        j.on('pr.idempresa', '=', 'a.idempresa').andOn('pr.id', '=', 'a.practitioner'),
      )
      .where('a.idempresa', companyId)
    if (centers) q.whereIn('a.codalmacen', centers)
    return q
  }
  private static APPOINTMENT_SELECT = [
    ...APPOINTMENT_COLUMNS.map((c) => `a.${c}`),
    'pr.name as practitioner_name',
  ]

  async appointment(companyId: number, centers: string[] | null, id: string) {
    if (!UUID.test(id)) return null
    const q = this.appointmentsOf(companyId, centers)
      .where('a.id', id)
      .select(FhirRepository.APPOINTMENT_SELECT)
      .limit(1)
    const [row] = await companyRead<Record<string, unknown>>(this.knex, companyId, q)
    return row ? toAppointmentRow(row) : null
  }

  async appointments(companyId: number, f: AppointmentFilter, s: FhirSearch) {
    const matching = this.appointmentsOf(companyId, f.centers)
    whereEach(matching, 'a.codalmacen', f.locations)
    whereEach(
      matching,
      'a.patient_id',
      f.patients.map((alts) => alts.filter((id) => UUID.test(id))),
    )
    whereEach(matching, 'a.practitioner', f.practitioners)
    whereEach(matching, 'a.status', f.statuses)
    whereDateBounds(matching, 'a.starts_at', f.starts)
    const page = await fhirSearchPage<Record<string, unknown>>(
      this.knex,
      companyId,
      matching,
      FhirRepository.APPOINTMENT_SELECT,
      s,
      { updatedAt: 'a.updated_at', idKind: 'uuid', id: 'a.id' },
    )
    return { ...page, rows: page.rows.map(toAppointmentRow) }
  }
}
