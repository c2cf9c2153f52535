import { BASES } from './bases'
import { DECLARED_SCOPES, FHIR_BASE, FHIR_TYPES, ROUTED, isExportPath } from './families'

/**
 * The token scopes of DESIGN.md section 13, as packages/platform/services.json declares them (each
 * service its own, the gateway those of no one service): adding a scope is that one edit. The
 * database checks only their shape (identity migration 0006); the admin CLI refuses any other, and
 * a stored scope the list no longer has grants nothing.
 */
export const SCOPES: readonly string[] = DECLARED_SCOPES.all
export type Scope = string

/**
 * Scopes a token has only when its list names them: signing a clinical record makes it final and
 * puts the signer's name on it, and a bulk export takes a company's whole data; no token gets them
 * by having been made without a list (tokens made before they existed included).
 */
export const NAMED_ONLY: readonly Scope[] = DECLARED_SCOPES.namedOnly
/** What a token made without a list has: every scope but NAMED_ONLY. */
export const DEFAULT_SCOPES: readonly Scope[] = SCOPES.filter((s) => !NAMED_ONLY.includes(s))

const KNOWN = new Set(SCOPES)
export const isScope = (s: string): s is Scope => KNOWN.has(s)

/**
 * The gateway's route table: the one scope each operation of the API needs, by method and OpenAPI
 * path (without the base). Every operation of the merged document is here and nothing else is (a
 * unit test compares it with docs/openapi.json; the e2e suite checks the running stack through the
 * `x-scope` the merge writes from it). Writes of messaging settings (consent preferences, the
 * reminder policy) need `comms:send`. Provider callbacks and the announced (501) areas need none.
 */
export const OPERATION_SCOPES: Readonly<Record<string, Scope>> = {
  'GET /patients': 'patients:read',
  'POST /patients': 'patients:write',
  'GET /patients/{id}': 'patients:read',
  'PATCH /patients/{id}': 'patients:write',

  'GET /appointments': 'appointments:read',
  'POST /appointments': 'appointments:write',
  'GET /appointments/{id}': 'appointments:read',
  'PATCH /appointments/{id}': 'appointments:write',
  'POST /appointments/{id}/checkin': 'appointments:write',
  'GET /appointments/availability': 'appointments:read',
  'POST /appointments/holds': 'appointments:write',
  'DELETE /appointments/holds/{id}': 'appointments:write',
  'GET /appointments/series/{id}': 'appointments:read',
  'POST /appointments/series': 'appointments:write',
  'PATCH /appointments/series/{id}': 'appointments:write',
  'POST /appointments/series/{id}/cancel': 'appointments:write',
  'GET /appointments/waitlist': 'appointments:read',
  'POST /appointments/waitlist': 'appointments:write',
  'GET /appointments/waitlist/{id}': 'appointments:read',
  'DELETE /appointments/waitlist/{id}': 'appointments:write',
  'GET /practitioners': 'appointments:read',
  'POST /practitioners': 'appointments:write',
  'GET /practitioners/{id}': 'appointments:read',
  'PATCH /practitioners/{id}': 'appointments:write',
  'GET /practitioners/{id}/time-off': 'appointments:read',
  'POST /practitioners/{id}/time-off': 'appointments:write',
  'DELETE /practitioners/{id}/time-off/{time_off_id}': 'appointments:write',

  'POST /comms/send': 'comms:send',
  'GET /comms/messages': 'comms:read',
  'GET /comms/messages/{id}': 'comms:read',
  'GET /comms/preferences': 'comms:read',
  'PUT /comms/preferences': 'comms:send',
  'GET /comms/reminder-policy': 'comms:read',
  'PUT /comms/reminder-policy': 'comms:send',
  'GET /comms/reminders': 'comms:read',

  'GET /audit/events': 'audit:read',

  'GET /webhooks/endpoints': 'webhooks:manage',
  'POST /webhooks/endpoints': 'webhooks:manage',
  'GET /webhooks/endpoints/{id}': 'webhooks:manage',
  'PATCH /webhooks/endpoints/{id}': 'webhooks:manage',
  'DELETE /webhooks/endpoints/{id}': 'webhooks:manage',
  'POST /webhooks/endpoints/{id}/rotate-secret': 'webhooks:manage',
  'POST /webhooks/endpoints/{id}/test': 'webhooks:manage',
  'GET /webhooks/endpoints/{id}/deliveries': 'webhooks:manage',
  'POST /webhooks/endpoints/{id}/replay': 'webhooks:manage',
  'POST /webhooks/deliveries/{id}/retry': 'webhooks:manage',

  'GET /events': 'events:read',

  'GET /clinical/exams': 'clinical:read',
  'POST /clinical/exams': 'clinical:write',
  'GET /clinical/exams/{id}': 'clinical:read',
  'PATCH /clinical/exams/{id}': 'clinical:write',
  'POST /clinical/exams/{id}/visual-acuity': 'clinical:write',
  'DELETE /clinical/exams/{id}/visual-acuity/{finding_id}': 'clinical:write',
  'POST /clinical/exams/{id}/iop': 'clinical:write',
  'DELETE /clinical/exams/{id}/iop/{finding_id}': 'clinical:write',
  'POST /clinical/exams/{id}/refraction': 'clinical:write',
  'DELETE /clinical/exams/{id}/refraction/{finding_id}': 'clinical:write',
  'POST /clinical/exams/{id}/diagnoses': 'clinical:write',
  'DELETE /clinical/exams/{id}/diagnoses/{finding_id}': 'clinical:write',
  'POST /clinical/exams/{id}/sign': 'clinical:sign',
  'POST /clinical/exams/{id}/amendments': 'clinical:sign',
  'GET /clinical/exams/{id}/history': 'clinical:read',
  'POST /clinical/exams/{id}/prescriptions': 'clinical:write',
  'GET /clinical/prescriptions/{id}': 'clinical:read',
  'GET /clinical/patients/{patient_id}/measurements': 'clinical:read',
  'GET /documents': 'documents:read',
  'POST /documents': 'documents:write',
  'GET /documents/{id}': 'documents:read',
  'PATCH /documents/{id}': 'documents:write',
  'DELETE /documents/{id}': 'documents:write',
  'GET /documents/{id}/content': 'documents:read',

  'GET /consents/templates': 'consents:read',
  'POST /consents/templates': 'consents:write',
  'GET /consents/templates/{id}': 'consents:read',
  'GET /consents': 'consents:read',
  'POST /consents': 'consents:write',
  'GET /consents/{id}': 'consents:read',
  'POST /consents/{id}/grant': 'consents:write',
  'POST /consents/{id}/withdraw': 'consents:write',
}

