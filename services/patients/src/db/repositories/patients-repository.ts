import {
  NotFound,
  codesIn,
  type CloudEvent,
  type FhirSearch,
  type IdempotencyKey,
  type StoredResponse,
} from '@clinic/platform/core'
import {
  TenantRepository,
  applyKeyset,
  companyInsert,
  fhirSearchPage,
  isUniqueViolation,
  whereDateBounds,
} from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import { DuplicateNationalId } from '../../domain/errors'
import { PATIENT_KEYSETS } from '../../domain/list-patients'
import type { ListFilter, PatientStore, PatientTx } from '../../domain/patient-store'
import { NATIONAL_ID_SYSTEM } from '../../domain/fhir-patient'
import { FIELD_NAMES } from '../../domain/rules'
import type { Patient, PatientFields } from '../../schemas/patient'

const TABLE = 'patients'
const COLUMNS = ['id', ...FIELD_NAMES, 'created_at', 'updated_at', 'version'] as const
const SELECT: string[] = [...COLUMNS]

type Row = Omit<Patient, 'created_at' | 'updated_at'> & { created_at: Date; updated_at: Date }

/** A row as the API shows it: no company column, instants as RFC 3339 UTC. */
function toPatient(row: Row): Patient {
  const out = {} as Record<string, unknown>
  for (const c of COLUMNS) out[c] = row[c]
  out.created_at = row.created_at.toISOString()
  out.updated_at = row.updated_at.toISOString()
  return out as Patient
}

/** jsonb columns go in as JSON text; knex would not serialize nested objects on its own here. */
function toColumns(fields: Partial<PatientFields>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...fields }
  for (const k of ['address', 'guardian'] as const)
    if (k in fields) out[k] = fields[k] === null ? null : JSON.stringify(fields[k])
  return out
}

const escapeLike = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`)

async function translate<T>(work: Promise<T>): Promise<T> {
  try {
    return await work
  } catch (err) {
    if (isUniqueViolation(err, 'patients_national_id')) throw new DuplicateNationalId()
    throw err
  }
}

/**
 * The only code that touches the `patients` schema. Every method takes the company and every
 * statement filters by it; each transaction also sets `app.idempresa`, which the row-level
 * security policies check, so a statement that forgot the filter would still see one company.
 */
export class PatientsRepository extends TenantRepository<PatientTx, Patient> implements PatientStore {
  constructor(knex: Knex) {
    super(knex, { name: TABLE, columns: SELECT, toRow: (row) => toPatient(row as unknown as Row) })
  }

  protected tx(companyId: number, trx: Knex.Transaction): PatientTx {
    const patients = () => trx<Row>(TABLE).where('idempresa', companyId)
    return {
      findById: (id, opts) => this.rowById(trx, id, opts),
      async insert(id, fields) {
        const [row] = await translate(
          trx(TABLE)
            .insert({ idempresa: companyId, id, ...toColumns(fields) })
            .returning(SELECT),
        )
        return toPatient(row as Row)
      },
      async update(id, changes) {
        const [row] = await translate(
          patients()
            .where('id', id)
            .update({
              ...toColumns(changes),
              version: trx.raw('version + 1'),
              updated_at: trx.raw(`date_trunc('milliseconds', now())`),
            } as Record<string, unknown>)
            .returning(SELECT),
        )
        if (!row) throw new NotFound('No such patient')
        return toPatient(row as unknown as Row)
      },
      publish: (events) => enqueueEvents(trx, events),
    }
  }

  /**
   * Without an Idempotency-Key: one statement (companyInsert: the setting, the row and its outbox
   * rows), the create's only round trip. With one: a transaction that also keeps the key's row.
   */
  async create(
    companyId: number,
    idempotency: IdempotencyKey,
    p: { id: string; fields: PatientFields; events: CloudEvent[] },
  ): Promise<StoredResponse<Patient>> {
    if (idempotency.key === undefined) {
      const row = await translate(
        companyInsert<Row>(this.knex, companyId, {
          table: TABLE,
          row: { id: p.id, ...toColumns(p.fields) },
          returning: SELECT,
          events: p.events,
        }),
      )
      return { body: toPatient(row) }
    }
    return this.idempotent(companyId, idempotency, async (tx) => {
      const body = await tx.insert(p.id, p.fields)
      await tx.publish(p.events)
      return { body }
    })
  }

  /**
   * One page and the exact total in one statement (one snapshot, one round trip: companyPage).
   * Without `q` the total is the sum of the counter rows of the visible centers (a handful of rows,
   * whatever the company's size); with `q` it is counted through the trigram index
   * (search_patients, see migration 0004).
   */
  async list(companyId: number, f: ListFilter): Promise<{ rows: Patient[]; total: number }> {
    const db = this.knex
    // With q, the rows come from search_patients() (same columns, trigram index); else the table.
    const source = f.q
      ? db.from(db.raw(`search_patients(?, ?) AS ${TABLE}`, [`%${escapeLike(f.q)}%`, f.q]))
      : db.from(TABLE)
    const matching = source.where('idempresa', companyId)
    if (f.centers) matching.whereIn('codalmacen', f.centers)

    const page = matching.clone().select(SELECT)
    const orderBy = applyKeyset(page, PATIENT_KEYSETS[f.sort], f.after)
    page.offset(f.offset).limit(f.limit)

    let total: Knex.QueryBuilder
    if (f.q) total = matching.clone().count({ n: '*' })
    else {
      total = db('patient_counts').where('idempresa', companyId).select(db.raw('coalesce(sum(n), 0) AS n'))
      if (f.centers) total.whereIn('codalmacen', f.centers)
    }
    return this.page(companyId, { page, total, orderBy })
  }

  /**
   * A FHIR search: `identifier` (our system or none), `name` and `family` (start of a name, any
   * case), `birthdate`; each parameter's alternatives OR, the parameters AND. The shared part
   * (`_id`, `_lastUpdated`, order, cursor, total) is fhirSearchPage's.
   */
  async fhirSearch(companyId: number, centers: string[] | null, s: FhirSearch) {
    const db = this.knex
    const matching = db(TABLE).where('idempresa', companyId)
    if (centers) matching.whereIn('codalmacen', centers)
    for (const alts of s.tokens('identifier'))
      matching.whereIn('national_id', codesIn(alts, NATIONAL_ID_SYSTEM))
    const startsWith = (columns: string[], alts: string[]) =>
      matching.where((q) => {
        for (const v of alts)
          for (const c of columns) q.orWhereRaw(`lower(${c}) LIKE ?`, [`${escapeLike(v.toLowerCase())}%`])
      })
    for (const alts of s.strings('name')) startsWith(['first_name', 'last_name'], alts)
    for (const alts of s.strings('family')) startsWith(['last_name'], alts)
    whereDateBounds(matching, 'birth_date', s.dates('birthdate'), '::timestamptz::date')
    // No parameter of its own: the total is the centers' counter rows, as the native list's.
    const own =
      ['identifier', 'name', 'family'].some((n) => s.strings(n).length) || s.dates('birthdate').length
    const counters = db('patient_counts')
      .where('idempresa', companyId)
      .select(db.raw('coalesce(sum(n), 0) AS n'))
    if (centers) counters.whereIn('codalmacen', centers)
    const page = await fhirSearchPage<Row>(db, companyId, matching, SELECT, s, {
      updatedAt: 'updated_at',
      idKind: 'uuid',
      ...(own ? {} : { unfilteredTotal: counters }),
    })
    return { ...page, rows: page.rows.map(toPatient) }
  }
}
