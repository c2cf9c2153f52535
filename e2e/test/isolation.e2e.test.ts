import { randomUUID } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { waitFor } from '@clinic/platform/testing'
import { call, makeTenant, tokenFor, type Answer, type Tenant } from '../src/client'
import {
  apiOperations,
  collectionOf,
  deref,
  fetchDocument,
  pathParams,
  type OpenApi,
  type Operation,
  type Schema,
} from '../src/operations'

/**
 * Tenant and center isolation (DESIGN.md sections 2-3, 10-12) over every operation of the served
 * document (e2e/src/operations.ts). Each company's records ("worlds") are made through the API
 * from the document itself: every create (a POST answering a record) and setting (a PUT) with a
 * body filled from its schema, the values a schema cannot give (a real patient id, a valid slot,
 * the receiver's URL) from FIXTURES by property name. Three sweeps, each over every operation:
 *
 * - company A with company B's ids in paths, bodies and filters: every id of B is 404 (a body's
 *   reference 422, or no reference at all), nothing of B appears in any answer, and B's records,
 *   totals and audit actors are unchanged afterwards;
 * - a token of A limited to center ALM2 on A's records of center ALM1: ids of ALM1 records are 404,
 *   bodies naming ALM1 are 403 center_forbidden, `?codalmacen=ALM1` is 403 on every operation, lists
 *   show nothing of ALM1; no id or text of an ALM1 record the request did not send appears in any
 *   answer; ALM1's records, totals and audit actors are unchanged afterwards;
 * - a token of A with every center asking `?codalmacen=ALM2` on every operation on one record (a
 *   path with an id) of ALM1: 404, ALM1 unchanged afterwards, and every such read answers 200 under
 *   `?codalmacen=ALM1`.
 *
 * Beside the sweeps, the rules no schema can tell (RULES below: conflicts that name no one, consent
 * and the reminder policy per company, a webhook endpoint of every center), companies' calendars,
 * and A's list totals against what A created. An operation the sweeps cannot fill (a path
 * parameter of a collection no create makes, a create that never becomes possible) fails the
 * suite, naming it.
 */

const TIMEOUT_MS = 30_000
/** A Monday: the worlds' practitioners work Mondays 08:00-14:00 UTC, in 30-minute slots. */
const DAY = '2031-09-01'
const NEXT_DAY = '2031-09-02'
const at = (hour: number, minute = 0) =>
  new Date(Date.UTC(2031, 8, 1, hour, minute)).toISOString().replace('.000Z', 'Z')
const slotAt = (hour: number, minute = 0) => ({ starts_at: at(hour, minute), ends_at: at(hour, minute + 30) })
/** Every slot of the practitioners' Monday (start times, UTC). */
const GRID = Array.from({ length: 12 }, (_, i) => at(8, 30 * i).slice(11, 16))
const hoursAt = (codalmacen: string) => [{ codalmacen, weekday: 1, start: '08:00', end: '14:00' }]
/**
 * Polls of a tenant's token every 250 ms: a token may make RATE_LIMIT_PER_MINUTE (600) requests a
 * minute, and waitFor's default 50 ms would spend them.
 */
const POLL_MS = 250

/** A record a body refers to by this property, and the problem a reference outside the company is. */
const REFERENCES: Record<string, { collection: string; unknown?: string }> = {
  patient_id: { collection: '/patients', unknown: 'unknown_patient' },
  appointment_id: { collection: '/appointments', unknown: 'unknown_appointment' },
  // Another's hold is no hold: the booking goes ahead as if none was named.
  hold_id: { collection: '/appointments/holds' },
  practitioner: { collection: '/practitioners' },
  // A consent names its template by key: the world's own template's (made first).
  template_key: { collection: '/consents/templates', unknown: 'unknown_template' },
}
/**
 * Creates that need a step on what they refer to first, once the creates listed in `after` are
 * made: a prescription is issued from a signed exam, and a signed exam takes no more findings.
 */
const FINDINGS_OF_EXAM = ['visual-acuity', 'iop', 'refraction', 'diagnoses'].map(
  (k) => `/clinical/exams/{id}/${k}`,
)
const PREPARE: Record<string, { after: string[]; first: (w: World) => Promise<unknown> }> = {
  '/clinical/exams/{id}/prescriptions': {
    after: FINDINGS_OF_EXAM,
    first: (w) => send('post', `/clinical/exams/${w.ids['/clinical/exams']}/sign`, w.token),
  },
}
/** What a reference stands for when it is not the record's id: a template's key. */
const REFERENCE_VALUES: Record<string, (w: World) => unknown> = {
  template_key: (w) => w.sent['/consents/templates']?.key,
}
/** The value a body or filter names a world's record of `name` by. */
const referenceTo = (name: string, w: World) =>
  REFERENCE_VALUES[name] ? REFERENCE_VALUES[name](w) : w.ids[REFERENCES[name]!.collection]
/** Properties whose value is a center: bodies "at ALM1" set these. */
const CENTERED = ['codalmacen', 'working_hours']

interface World {
  company: Tenant
  token: string
  center: string
  /** Text in every free-text field of the world's records, and nowhere else. */
  marker: string
  /** One record per collection (`/patients`, `/practitioners/{id}/time-off`, ...), by its path. */
  ids: Record<string, string>
  /** The body each create and setting sent, by collection or path. */
  sent: Record<string, Record<string, unknown>>
  /** The opted-out consent address (consent is per company and address). */
  address: string
  offsets: string[]
  /** Slots the world's creates took on DAY (hh:mm UTC). */
  taken: string[]
}

let doc: OpenApi
let ops: Operation[]
let hook: string
let receiver: Server
let serial = 0
const unique = () => (++serial).toString(36)
/**
 * Slots for the sweeps' own bookings and holds: the next free half hour of the practitioners'
 * Mondays after DAY (bookings of a registered practitioner must be within its hours).
 */
