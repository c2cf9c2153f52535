import {
  type FhirRows,
  fhirPageOf,
  centerVisible,
  isFhirType,
  isUuid,
  visibleCenters,
  type Ctx,
  type FhirPage,
  type FhirSearch,
  type FhirType,
} from '@clinic/platform/core'
import type {
  AuditEvent as FhirAuditEvent,
  AuditEventAgent,
  AuditEventEntity,
  AuditEventEntityDetail,
  Coding,
} from '@medplum/fhirtypes'
import type { AuditEvent } from './audit-event'

/** An `entity` alternative as the store matches it: any of these resource types, with this id. */
export interface EntityMatch {
  resourceTypes: string[]
  id: string
}
/** An `agent` alternative as the store matches it: the actor's user id or token id. */
export interface AgentMatch {
  by: 'user' | 'token'
  id: string
}

/** What the FHIR side reads of the trail (audit-events-repository.ts); read only, as all of it. */
export interface AuditEventFhirStore {
  /** The company's event `id` (a UUID), whatever its center, or null. */
  findEvent(companyId: number, id: string): Promise<AuditEvent | null>
  /**
   * Within `centers` (null: every center and events without one); each entry of `entities` and
   * `agents` is one occurrence (all must hold) of alternatives (any may match); `date` bounds on
   * recorded_at; the rest (`_id`, `_lastUpdated`, order, cursor, total) fhirSearchPage's.
   */
  fhirSearch(
    companyId: number,
    f: { centers: string[] | null; entities: EntityMatch[][]; agents: AgentMatch[][] },
    s: FhirSearch,
  ): Promise<FhirRows<AuditEvent>>
}

const AUDIT_EVENT_TYPE = 'http://terminology.hl7.org/CodeSystem/audit-event-type'
const RESTFUL = 'http://hl7.org/fhir/restful-interaction'
const DCM = 'http://dicom.nema.org/resources/ontology/DCM'
const LIFECYCLE = 'http://terminology.hl7.org/CodeSystem/iso-21089-lifecycle'
const RESOURCE_TYPES = 'http://hl7.org/fhir/resource-types'
const ENTITY_TYPE = 'http://terminology.hl7.org/CodeSystem/audit-entity-type'
/** Our own event types (`patient.created`, `http.request` ...): the native `action`, kept as a subtype. */
export const EVENT_TYPE_SYSTEM = 'https://clinic.example/fhir/CodeSystem/event-type'
/** The identity service's user ids: who acted (not a Practitioner resource: no such read). */
export const USER_SYSTEM = 'https://clinic.example/fhir/sid/user'

/**
 * What the trail calls a resource (`resource_type`) -> the FHIR type with the same id, when there
 * is one: the gateway's names of FHIR reads (`vision_prescription`, the type in snake case) and
 * the path families' and event contracts' names that differ from them.
 */
const ALIASES: Record<string, FhirType> = {
  message: 'Communication',
  clinical_exam: 'Encounter',
  clinical_prescription: 'VisionPrescription',
  document: 'DocumentReference',
}
export function fhirTypeOf(resourceType: string | null): FhirType | null {
  if (resourceType === null) return null
  if (Object.hasOwn(ALIASES, resourceType)) return ALIASES[resourceType]!
  const pascal = resourceType.replace(/(^|_)([a-z])/g, (_m, _s, c: string) => c.toUpperCase())
  return /^[a-z]+(_[a-z]+)*$/.test(resourceType) && isFhirType(pascal) ? pascal : null
}
/** The trail's names of a FHIR type: its snake case and the aliases of it. */
export function resourceTypesOf(type: string): string[] {
  if (!isFhirType(type)) return []
  const snake = type.replace(/(?<=[a-z])(?=[A-Z])/g, '_').toLowerCase()
  return [snake, ...Object.keys(ALIASES).filter((k) => ALIASES[k] === type)]
}

