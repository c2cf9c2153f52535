import type { FhirSearch } from '@clinic/platform/core'
import { companyRead, fhirSearchPage, whereDateBounds } from '@clinic/platform/db'
import type { Knex } from 'knex'
import type { AgentMatch, AuditEventFhirStore, EntityMatch } from '../../domain/fhir-audit-event'
import { fromRow, type EventRow } from './audit-events-repository'

/** Every column of `events`, as fromRow reads them. */
const EVENT_COLUMNS = [
  'idempresa',
  'seq',
  'id',
  'occurred_at',
  'recorded_at',
  'action',
  'outcome',
  'resource_type',
  'resource_id',
  'codalmacen',
  'actor_user_id',
  'actor_username',
  'actor_token_id',
  'request_id',
  'source',
  'http',
  'changes',
  'prev_hash',
  'hash',
] as const

/** Each occurrence one condition, its alternatives or'ed; no alternative left: nothing matches. */
function whereAnyOf<T>(q: Knex.QueryBuilder, occurrences: T[][], one: (q: Knex.QueryBuilder, v: T) => void) {
  for (const alts of occurrences)
    q.where((w) => {
      w.whereRaw('false')
      for (const v of alts) w.orWhere((o) => one(o, v))
    })
}

/** The FHIR side's reads of the trail (DESIGN.md section 19): read only, one company at a time. */
export function auditEventFhirRepository(knex: Knex): AuditEventFhirStore {
  return {
    /** One read (the company's setting and the row in one statement): FHIR `AuditEvent/<id>`. */
    async findEvent(companyId, id) {
      const q = knex('events').select(EVENT_COLUMNS).where({ idempresa: companyId, id }).limit(1)
      const [row] = await companyRead<EventRow>(knex, companyId, q)
      return row ? fromRow(row) : null
    },
    /**
     * A FHIR `AuditEvent` search: the trail is append-only, so an event's last update is when it
     * was recorded (recorded_at: `_lastUpdated`, order and paging, and `date`, FHIR's `recorded`).
     */
    async fhirSearch(companyId, f, s: FhirSearch) {
      const matching = knex('events').where('idempresa', companyId)
      if (f.centers !== null) matching.whereIn('codalmacen', f.centers)
      whereAnyOf<EntityMatch>(matching, f.entities, (q, e) =>
        q.whereIn('resource_type', e.resourceTypes).where('resource_id', e.id),
      )
      whereAnyOf<AgentMatch>(matching, f.agents, (q, a) =>
        q.where(a.by === 'user' ? 'actor_user_id' : 'actor_token_id', a.id),
      )
      whereDateBounds(matching, 'recorded_at', s.dates('date'))
      const page = await fhirSearchPage<EventRow & Record<string, unknown>>(
        knex,
        companyId,
        matching,
        EVENT_COLUMNS,
        s,
        {
          updatedAt: 'recorded_at',
          idKind: 'uuid',
        },
      )
      return { ...page, rows: page.rows.map(fromRow) }
    },
  }
}