let sweepSlots = 0
const sweepSlot = () => {
  const n = sweepSlots++
  const start = Date.UTC(2031, 8, 8 + 7 * Math.floor(n / 12), 8, 30 * (n % 12))
  const iso = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z')
  return { starts_at: iso(start), ends_at: iso(start + 1800_000) }
}

/** The values a schema cannot give, by property name; undefined: the schema's. */
function fixture(name: string, w: World, o: { slot?: { starts_at: string; ends_at: string } }) {
  const ref = REFERENCES[name]
  if (ref) return referenceTo(name, w)
  const values: Record<string, unknown> = {
    codalmacen: w.center,
    working_hours: hoursAt(w.center),
    time_zone: 'UTC',
    slot_minutes: 30,
    starts_at: o.slot?.starts_at,
    ends_at: o.slot?.ends_at,
    from: `${DAY}T00:00:00Z`,
    to: `${NEXT_DAY}T00:00:00Z`,
    url: hook,
    event_types: ['*'],
    since: new Date(Date.now() - 3600_000).toISOString(),
    enabled: true,
    offsets: w.offsets,
    address: w.address,
    channel: 'email',
    opted_out: true,
    // Clinical findings: an acuity as entered in the first notation (Snellen, metres), a diagnosis
    // code of the first system (WHO ICD-10, which has H40.1 but not ICD-10-CM's H40.11), the
    // instants of an exam and a pressure reading, and a prescription valid until a date to come.
    // A recurring series of one occurrence, at the slot (a wall time in the practitioners' UTC);
    // a waitlist entry's window around DAY.
    start: o.slot?.starts_at.slice(0, 16),
    rrule: 'FREQ=DAILY;COUNT=1',
    occurrence: 1,
    earliest: `${DAY}T00:00:00Z`,
    latest: '2031-12-31T00:00:00Z',
    value: '6/9',
    code: 'H40.1',
    performed_at: `${DAY}T09:00:00Z`,
    measured_at: `${DAY}T09:15:00Z`,
    valid_until: NEXT_DAY,
    // A consent template's key, the world's own; a consent's expiry; no link sent (comms' part).
    key: `${w.marker.toLowerCase()}-consent`,
    expires_at: new Date(Date.now() + 7 * 86_400_000).toISOString(),
    send: false,
  }
  return values[name]
}

/** A string the schema accepts: the world's marker where free text goes, else its example. */
function text(s: Schema, w: World): string | undefined {
  if (s.format === 'date') return '1990-01-01'
  if (s.format === 'email') return `${w.marker.toLowerCase()}.${unique()}@example.test`
  if (s.format === 'uri') return hook
  const fits = (v: string) =>
    (!s.pattern || new RegExp(s.pattern, 'u').test(v)) &&
    v.length >= (s.minLength ?? 0) &&
    v.length <= (s.maxLength ?? Infinity)
  const candidates = [
    `${w.marker} ${unique()}`,
    `${w.marker.toLowerCase()}-${unique()}`,
    ...(s.examples ?? []).map(String),
  ]
  return candidates.find(fits)
}

/** A fixture applies where its value is of the property's type (a consent's address, not a patient's). */
const fitsType = (v: unknown, s: Schema) => {
  const types = s.anyOf ? s.anyOf.flatMap((x) => x.type ?? []) : [s.type ?? []].flat()
  const t = Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v === 'object' ? 'object' : typeof v
  return !types.length || types.includes(t) || (t === 'number' && types.includes('integer'))
}

/**
 * A valid value of `schema`: required properties, free text (with the marker) and e-mail
 * addresses, each from FIXTURES where it names one. Throws naming what it cannot fill.
 */
function fill(raw: Schema, w: World, o: { slot?: { starts_at: string; ends_at: string } }, at = ''): unknown {
  const s = deref(raw, doc)
  if (s.anyOf?.length) return fill(s.anyOf[0]!, w, o, at)
  if (s.enum?.length) return s.enum.find((v) => v !== null)
  const type = (Array.isArray(s.type) ? s.type : [s.type ?? (s.properties ? 'object' : 'string')]).find(
    (t) => t !== 'null',
  )
  if (type === 'object') {
    const out: Record<string, unknown> = {}
    for (const [name, p] of Object.entries(s.properties ?? {})) {
      const given = fixture(name, w, o)
      const ps = deref(p, doc)
      const required = s.required?.includes(name)
      if (given !== undefined && fitsType(given, ps) && (required || !REFERENCES[name])) out[name] = given
      else if (required) out[name] = fill(ps, w, o, `${at}/${name}`)
      else if (!REFERENCES[name] && !ps.enum && (ps.type === 'string' || ps.type?.includes('string')))
        if (text(ps, w) !== undefined && !ps.anyOf) out[name] = text(ps, w)
    }
    return out
  }
  if (type === 'array')
    return Array.from({ length: Math.max(1, s.minItems ?? 1) }, () => fill(s.items ?? {}, w, o, at))
  if (type === 'integer' || type === 'number') return s.minimum ?? 1
  if (type === 'boolean') return false
  const v = text(s, w)
  if (v === undefined)
    throw new Error(`no value for ${at} (${JSON.stringify(s).slice(0, 120)}): add a fixture`)
  return v
}

/** A request body for `op` from the world's fixtures (undefined when the operation takes none). */
const bodyOf = (op: Operation, w: World, slot = sweepSlot()) =>
  op.body ? (fill(op.body, w, { slot }) as Record<string, unknown>) : undefined

/** The 2xx answer of an operation, and its schema name. */
const success = (op: Operation) => {
  const o = doc.paths[op.path]![op.method]! as {
    responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>
  }
  const [status, r] = Object.entries(o.responses ?? {}).find(([c]) => c.startsWith('2')) ?? []
  return { status: Number(status), ref: r?.content?.['application/json']?.schema?.$ref }
}

/**
 * The collection a create's record is read in: the path of the read-one answering the same
 * schema (`POST /comms/send` makes a message of `/comms/messages`), else the create's own path.
 * Undefined for a POST that makes nothing (an action on a record).
 */