/**
 * Scopes an operation needs besides its own (`x-also-scopes` in the merged document). A webhook
 * endpoint's subscription sends the events of its types to a URL its writer chooses: what
 * `GET /events` gives, so choosing the types or the URL needs `events:read` as well as
 * `webhooks:manage`, or a token without it could read every event through a webhook.
 */
export const ALSO_NEEDED: Readonly<Record<string, readonly Scope[]>> = {
  'POST /webhooks/endpoints': ['events:read'],
  'PATCH /webhooks/endpoints/{id}': ['events:read'],
}

/**
 * The scope an operation of the merged document needs (`GET /patients/{id}`): the route table's;
 * for a read under the FHIR base, its type's (services.json `fhir`, as scopesNeeded asks it; null
 * for `any`, which every token reads), so a FHIR type's scope is declared once; undefined for an
 * operation neither names (the gateway asks every scope of it).
 */
export function operationScope(key: string): Scope | null | undefined {
  if (Object.hasOwn(OPERATION_SCOPES, key)) return OPERATION_SCOPES[key]
  const [method, path = ''] = key.split(' ')
  if (method !== 'GET' || !path.startsWith(`${FHIR_BASE}/`)) return undefined
  const type = FHIR_TYPES.get(path.slice(FHIR_BASE.length + 1).split('/')[0]!)
  if (!type) return undefined
  return type.scope === 'any' ? null : type.scope
}

interface Route {
  method: string
  /** Path segments; null for a `{parameter}`. */
  segments: Array<string | null>
  /** The operation's own scope first, then ALSO_NEEDED's. */
  scopes: readonly Scope[]
}