type Action = NonNullable<FhirAuditEvent['action']>
interface Kind {
  type: Coding
  action: Action
  interaction?: Coding
}

const rest: Coding = { system: AUDIT_EVENT_TYPE, code: 'rest', display: 'RESTful Operation' }
const restful = (code: string): Coding => ({ system: RESTFUL, code, display: code })
const lifecycle = (code: string, display: string): Coding => ({ system: LIFECYCLE, code, display })

/**
 * What kind of event it is. A request through the gateway is a RESTful operation, its interaction
 * from the method (a GET naming a resource id a read, else a search); a refused authentication a
 * DICOM User Authentication / Login; a domain event a record lifecycle event (ISO 21089) by its
 * verb: created/queued/issued originate, deleted destroy, viewed access, sent transmit, any other
 * change of a record's state amend.
 */
export function kindOf(e: AuditEvent): Kind {
  if (e.action === 'http.refused')
    return {
      type: { system: DCM, code: '110114', display: 'User Authentication' },
      action: 'E',
      interaction: { system: DCM, code: '110122', display: 'Login' },
    }
  if (e.http) {
    switch (e.http.method) {
      case 'GET':
      case 'HEAD':
        return { type: rest, action: 'R', interaction: restful(e.resource_id ? 'read' : 'search-type') }
      case 'POST':
        return e.resource_id
          ? { type: rest, action: 'E', interaction: restful('operation') }
          : { type: rest, action: 'C', interaction: restful('create') }
      case 'PUT':
        return { type: rest, action: 'U', interaction: restful('update') }
      case 'PATCH':
        return { type: rest, action: 'U', interaction: restful('patch') }
      case 'DELETE':
        return { type: rest, action: 'D', interaction: restful('delete') }
      default:
        return { type: rest, action: 'E' }
    }
  }
  const verb = e.action.split('.').at(-1) ?? ''
  if (['created', 'queued', 'issued', 'scheduled'].includes(verb))
    return { type: lifecycle('originate', 'Originate/Retain Record Lifecycle Event'), action: 'C' }
  if (verb === 'deleted')
    return { type: lifecycle('destroy', 'Destroy/Delete Record Lifecycle Event'), action: 'D' }
  if (verb === 'viewed')
    return { type: lifecycle('access', 'Access/View Record Lifecycle Event'), action: 'R' }
  if (verb === 'sent') return { type: lifecycle('transmit', 'Transmit Record Lifecycle Event'), action: 'E' }
  return { type: lifecycle('amend', 'Amend (Update) Record Lifecycle Event'), action: 'U' }
}

/** 0 success; a failure 4 (minor: a refusal, a 4xx, a failed delivery) or 8 (serious: a 5xx). */
function outcomeOf(e: AuditEvent): NonNullable<FhirAuditEvent['outcome']> {
  if (e.outcome === 'success') return '0'
  return e.http && e.http.status >= 500 ? '8' : '4'
}

/** Who: the user (by id, with the name) and the token (altId), else the service that recorded it. */
function agentOf(e: AuditEvent): AuditEventAgent {
  const { user_id, username, token_id } = e.actor
  const who: AuditEventAgent['who'] = user_id
    ? {
        type: 'Practitioner',
        identifier: { system: USER_SYSTEM, value: user_id },
        ...(username ? { display: username } : {}),
      }
    : { display: username ?? e.source }
  return {
    who,
    ...(username ? { name: username } : {}),
    ...(token_id ? { altId: token_id } : {}),
    requestor: true,
    ...(e.http?.ip ? { network: { address: e.http.ip, type: '2' as const } } : {}),
  }
}