function createdIn(op: Operation): string | undefined {
  if (op.method !== 'post') return undefined
  const { status, ref } = success(op)
  const reader = ops.find(
    (r) => r.method === 'get' && /\{\w+\}$/.test(r.path) && ref && success(r).ref === ref,
  )
  if (status === 201) return reader ? collectionOf(reader.path, pathParams(reader.path).at(-1)!) : op.path
  return status === 202 && reader ? collectionOf(reader.path, pathParams(reader.path).at(-1)!) : undefined
}

/** The operation's path with the world's ids in it; null when a parameter names nothing of it. */
function urlOf(path: string, w: World, ids: Record<string, string> = w.ids): string | null {
  let url = path
  for (const p of pathParams(path)) {
    const id = ids[collectionOf(path, p)]
    if (!id) return null
    url = url.replace(`{${p}}`, encodeURIComponent(id))
  }
  return url
}

/** The URL with these query parameters set (a parameter it has already takes the new value). */
const withQuery = (url: string, q: Record<string, unknown>) => {
  const [path, query] = url.split('?') as [string, string | undefined]
  const params = new URLSearchParams(query)
  for (const [k, v] of Object.entries(q)) if (v !== undefined) params.set(k, String(v))
  const qs = params.toString()
  return qs ? `${path}?${qs}` : path
}
/** The query a read needs (its required parameters, from the fixtures) and the longest page. */
function queryOf(op: Operation, w: World, extra: Record<string, unknown> = {}) {
  const q: Record<string, unknown> = {}
  for (const p of op.params.filter((p) => p.in === 'query')) {
    if (p.required) q[p.name] = fixture(p.name, w, {}) ?? fill(p.schema ?? {}, w, {})
    if (p.name === 'limit') q.limit = Math.min(100, p.schema?.maximum ?? 100)
  }
  const declared = new Set(op.params.map((p) => p.name))
  return Object.fromEntries(Object.entries({ ...q, ...extra }).filter(([k]) => declared.has(k)))
}

/** One request; what it creates for company A goes in the ledger. */
async function send(method: string, url: string, token: string, body?: unknown) {
  const res = await call(method.toUpperCase(), url, {
    token,
    body,
    headers: method === 'post' ? { 'idempotency-key': randomUUID() } : {},
    timeoutMs: TIMEOUT_MS,
  })
  const op = ops.find(
    (x) => x.method === method && new RegExp(`^${x.path.replace(/\{\w+\}/g, '[^/]+')}(\\?|$)`).test(url),
  )
  if (op) note(token, op, res)
  return res
}

/** A's creates that succeeded, by collection: id -> center. A's totals must be exactly these. */
const ledger = new Map<string, Map<string, string | null>>()
/** Every token of company A (its own, its worlds', the limited one): what they create is A's. */
const tokensOfA = new Set<string>()
function note(token: string, op: Operation, res: Answer) {
  const collection = createdIn(op)
  if (!collection || res.status >= 300 || !tokensOfA.has(token)) return
  const r = res.body as {
    id: string
    codalmacen?: string | null
    working_hours?: Array<{ codalmacen: string }>
  }
  // A message is at its patient's center, a practitioner at the centers of its hours.
  const center = r.codalmacen ?? r.working_hours?.[0]?.codalmacen ?? null
  const add = (c: string, id: string, at: string | null) => {
    if (!ledger.has(c)) ledger.set(c, new Map())
    ledger.get(c)!.set(id, at)
  }
  add(collection, r.id, center)
  // A series books its occurrences: each an appointment A made.
  const occurrences = (res.body as { occurrences?: Array<{ id: string; codalmacen: string }> }).occurrences
  for (const o of occurrences ?? []) add('/appointments', o.id, o.codalmacen)
}

/**
 * A world of `company` at `center`, made through the API: every create and setting of the
 * document, in rounds, each once what it refers to exists.
 */
async function populate(company: Tenant, center: string, offsets: string[]): Promise<World> {
  const marker = `Iso${randomUUID().slice(0, 8)}`
  // A token of the world's own: its snapshots, polled until settled, spend no other token's rate.
  const token = await tokenFor(company)
  if (company === a) tokensOfA.add(token)
  const w: World = {
    company,
    token,
    center,
    marker,
    ids: {},
    sent: {},
    address: `consent-${randomUUID().slice(0, 8)}@example.test`,
    offsets,
    taken: [],
  }
  const makes = ops.filter((o) => createdIn(o) || (o.method === 'put' && !o.path.includes('{')))
  let hour = 9
  for (let pending = makes; pending.length;) {
    const needs = (o: Operation) => [
      ...pathParams(o.path).map((p) => collectionOf(o.path, p)),
      ...Object.keys(REFERENCES)
        .filter((n) => o.body && deref(o.body, doc).required?.includes(n))
        .map((n) => REFERENCES[n]!.collection),
      ...(PREPARE[o.path]?.after ?? []),
    ]
    const ready = pending.filter((o) => needs(o).every((c) => w.ids[c]))
    if (!ready.length)
      throw new Error(
        `cannot make a record for ${pending.map((o) => `${o.method} ${o.path}`).join(', ')}: it needs ${[
          ...new Set(pending.flatMap(needs).filter((c) => !w.ids[c])),
        ].join(', ')}`,
      )
    pending = pending.filter((o) => !ready.includes(o))
    await Promise.all(
      ready
        .sort((x, y) => x.path.localeCompare(y.path))
        .map((o) => {
          // Each create that takes time on the calendar takes its own hour of DAY.
          const timed = JSON.stringify(o.body ? (deref(o.body, doc).properties ?? {}) : {}).includes(
            '"starts_at"',
          )
          const slot = timed ? slotAt(hour++) : undefined
          if (slot) w.taken.push(slot.starts_at.slice(11, 16))
          return { o, body: o.body ? (fill(o.body, w, { slot }) as Record<string, unknown>) : undefined }
        })
        .map(async ({ o, body }) => {
          await PREPARE[o.path]?.first(w)
          const res = await send(o.method, urlOf(o.path, w)!, w.token, body)
          if (res.status >= 300)
            throw new Error(`setup ${o.method} ${o.path}: ${res.status} ${JSON.stringify(res.body)}`)
          const collection = createdIn(o) ?? o.path
          w.sent[collection] = body ?? {}
          const id = (res.body as { id?: string }).id
          if (id) w.ids[collection] = id
        }),
    )
  }
  // Collections no create makes (a webhook delivery): a settled row of a list of that name.
  const wanted = new Set(ops.flatMap((o) => pathParams(o.path).map((p) => collectionOf(o.path, p))))
  for (const c of [...wanted].filter((c) => !w.ids[c])) {
    const name = c.split('/').pop()!
    const list = ops.find((o) => o.list && o.path.endsWith(`/${name}`) && urlOf(o.path, w))
    if (!list) throw new Error(`no record of ${c} for the operations under it: no create or list makes one`)
    w.ids[c] = await waitFor(
      async () => {
        const rows = (await send('get', urlOf(list.path, w)!, w.token)).body?.data as
          Array<{ id: string; status?: string }> | undefined
        return rows?.find((r) => r.status !== 'pending')?.id
      },
      { what: `a settled row of ${list.path}`, timeoutMs: 180_000, intervalMs: POLL_MS },
    )
  }
  return w
}