const ROUTES: Route[] = Object.entries(OPERATION_SCOPES).map(([key, scope]) => {
  const [method, path] = key.split(' ') as [string, string]
  const segments = path
    .split('/')
    .slice(1)
    .map((s) => (/^\{[a-z_]+\}$/.test(s) ? null : s))
  const also = ALSO_NEEDED[key] ?? []
  if (!isScope(scope) || !also.every(isScope) || !path.startsWith('/'))
    throw new Error(`scopes.ts: bad entry ${key}`)
  return { method, segments, scopes: [scope, ...also] }
})
for (const key of Object.keys(ALSO_NEEDED))
  if (!(key in OPERATION_SCOPES)) throw new Error(`scopes.ts: ${key} is no operation`)

const FAMILIES = new Set(ROUTED.map((f) => f.family))
/** The bases, longest first (`/api/3` before `/api`): sorted once, not per request. */
const BASES_LONGEST_FIRST = [...BASES].sort((a, b) => b.length - a.length)

/**
 * `/api/3/patients/x?q=1` -> ['patients', 'x'] as sent and decoded as the routers decode them (null
 * for a segment that does not decode); null when the path is not under a base.
 */
function segmentsOf(url: string): { sent: string[]; decoded: Array<string | null> } | null {
  let path = url.split('?')[0]!
  const base = BASES_LONGEST_FIRST.find((b) => path.startsWith(`${b}/`))
  if (!base) return null
  path = path.slice(base.length)
  // Fastify and the services ignore one trailing slash.
  if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1)
  const sent = path.split('/').slice(1)
  const decoded = sent.map((s) => {
    try {
      return decodeURIComponent(s)
    } catch {
      return null
    }
  })
  return { sent, decoded }
}

/** Static segments win over parameters, left to right, as the routers choose. */
const moreStatic = (a: Route, b: Route) => {
  for (let i = 0; i < a.segments.length; i++)
    if ((a.segments[i] === null) !== (b.segments[i] === null)) return a.segments[i] === null ? 1 : -1
  return 0
}

/**
 * The routes by method and number of segments, the most static first (as the routers choose): a
 * request's operation is the first of its bucket it matches, found without a pass over every route.
 */
const ROUTES_BY_SHAPE = new Map<string, Route[]>()
for (const r of ROUTES) {
  const key = `${r.method} ${r.segments.length}`
  ROUTES_BY_SHAPE.set(key, [...(ROUTES_BY_SHAPE.get(key) ?? []), r])
}
for (const bucket of ROUTES_BY_SHAPE.values()) bucket.sort(moreStatic)

/**
 * The scopes a request needs: the one of its operation (and ALSO_NEEDED's); every scope for a path under a routed
 * family that is no operation of the table (it fails closed: only a token with every scope reaches
 * the service, which answers its own 404); none outside the routed families (the gateway's own
 * routes, the announced areas, unknown paths). HEAD is GET.
 */
export function scopesNeeded(method: string, url: string): readonly Scope[] {
  const path = segmentsOf(url)
  if (!path) return []
  // Bulk Data export (kick-off at any level, status, files): `fhir:export`, which only a token naming
  // it has; the kick-off then checks each type's read scope (export/kickoff.ts).
  if (isExportPath(path.decoded)) return ['fhir:export']
  // A FHIR resource type (services.json `fhir`): the scope that reads it, whatever is below it.
  if (path.sent[0] === 'fhir' && path.sent[1] === 'R4' && path.sent[2] !== undefined) {
    const type = FHIR_TYPES.get(path.decoded[2] ?? '')
    if (type) return type.scope === 'any' ? [] : [type.scope]
  }
  if (!(FAMILIES.has(path.sent[0]!) || FAMILIES.has(path.decoded[0] ?? ''))) return []
  // What the routers would make of a segment that does not decode is not guessed: every scope.
  if (path.decoded.includes(null)) return SCOPES
  const segments = path.decoded as string[]
  const m = method === 'HEAD' ? 'GET' : method
  const match = ROUTES_BY_SHAPE.get(`${m} ${segments.length}`)?.find((r) =>
    r.segments.every((s, i) => (s === null ? segments[i] !== '' : s === segments[i])),
  )
  return match ? match.scopes : SCOPES
}