/** What: the resource (a reference when it is a FHIR type, else its id), changed fields, the request. */
function entityOf(e: AuditEvent): AuditEventEntity | null {
  const fhirType = fhirTypeOf(e.resource_type)
  const detail: AuditEventEntityDetail[] = [
    ...(e.changes?.length ? [{ type: 'changes', valueString: e.changes.join(',') }] : []),
    ...(e.http
      ? [
          { type: 'http.method', valueString: e.http.method },
          { type: 'http.path', valueString: e.http.path },
          { type: 'http.status', valueString: String(e.http.status) },
        ].filter((d) => d.valueString !== '')
      : []),
    ...(e.request_id ? [{ type: 'request_id', valueString: e.request_id }] : []),
  ]
  if (!e.resource_type && !e.resource_id && !detail.length) return null
  const what =
    e.resource_id === null
      ? undefined
      : fhirType
        ? { reference: `${fhirType}/${e.resource_id}` }
        : { identifier: { type: { text: e.resource_type ?? 'resource' }, value: e.resource_id } }
  return {
    ...(what ? { what } : {}),
    type: fhirType
      ? { system: RESOURCE_TYPES, code: fhirType, display: fhirType }
      : { system: ENTITY_TYPE, code: '2', display: 'System Object' },
    ...(detail.length ? { detail } : {}),
  }
}

/**
 * An event of the trail as FHIR R4 `AuditEvent` (README "FHIR"): what the native API shows but
 * its place in the hash chain (seq, prev_hash, hash: `GET /audit/events`). Never changes: version 1,
 * last updated when recorded.
 */
export function toFhirAuditEvent(e: AuditEvent): FhirAuditEvent {
  const kind = kindOf(e)
  const entity = entityOf(e)
  return {
    resourceType: 'AuditEvent',
    id: e.id,
    meta: { versionId: '1', lastUpdated: e.recorded_at },
    type: kind.type,
    subtype: [...(kind.interaction ? [kind.interaction] : []), { system: EVENT_TYPE_SYSTEM, code: e.action }],
    action: kind.action,
    period: { start: e.occurred_at, end: e.occurred_at },
    recorded: e.recorded_at,
    outcome: outcomeOf(e),
    ...(e.http ? { outcomeDesc: `HTTP ${e.http.status}` } : {}),
    agent: [agentOf(e)],
    source: { ...(e.codalmacen ? { site: e.codalmacen } : {}), observer: { display: e.source } },
    ...(entity ? { entity: [entity] } : {}),
  }
}

/** `GET /fhir/R4/AuditEvent/<id>`: an event of the company within the token's centers, else null. */
export async function readFhirAuditEvent(
  ctx: Ctx,
  store: AuditEventFhirStore,
  id: string,
): Promise<FhirAuditEvent | null> {
  if (!isUuid(id)) return null
  const e = await store.findEvent(ctx.auth.companyId, id)
  return e && centerVisible(visibleCenters(ctx.auth, undefined), e.codalmacen) ? toFhirAuditEvent(e) : null
}

/**
 * `GET /fhir/R4/AuditEvent?...`: the company's trail within the token's centers (as the native
 * list). `entity=<Type>/<id>`: events about that resource under any of the trail's names of the
 * type; `agent=Practitioner/<user id>` or `Device/<token id>`: the actor (another type: none).
 */
export async function searchFhirAuditEvents(
  ctx: Ctx,
  store: AuditEventFhirStore,
  search: FhirSearch,
): Promise<FhirPage<FhirAuditEvent>> {
  const entities = search
    .references('entity')
    .map((alts) => alts.map((r) => ({ resourceTypes: resourceTypesOf(r.type), id: r.id })))
  const agents = search
    .references('agent')
    .map((alts) =>
      alts.flatMap((r): AgentMatch[] =>
        r.type === 'Practitioner'
          ? [{ by: 'user', id: r.id }]
          : r.type === 'Device'
            ? [{ by: 'token', id: r.id }]
            : [],
      ),
    )
  const page = await store.fhirSearch(
    ctx.auth.companyId,
    { centers: visibleCenters(ctx.auth, undefined), entities, agents },
    search,
  )
  return fhirPageOf(page, toFhirAuditEvent)
}