/** Every `id` in an answer, nested ones too. */
function idsIn(v: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(v)) for (const x of v) idsIn(x, out)
  else if (v && typeof v === 'object')
    for (const [k, x] of Object.entries(v)) {
      if (k === 'id' && typeof x === 'string') out.add(x)
      else idsIn(x, out)
    }
  return out
}

/**
 * What the owner reads of a world, to prove nothing changed: every read of the document (the
 * world's ids in its path, `?codalmacen=` its center) and who acted on each record according to
 * the audit trail (its access events aside with `actions: false`: they record attempts). The
 * audit trail's own list is read that way only: it grows with every request, these too.
 */
async function snapshot(w: World, o: { center?: string; actions?: boolean } = {}) {
  const reads: Record<string, unknown> = {}
  for (const op of ops.filter((op) => op.method === 'get' && op.family !== 'audit')) {
    const url = withQuery(urlOf(op.path, w)!, queryOf(op, w, { codalmacen: o.center ?? w.center }))
    const res = await send('get', url, w.token)
    // Every read is the owner's own: anything but a 200 says the snapshot is no snapshot (and why).
    if (res.status !== 200)
      throw new Error(`snapshot: GET ${url} answered ${res.status} ${JSON.stringify(res.body)}`)
    // A cursor says where the reading stopped (the change feed's moves past other centers' events),
    // not what the records are.
    const meta = res.body?.meta as Record<string, unknown> | undefined
    reads[url] = meta ? { ...res.body, meta: { ...meta, next: undefined } } : res.body
  }
  const actors = new Set<string>()
  for (const id of Object.values(w.ids))
    for (const e of (await send('get', `/audit/events?resource_id=${id}&limit=100`, w.token)).body.data)
      if (o.actions !== false || !String(e.action).startsWith('http.'))
        actors.add(`${e.actor?.username ?? 'system'}/${e.actor?.token_id ?? ''}`)
  return { reads, actors: [...actors].sort() }
}

/** The snapshot once two in a row agree: workers (delivery, reminders, webhooks) have settled. */
const settled = (w: World, o: { actions?: boolean } = {}) =>
  waitFor(
    async () => {
      const first = await snapshot(w, o)
      const second = await snapshot(w, o)
      return JSON.stringify(first) === JSON.stringify(second) ? second : null
    },
    {
      what: `the world of ${w.company.companyId} at ${w.center} to settle`,
      timeoutMs: 180_000,
      intervalMs: 1000,
    },
  )

// ---------------------------------------------------------------------------------------------
// Probes and the sweep

/** One request of a sweep and the answers it may get. */
interface Probe {
  method: string
  url: string
  body?: unknown
  status: number[]
  /** The problem `code` expected with an error status. */
  code?: string
  /** What else the answer must show: says what is wrong, or nothing. */
  check?: (res: Answer) => string | undefined
}
const ok2xx = [200, 201, 202, 204]
const notFound = { status: [404], code: 'not_found' }
const centerForbidden = { status: [403], code: 'center_forbidden' }
/** The rows of a list (or the one object answered). */
const rowsOf = (body: unknown): Array<Record<string, any>> => {
  const b = body as { data?: unknown; items?: unknown } | undefined
  return (Array.isArray(b?.data) ? b.data : Array.isArray(b?.items) ? b.items : b ? [b] : []) as Array<
    Record<string, any>
  >
}
const none = (res: Answer) =>
  rowsOf(res.body).length === 0 || !Array.isArray(res.body?.data)
    ? undefined
    : `shows ${JSON.stringify(res.body?.data)}`
/** Every row that has a center is at `center` (a feed event's center is in its data). */
const onlyAt = (center: string) => (res: Answer) => {
  const other = (Array.isArray(res.body?.data) ? res.body.data : []).filter((r: Record<string, any>) => {
    const c = 'codalmacen' in r ? r.codalmacen : r.data && 'codalmacen' in r.data ? r.data.codalmacen : center
    return c !== center
  })
  return other.length ? `rows of another center: ${JSON.stringify(other).slice(0, 300)}` : undefined
}

