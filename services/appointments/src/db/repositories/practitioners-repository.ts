import { NotFound } from '@clinic/platform/core'
import {
  TenantRepository,
  companyPage,
  isUniqueViolation,
  isoInstant,
  keysetPageParts,
} from '@clinic/platform/db'
import { enqueueEvents } from '@clinic/platform/events'
import type { Knex } from 'knex'
import { DuplicatePractitioner } from '../../domain/errors'
import { PRACTITIONER_KEYSET, TIME_OFF_KEYSET } from '../../domain/practitioners'
import type {
  PractitionerFilter,
  PractitionerStore,
  PractitionerTx,
  TimeOffFilter,
} from '../../domain/practitioner-store'
import { Practitioner, TimeOff, type PractitionerFields } from '../../schemas/practitioner'

const COLUMNS = Object.keys(Practitioner.properties) as Array<keyof Practitioner>
const TIME_OFF_COLUMNS = Object.keys(TimeOff.properties) as Array<keyof TimeOff>

function toPractitioner(row: Record<string, unknown>): Practitioner {
  const out: Record<string, unknown> = {}
  for (const c of COLUMNS) out[c] = isoInstant(row[c])
  return out as Practitioner
}
function toTimeOff(row: Record<string, unknown>): TimeOff {
  const out: Record<string, unknown> = {}
  for (const c of TIME_OFF_COLUMNS) out[c] = c === 'practitioner' ? row.practitioner : isoInstant(row[c])
  return out as TimeOff
}
/** jsonb columns take JSON text. */
const stored = (f: Partial<PractitionerFields>) =>
  f.working_hours === undefined ? f : { ...f, working_hours: JSON.stringify(f.working_hours) }

/** The practitioners and their time off (migration 0005), one company per statement. */
/** A registered practitioner's time zone (none: free text), in a transaction or a companyRead. */
export const practitionerZoneQuery = (db: Knex | Knex.Transaction, companyId: number, practitioner: string) =>
  db('practitioners').where({ idempresa: companyId, id: practitioner }).select('time_zone')

export class PractitionersRepository
  extends TenantRepository<PractitionerTx, Practitioner>
  implements PractitionerStore
{
  constructor(knex: Knex) {
    super(knex, { name: 'practitioners', columns: COLUMNS, toRow: toPractitioner })
  }

  protected tx(companyId: number, trx: Knex.Transaction): PractitionerTx {
    const rows = () => trx('practitioners').where('idempresa', companyId)
    return {
      findById: (id, opts) => this.rowById(trx, id, opts),
      async insert(id, fields) {
        try {
          const [row] = await trx('practitioners')
            .insert({ idempresa: companyId, id, ...stored(fields) })
            .returning(COLUMNS)
          return toPractitioner(row)
        } catch (err) {
          if (isUniqueViolation(err)) throw new DuplicatePractitioner()
          throw err
        }
      },
      async update(id, values) {
        const [row] = await rows()
          .where('id', id)
          .update({ ...stored(values), version: trx.raw('version + 1'), updated_at: trx.raw('now()') })
          .returning(COLUMNS)
        if (!row) throw new NotFound('No such practitioner')
        return toPractitioner(row)
      },
      async addTimeOff(t) {
        const [row] = await trx('time_off')
          .insert({ idempresa: companyId, ...t })
          .returning(TIME_OFF_COLUMNS)
        return toTimeOff(row)
      },
      async deleteTimeOff(practitioner, id) {
        return (await trx('time_off').where({ idempresa: companyId, practitioner, id }).delete()) > 0
      },
      publish: (events) => enqueueEvents(trx, events),
    }
  }

  list(companyId: number, f: PractitionerFilter) {
    const matching = this.knex('practitioners').where('idempresa', companyId)
    if (f.centers)
      matching.whereRaw(
        "EXISTS (SELECT 1 FROM jsonb_array_elements(working_hours) h WHERE h->>'codalmacen' = ANY (?))",
        [f.centers],
      )
    if (f.active !== undefined) matching.where('active', f.active)
    return this.page(companyId, keysetPageParts(matching, COLUMNS, PRACTITIONER_KEYSET, f))
  }

  async listTimeOff(companyId: number, f: TimeOffFilter) {
    const matching = this.knex('time_off').where({ idempresa: companyId, practitioner: f.practitioner })
    if (f.from) matching.where('ends_at', '>', f.from)
    if (f.to) matching.where('starts_at', '<', f.to)
    const { rows, total } = await companyPage<Record<string, unknown> & { id: unknown }>(
      this.knex,
      companyId,
      keysetPageParts(matching, TIME_OFF_COLUMNS, TIME_OFF_KEYSET, f),
    )
    return { rows: rows.map(toTimeOff), total }
  }
}