/** The probes every sweep shares: an operation with `them`'s ids, or its filters and references. */
function probesOf(
  op: Operation,
  me: World,
  them: World,
  o: {
    /** What a reference to one of their records answers: `unknown` ones only, or (`every`) all of them. */
    refused: { status: number[]; code?: string; every?: boolean }
    listCheck?: (res: Answer) => string | undefined
  },
): Probe[] {
  const probes: Probe[] = []
  const body = bodyOf(op, me)
  const params = pathParams(op.path)
  if (params.length) {
    probes.push({ method: op.method, url: urlOf(op.path, them)!, body, ...notFound })
    // Their record under my own parent (a time off of theirs under my practitioner).
    if (params.length > 1) {
      const mixed = {
        ...me.ids,
        [collectionOf(op.path, params.at(-1)!)]: them.ids[collectionOf(op.path, params.at(-1)!)]!,
      }
      probes.push({ method: op.method, url: urlOf(op.path, me, mixed)!, body, ...notFound })
    }
    return probes
  }
  if (op.method === 'get') {
    const base = queryOf(op, me)
    probes.push({ method: 'get', url: withQuery(op.path, base), status: [200], check: o.listCheck })
    // Each filter that names one of their records (or their text) shows nothing of them.
    for (const p of op.params.filter((p) => p.in === 'query')) {
      const ref = REFERENCES[p.name]
      const values =
        p.name === 'resource_id'
          ? Object.values(them.ids)
          : p.name === 'q'
            ? [them.marker]
            : ref && them.ids[ref.collection]
              ? [String(referenceTo(p.name, them))]
              : []
      for (const v of values)
        probes.push({
          method: 'get',
          url: withQuery(op.path, { ...base, [p.name]: v }),
          status: [200],
          check: op.family === 'audit' ? o.listCheck : (res) => none(res) ?? o.listCheck?.(res),
        })
    }
    return probes
  }
  probes.push({ method: op.method, url: op.path, body, status: ok2xx })
  // Each reference in the body to one of their records instead of mine.
  for (const [name, ref] of Object.entries(REFERENCES))
    if (body && deref(op.body!, doc).properties?.[name] && them.ids[ref.collection])
      probes.push({
        method: op.method,
        url: op.path,
        // A slot of its own: a conflict with the plain request would hide the answer.
        body: { ...bodyOf(op, me), [name]: referenceTo(name, them) },
        ...(o.refused.every
          ? { status: o.refused.status }
          : ref.unknown
            ? { ...o.refused, code: o.refused.code ?? ref.unknown }
            : { status: ok2xx }),
      })
  return probes
}

/**
 * Runs the probes with `token`, and returns what leaked (ids of `foreign` the request did not send
 * nor `known` lists, or their marker text) and which answers were not among those expected.
 */
async function sweep(
  token: string,
  probes: Probe[],
  foreign: { ids: Set<string>; markers: string[] },
  o: { known?: Set<string>; ignoreAccessEvents?: boolean } = {},
) {
  const leaks: string[] = []
  const unexpected: string[] = []
  for (const p of probes) {
    const res = await send(p.method, p.url, token, p.body)
    const sent = `${p.url} ${JSON.stringify(p.body ?? '')}`
    // An audit trail records the caller's own requests, ids in their paths included: what it sent
    // before, not what it learnt. Everything else must hold nothing foreign: no id, no text.
    const shown =
      o.ignoreAccessEvents && Array.isArray(res.body?.data)
        ? {
            ...res.body,
            data: res.body.data.filter((e: { action?: string }) => !String(e.action).startsWith('http.')),
          }
        : res.body
    const textShown = JSON.stringify(shown ?? '')
    for (const id of foreign.ids)
      if (!sent.includes(id) && !o.known?.has(id) && textShown.includes(id))
        leaks.push(
          `${p.method} ${p.url}: ${id} in ${JSON.stringify(rowsOf(shown).find((r) => JSON.stringify(r).includes(id))).slice(0, 400)}`,
        )
    for (const m of foreign.markers)
      if (JSON.stringify(res.body ?? '').includes(m)) leaks.push(`${p.method} ${p.url}: ${m}`)
    const code = res.body?.code as string | undefined
    if (!p.status.includes(res.status) || (p.code && res.status >= 400 && code !== p.code))
      unexpected.push(
        `${p.method} ${p.url} ${JSON.stringify(p.body ?? '')}: ${res.status} ${code ?? ''} (expected ${p.status.join('|')} ${p.code ?? ''})`,
      )
    else if (p.check?.(res)) unexpected.push(`${p.method} ${p.url}: ${p.check(res)}`)
    // What the token wrote itself it may read back (an appointment it booked names its patient).
    if (res.status < 300 && p.method !== 'get')
      for (const id of foreign.ids) if (sent.includes(id)) o.known?.add(id)
  }
  return { requests: probes.length, leaks, unexpected }
}

// ---------------------------------------------------------------------------------------------
// The worlds

let a: Tenant
let b: Tenant
let limitedToken: string
/** A's records at ALM1 and at ALM2, and B's at ALM1. */
let alm1: World
let alm2: World
let worldB: World
/** An ALM1 appointment of A's ALM2 patient, with a practitioner no one registered. */
let crossAppointment: string
const unregisteredOf = (w: World) => `dra-${w.marker.toLowerCase()}`

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(204).end())
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
  doc = await fetchDocument()
  ops = apiOperations(doc)
  ;[a, b] = await Promise.all([makeTenant(['ALM1', 'ALM2']), makeTenant(['ALM1', 'ALM2'])])
  limitedToken = await tokenFor(a, '--centers', 'ALM2')
  tokensOfA.add(a.token).add(limitedToken)
  // Each company's reminder policy differs: an answer shows whose it is.
  ;[alm1, worldB] = await Promise.all([populate(a, 'ALM1', ['P1D']), populate(b, 'ALM1', ['P2D', 'PT3H'])])
  alm2 = await populate(a, 'ALM2', ['P1D'])
  const booked = await send('post', '/appointments', a.token, {
    patient_id: alm2.ids['/patients'],
    codalmacen: 'ALM1',
    practitioner: unregisteredOf(alm1),
    ...slotAt(12),
    reason: alm1.marker,
  })
  if (booked.status !== 201) throw new Error(`setup: ${booked.status} ${JSON.stringify(booked.body)}`)
  crossAppointment = booked.body.id
}, 600_000)
afterAll(async () => {
  receiver?.closeAllConnections()
  await new Promise((resolve) => receiver?.close(resolve))
})

const report = (name: string, r: { requests: number; leaks: string[]; unexpected: string[] }) =>
  process.stdout.write(
    `isolation (${name}): operations=${ops.length} requests=${r.requests} leaks=${r.leaks.length} unexpected=${r.unexpected.length}\n`,
  )

/** A policy answer is the one `w` set. */
const policyOf = (w: World) => (res: Answer) => {
  const sent = w.sent['/comms/reminder-policy']
  return sent && Object.entries(sent).some(([k, v]) => JSON.stringify(res.body?.[k]) !== JSON.stringify(v))
    ? `policy ${JSON.stringify(res.body)}, not ${JSON.stringify(sent)}`
    : undefined
}
/** Preferences answered, each with `opted_out` as given. */
const optedOut = (value: boolean) => (res: Answer) => {
  const rows = rowsOf(res.body)
  return rows.length && rows.every((r) => r.opted_out === value)
    ? undefined
    : `preferences ${JSON.stringify(res.body)}`
}
/**
 * A conflict with something at a center the token cannot see: the detail names neither patient nor
 * practitioner, and no alternative is at another center than the token's.
 */
const hiddenConflict = (res: Answer) => {
  const body = res.body as { detail?: string; alternatives?: Array<{ codalmacen: string }> } | undefined
  if (/patient|practitioner|paciente|profesional/i.test(body?.detail ?? ''))
    return `the detail says who: ${body?.detail}`
  if (body?.alternatives?.some((s) => s.codalmacen !== 'ALM2'))
    return `alternatives at another center: ${JSON.stringify(body.alternatives)}`
  return undefined
}
const conflict = { status: [409], code: 'slot_conflict', check: hiddenConflict }
/** A list with nothing in it. */
const noRows = (res: Answer) => (rowsOf(res.body).length ? `rows ${JSON.stringify(res.body)}` : undefined)
const preferencesOf = (address: string) =>
  `/comms/preferences?address=${encodeURIComponent(address)}&channel=email`

/** A probe in one line: method, URL, body and what it must answer. */
const probe = (
  method: string,
  url: string,
  body: unknown,
  expect: Omit<Probe, 'method' | 'url' | 'body'>,
) => ({
  method,
  url,
  body,
  ...expect,
})
const problem = (status: number, code: string) => ({ status: [status], code })
const answers200 = (check: Probe['check']) => ({ status: [200], check })

/**
 * What DESIGN says beyond what a schema can tell, by sweep: probes added to the generic ones, and
 * the expectation of an operation's plain request where DESIGN makes it other than a 2xx.
 */
const RULES = {
  company: (): Probe[] => [
    // A's consent for B's opted-out address is A's own (not opted out), however it is written.
    probe('get', preferencesOf(worldB.address), undefined, answers200(optedOut(false))),
    probe('get', preferencesOf(worldB.address.toUpperCase()), undefined, answers200(optedOut(false))),
    probe(
      'put',
      '/comms/preferences',
      { channel: 'email', address: worldB.address, opted_out: false },
      answers200(optedOut(false)),
    ),
    probe('get', '/comms/reminder-policy', undefined, answers200(policyOf(alm1))),
    // To B's patient on purpose, past its guardian: as unknown as before.
    probe(
      'post',
      '/comms/send',
      { patient_id: worldB.ids['/patients'], recipient: 'patient', override_guardian: true, body: 'hola' },
      problem(422, 'unknown_patient'),
    ),
  ],
  center: (): Probe[] => {
    const [patient1, patient2] = [alm1.ids['/patients']!, alm2.ids['/patients']!]
    const endpoint2 = `/webhooks/endpoints/${alm2.ids['/webhooks/endpoints']}`
    const practitioner = (working_hours: unknown, id = `lim-${randomUUID().slice(0, 8)}`) => ({
      ...{ id, name: 'Centro Dos', time_zone: 'UTC', working_hours },
    })
    const bothCenters = [...hoursAt('ALM2'), { codalmacen: 'ALM1', weekday: 2, start: '08:00', end: '14:00' }]
    const at2 = (patient_id: string, practitioner: string, slot: object) => ({
      ...{ patient_id, codalmacen: 'ALM2', practitioner, ...slot },
    })
    /** ALM2's reminders, its appointment's among them, and nothing of another center. */
    const ofALM2 = (res: Answer) =>
      onlyAt('ALM2')(res) ??
      (rowsOf(res.body).some((r) => r.appointment_id === alm2.ids['/appointments'])
        ? undefined
        : `no reminder of ALM2's appointment: ${JSON.stringify(res.body)}`)
    const unknownPatient = problem(422, 'unknown_patient')
    return [
      // A patient of another center may be booked at the token's center (the patient lookup checks
      // the company, not the center); a message to one is not sent.
      probe('post', '/appointments', at2(patient1, 'dra-limited', sweepSlot()), { status: [201] }),
      probe('post', '/comms/send', { patient_id: patient1, body: 'x' }, unknownPatient),
      probe(
        'post',
        '/comms/send',
        { patient_id: patient1, recipient: 'patient', override_guardian: true, body: 'x' },
        unknownPatient,
      ),
      probe(
        'post',
        '/comms/send',
        { patient_id: patient2, appointment_id: crossAppointment, template: 'appointment_reminder' },
        problem(422, 'unknown_appointment'),
      ),
      // Conflicts with what takes the time at ALM1 name no one: the practitioner's ALM1
      // appointment, the patient's, and the ALM1 hold named in the booking (not converted, nor a
      // 400 /hold_id, which would show it: it keeps the time).
      probe('post', '/appointments', at2(patient1, unregisteredOf(alm1), slotAt(12)), conflict),
      probe('post', '/appointments', at2(patient2, 'dra-limited', slotAt(12)), conflict),
      probe(
        'post',
        '/appointments',
        {
          ...at2(patient2, alm1.ids['/practitioners']!, slotAt(10)),
          ...{ hold_id: alm1.ids['/appointments/holds'], outside_hours: true },
        },
        conflict,
      ),
      probe(
        'post',
        '/appointments/holds',
        { practitioner: unregisteredOf(alm1), codalmacen: 'ALM2', ...slotAt(12) },
        conflict,
      ),
      // Ids are unique in the company: the one of ALM1 is taken, and that is all the answer says.
      probe(
        'post',
        '/practitioners',
        practitioner(hoursAt('ALM2'), alm1.ids['/practitioners']),
        problem(409, 'duplicate_practitioner'),
      ),
      probe('post', '/practitioners', practitioner(bothCenters), centerForbidden),
      probe(
        'patch',
        `/practitioners/${alm2.ids['/practitioners']}`,
        { working_hours: bothCenters },
        centerForbidden,
      ),
      // An endpoint of every center is not the limited token's to make, nor to turn one into.
      probe('post', '/webhooks/endpoints', { url: hook, event_types: ['*'] }, centerForbidden),
      probe(
        'post',
        '/webhooks/endpoints',
        { url: hook, event_types: ['*'], codalmacen: null },
        centerForbidden,
      ),
      probe('patch', endpoint2, { codalmacen: null }, centerForbidden),
      // The company's policy: read, never set (even naming the token's own center). Consent: only
      // for the addresses of its own centers' patients (those comms has messaged for them), so an
      // address of ALM1's reads as nothing and cannot be flipped.
      probe('get', '/comms/reminder-policy', undefined, answers200(policyOf(alm1))),
      probe(
        'put',
        '/comms/reminder-policy?codalmacen=ALM2',
        alm1.sent['/comms/reminder-policy'],
        centerForbidden,
      ),
      probe('get', preferencesOf(alm1.address), undefined, answers200(noRows)),
      probe(
        'put',
        '/comms/preferences',
        { channel: 'email', address: alm1.address, opted_out: false, override: true },
        problem(404, 'not_found'),
      ),
      probe(
        'get',
        '/comms/reminders?codalmacen=ALM2&status=scheduled&limit=100',
        undefined,
        answers200(ofALM2),
      ),
    ]
  },
  /** A plain request the center-limited token makes that DESIGN refuses: the policy is the company's. */
  centerPlain: {
    'put /comms/reminder-policy': centerForbidden,
    // Its own world's consent address was never messaged for an ALM2 patient: not the token's to set.
    'put /comms/preferences': problem(404, 'not_found'),
  } as Record<string, { status: number[]; code: string }>,
}

const free = async (w: World, token: string) =>
  (
    await send(
      'get',
      `/appointments/availability?codalmacen=ALM1&from=${DAY}T00:00:00Z&to=${NEXT_DAY}T00:00:00Z&practitioner=${w.ids['/practitioners']}`,
      token,
    )
  ).body?.data?.map((s: { starts_at: string }) => s.starts_at.slice(11, 16)) as string[]

// ---------------------------------------------------------------------------------------------
// Company A on company B

test('company A reaches nothing of company B, on every operation of the API', async () => {
  const before = await settled(worldB)
  const foreign = { ids: idsIn(before.reads), markers: [worldB.marker] }
  for (const id of Object.values(worldB.ids)) foreign.ids.add(id)
  // The snapshot sees B's appointment, hold and time off in B's free slots (so it would see them go).
  expect(await free(worldB, worldB.token)).toEqual(GRID.filter((t) => !worldB.taken.includes(t)))
  const probes = [
    ...ops.flatMap((op) => probesOf(op, alm1, worldB, { refused: { status: [422] } })),
    ...RULES.company(),
  ]
  const r = await sweep(a.token, probes, foreign, { ignoreAccessEvents: true })
  report('company', r)
  expect(r.leaks).toEqual([])
  expect(r.unexpected).toEqual([])
  // Companies' calendars are separate. B's practitioner id is free in A (ids are per company), and
  // A's practitioner of that id has its whole day free: B's appointment, hold and time off are B's.
  const same = {
    id: worldB.ids['/practitioners'],
    name: 'Mismo Id',
    time_zone: 'UTC',
    slot_minutes: 30,
    working_hours: hoursAt('ALM1'),
  }
  expect((await send('post', '/practitioners', a.token, same)).status).toBe(201)
  expect(await free(worldB, a.token)).toEqual(GRID)
  // A books B's held slot naming B's hold (booked as if no hold was named: B's hold stays), and
  // holds the time of B's appointment.
  const [heldAt, bookedAt] = [worldB.taken[1]!, worldB.taken[0]!].map((t) =>
    slotAt(Number(t.slice(0, 2)), Number(t.slice(3))),
  )
  const booking = {
    patient_id: alm1.ids['/patients'],
    codalmacen: 'ALM1',
    practitioner: worldB.ids['/practitioners'],
    ...heldAt,
    hold_id: worldB.ids['/appointments/holds'],
  }
  expect((await send('post', '/appointments', a.token, booking)).status).toBe(201)
  const hold = { practitioner: worldB.ids['/practitioners'], codalmacen: 'ALM1', ...bookedAt }
  expect((await send('post', '/appointments/holds', a.token, hold)).status).toBe(201)
  // B's records, totals and audit actors are as they were.
  expect(await snapshot(worldB)).toEqual(before)
  // And A's own records are there for A: the sweep did not pass by answering 404 to everyone.
  expect((await send('get', `/patients/${alm1.ids['/patients']}`, a.token)).status).toBe(200)
}, 600_000)

// ---------------------------------------------------------------------------------------------
// A token of A limited to ALM2, on A's records of ALM1

/** A's ids of ALM1's records: what its snapshot shows under ALM1 and not under ALM2 (consent is the company's). */
async function centerForeign(snap: { reads: Record<string, unknown> }) {
  const ids = idsIn(snap.reads)
  for (const url of Object.keys(snap.reads)) {
    const res = await send('get', url.replace('codalmacen=ALM1', 'codalmacen=ALM2'), a.token)
    if (res.status === 200) for (const id of idsIn(res.body)) ids.delete(id)
  }
  return ids
}

test('a token limited to one center reaches nothing of the company’s other centers, on every operation', async () => {
  const before = await settled(alm1, { actions: false })
  const foreign = { ids: await centerForeign(before), markers: [alm1.marker] }
  const forbidden = (p: Probe): Probe => ({
    ...p,
    url: withQuery(p.url, { codalmacen: 'ALM1' }),
    ...centerForbidden,
    check: undefined,
  })
  const probes = ops.flatMap((op) => {
    // A reference to an ALM1 record from ALM2: booked (the patient lookup checks the company), or
    // refused as unknown, or outside the hours of ALM1's practitioner; RULES pin which is which.
    // A series of ALM1's practitioner at ALM2 is outside its hours too: a series lists that among
    // its conflicts (409 series_conflict) where a plain booking answers 422 outside_working_hours.
    const refusals = op.path === '/appointments/series' ? [201, 409, 422] : [201, 422]
    const own = probesOf(op, alm2, alm1, {
      refused: { status: refusals, every: true },
      listCheck: onlyAt('ALM2'),
    })
    const plain = own[0]!
    const key = `${op.method} ${op.path}`
    if (RULES.centerPlain[key] && !pathParams(op.path).length) Object.assign(plain, RULES.centerPlain[key])
    // `?codalmacen=ALM1` on every operation, on records of the token's own center.
    const mine = urlOf(op.path, alm2)!
    const extra: Probe[] = [
      forbidden({
        ...plain,
        url: op.method === 'get' ? withQuery(mine, queryOf(op, alm2)) : mine,
        body: bodyOf(op, alm2),
      }),
    ]
    // A body that names ALM1 where it names a center: forbidden (the token's own records too).
    const body = bodyOf(op, alm2)
    if (body && CENTERED.some((c) => c in body)) {
      const atALM1 = {
        ...body,
        ...Object.fromEntries(CENTERED.filter((c) => c in body).map((c) => [c, fixture(c, alm1, {})])),
      }
      extra.push({ method: op.method, url: mine, body: atALM1, ...centerForbidden })
    }
    return [...own, ...extra]
  })
  // Its own refused requests on the audit trail name what it sent: not what it learnt.
  const r = await sweep(limitedToken, [...probes, ...RULES.center()], foreign, {
    known: new Set(),
    ignoreAccessEvents: true,
  })
  report('center', r)
  expect(r.leaks).toEqual([])
  expect(r.unexpected).toEqual([])
  // ALM1's records, ALM1's totals and who acted on ALM1's records are as they were.
  expect(await snapshot(alm1, { actions: false })).toEqual(before)
}, 600_000)

// ---------------------------------------------------------------------------------------------
// A token of A with every center, asking for ALM2, on A's records of ALM1

test('a token of every center asking for ALM2 reaches no record of ALM1, on every operation on one record', async () => {
  const before = await snapshot(alm1, { actions: false })
  const foreign = { ids: await centerForeign(before), markers: [alm1.marker] }
  // Each operation on one record of ALM1, under ALM2: 404 as another company's (DESIGN section 2).
  // The token may use ALM2, so the gateway lets every request through: the service decides.
  const withId = ops.filter((op) => pathParams(op.path).length)
  const probes = withId.map((op) => ({
    method: op.method,
    url: withQuery(urlOf(op.path, alm1)!, { codalmacen: 'ALM2' }),
    body: bodyOf(op, alm2),
    ...notFound,
  }))
  const r = await sweep(a.token, probes, foreign, { known: new Set() })
  report('asked center', r)
  expect(r.leaks).toEqual([])
  expect(r.unexpected).toEqual([])
  expect(withId.length).toBeGreaterThanOrEqual(20)
  // ALM1's records, totals and who acted on them are as they were...
  expect(await snapshot(alm1, { actions: false })).toEqual(before)
  // ...and each read answers under its own center: the 404s were about the center asked for.
  for (const op of withId.filter((op) => op.method === 'get')) {
    const url = withQuery(urlOf(op.path, alm1)!, { codalmacen: 'ALM1' })
    expect([url, (await send('get', url, a.token)).status]).toEqual([url, 200])
  }
}, 600_000)

// ---------------------------------------------------------------------------------------------
// Totals

test('A’s totals count exactly what A created: nothing of B, and a limited token only its center', async () => {
  // Each list of the document whose records A made (a create's collection with a list of its own).
  const lists = ops.filter((op) => op.list && ledger.has(op.path) && !pathParams(op.path).length)
  const seen: Record<string, unknown> = {}
  const expected: Record<string, unknown> = {}
  for (const op of lists) {
    const created = ledger.get(op.path)!
    for (const [who, token, query, keep] of [
      ['A', a.token, '', () => true],
      ['A ALM1', a.token, '&codalmacen=ALM1', (c: string | null) => c === 'ALM1'],
      ['A ALM2', a.token, '&codalmacen=ALM2', (c: string | null) => c === 'ALM2'],
      ['limited to ALM2', limitedToken, '', (c: string | null) => c === 'ALM2'],
    ] as const) {
      const res = await send('get', `${op.path}?limit=100${query}`, token)
      const ids = [...created].filter(([, c]) => keep(c)).map(([id]) => id)
      seen[`${who} ${op.path}`] = {
        total: res.body.meta.total,
        ids: res.body.data.map((r: { id: string }) => r.id).sort(),
      }
      expected[`${who} ${op.path}`] = { total: ids.length, ids: ids.sort() }
    }
  }
  process.stdout.write(
    `isolation (totals): ${Object.entries(expected)
      .map(([k, v]) => `${k}=${(v as { total: number }).total}`)
      .join(' ')}\n`,
  )
  expect(seen).toEqual(expected)
  // The ledger is not empty: A created records of both centers.
  expect(lists.length).toBeGreaterThanOrEqual(4)
  expect(new Set(ledger.get('/practitioners')!.values())).toEqual(new Set(['ALM1', 'ALM2']))
}, 300_000)
