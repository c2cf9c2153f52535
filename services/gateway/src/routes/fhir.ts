import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import type { Location, Organization, Resource } from '@medplum/fhirtypes'
import {
  FHIR_CONTENT_TYPE,
  NotFound,
  PATIENT_COMPARTMENT,
  ValidationFailed,
  decodeCursor,
  encodeCursor,
  locationIdOf,
  parseSearch,
  searchsetBundle,
  sendFhir,
  traceOf,
  type AssertionSigner,
  type FhirSearch,
  type Principal,
} from '@clinic/platform'
import { BASES } from '../bases'
import { centerRecords, companyRecord, type CenterRecord } from '../db/fhir-identity'
import { FHIR_BASE, FHIR_TYPES, type Upstreams } from '../families'
import { capabilityStatement } from './fhir-capability'
import { fetchFhir as fetchAs } from '../fhir-upstream'

export interface FhirOptions {
  knex: Knex
  upstreams: Upstreams
  signer: AssertionSigner
  /** Where clients reach the gateway (PUBLIC_BASE_URL): the absolute base of links and fullUrls. */
  publicBaseUrl: string
  version: string
}

export const organizationOf = (c: { id: number; name: string; created_at: Date }): Organization => ({
  resourceType: 'Organization',
  id: String(c.id),
  meta: { versionId: '1', lastUpdated: c.created_at.toISOString() },
  active: true,
  name: c.name,
})
export const locationOf = (companyId: number, c: CenterRecord): Location => ({
  resourceType: 'Location',
  id: locationIdOf(c.code),
  meta: { versionId: '1', lastUpdated: c.created_at.toISOString() },
  identifier: [{ system: 'https://clinic.example/fhir/sid/codalmacen', value: c.code }],
  status: 'active',
  name: c.name,
  mode: 'instance',
  managingOrganization: { reference: `Organization/${companyId}` },
})

/** The gateway's own small sets (the company, its centers) searched in memory: `_id`, `_lastUpdated`, order, paging. */
function searchInMemory<R extends Resource>(all: R[], s: FhirSearch) {
  const ids = s.ids
  const matching = all
    .filter((r) => !ids || ids.includes(r.id!))
    .filter((r) =>
      s.lastUpdated.every((b) =>
        b.op === '>=' ? r.meta!.lastUpdated! >= b.at : r.meta!.lastUpdated! < b.at,
      ),
    )
    .sort((a, b) => (a.meta!.lastUpdated! + a.id!).localeCompare(b.meta!.lastUpdated! + b.id!))
  if (s.order === 'desc') matching.reverse()
  let offset = 0
  if (s.cursor !== undefined) {
    const [n] = decodeCursor(s.cursor, 1)
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0)
      throw new ValidationFailed([{ path: '/_cursor', message: 'is not a cursor from a next link' }])
    offset = n
  }
  const end = offset + s.count
  return {
    resources: matching.slice(offset, end),
    total: matching.length,
    next: end < matching.length && s.count > 0 ? encodeCursor([end]) : null,
  }
}

/**
 * The FHIR base's own routes (DESIGN.md section 19), under both API bases: the
 * CapabilityStatement (no token), Organization (the company) and Location (its centers, those of a
 * center-limited token only), which the identity schema holds, and `Patient/<id>/$everything`,
 * gathered from the services that own each type. Every other type is proxied (proxy.ts).
 */
export async function fhirRoutes(app: FastifyInstance, o: FhirOptions) {
  const statement = capabilityStatement(o.version)
  for (const base of BASES) {
    const root = `${base}${FHIR_BASE}`
    const absolute = `${o.publicBaseUrl.replace(/\/$/, '')}${root}`
    app.get(`${root}/metadata`, { schema: { hide: true }, config: { public: true } }, async (_req, reply) =>
      reply.type(FHIR_CONTENT_TYPE).send(statement),
    )

    const organizations = async (auth: Principal) => {
      const c = await companyRecord(o.knex, auth.companyId)
      return c ? [organizationOf(c)] : []
    }
    const locations = async (auth: Principal) =>
      (await centerRecords(o.knex, auth.companyId))
        .filter((c) => !auth.allowedCenters || auth.allowedCenters.includes(c.code))
        .map((c) => locationOf(auth.companyId, c))
    const own: Array<['Organization' | 'Location', (auth: Principal) => Promise<Resource[]>]> = [
      ['Organization', organizations],
      ['Location', locations],
    ]
    for (const [type, all] of own) {
      app.get(`${root}/${type}`, { schema: { hide: true } }, async (req, reply) => {
        const s = parseSearch(type, req.query as Record<string, string>)
        const page = searchInMemory(await all(req.principal!), s)
        return reply.type(FHIR_CONTENT_TYPE).send(searchsetBundle(absolute, type, s, page))
      })
      app.get(`${root}/${type}/:id`, { schema: { hide: true } }, async (req, reply) => {
        const { id } = req.params as { id: string }
        const found = (await all(req.principal!)).find((r) => r.id === id)
        if (!found) throw new NotFound(`No ${type} ${id}`)
        return sendFhir(reply, found)
      })
    }

    app.get(`${root}/Patient/:id/$everything`, { schema: { hide: true } }, async (req, reply) =>
      everything(req, reply, { ...o, base, absolute }),
    )
  }
}

type EverythingCursor = [typeIndex: number, inner: string | null]

/** Where a `$everything` page starts: the type reached and that type's own cursor. */
function everythingCursor(cursor: string | string[] | undefined): EverythingCursor {
  if (cursor === undefined) return [0, null]
  const [t, c] = typeof cursor === 'string' ? decodeCursor(cursor, 2) : []
  if (!(Number.isSafeInteger(t) && (t as number) >= 0) || !(c === null || typeof c === 'string'))
    throw new ValidationFailed([{ path: '/_cursor', message: 'is not a cursor from a next link' }])
  return [t as number, c as string | null]
}

/** A service's FHIR answer to a GET the gateway makes for the caller (signed as the caller's). */
async function fetchFhir(req: FastifyRequest, o: FhirOptions & { absolute: string }, path: string) {
  try {
    return await fetchAs(
      o,
      { auth: req.principal!, requestId: String(req.id), traceparent: traceOf(req.span).traceparent },
      path,
    )
  } catch (err) {
    const e = err as Error & { upstream?: string }
    req.log.warn(
      { err: (e.cause as Error | undefined)?.message, upstream: e.upstream },
      'upstream unavailable',
    )
    throw err
  }
}

/**
 * `Patient/<id>/$everything`: the patient, then every resource of each type of the patient
 * compartment the token may read (its scopes; its centers apply in each service), type after type,
 * `_count` entries a page; `next` carries the type reached and that type's own cursor. `total` is
 * the sum of each type's total (one count-only search each). Anything the services answer in error
 * is answered as they did.
 */
async function everything(
  req: FastifyRequest,
  reply: FastifyReply,
  o: FhirOptions & { base: string; absolute: string },
) {
  const { id } = req.params as { id: string }
  const query = req.query as Record<string, string | string[]>
  const unknown = Object.keys(query).filter((k) => k !== '_count' && k !== '_cursor')
  if (unknown.length)
    throw new ValidationFailed(
      unknown.map((k) => ({ path: `/${k}`, message: 'is not a parameter of $everything (_count, _cursor)' })),
    )
  const { count } = parseSearch('Patient', query._count ? { _count: query._count } : {})
  let [typeIndex, inner] = everythingCursor(query._cursor)
  const held = req.scopes ?? []
  const types = PATIENT_COMPARTMENT.filter((t) => {
    const scope = FHIR_TYPES.get(t)?.scope
    return scope !== undefined && (scope === 'any' || held.includes(scope))
  })
  const ref = encodeURIComponent(`Patient/${id}`)
  const failed = (r: { status: number; body: unknown }) =>
    reply.code(r.status).type(FHIR_CONTENT_TYPE).send(r.body)

  const patient = await fetchFhir(req, o, `${FHIR_BASE}/Patient/${encodeURIComponent(id)}`)
  if (patient.status !== 200) return failed(patient)
  const totals = await Promise.all(
    types.map((t) => fetchFhir(req, o, `${FHIR_BASE}/${t}?patient=${ref}&_count=0`)),
  )
  const bad = totals.find((r) => r.status !== 200)
  if (bad) return failed(bad)

  const resources: Resource[] = typeIndex === 0 && inner === null && count > 0 ? [patient.body] : []
  let next: EverythingCursor | null = null
  while (typeIndex < types.length) {
    const room = count - resources.length
    if (room <= 0) {
      next = [typeIndex, inner]
      break
    }
    const path = `${FHIR_BASE}/${types[typeIndex]}?patient=${ref}&_count=${room}${inner ? `&_cursor=${encodeURIComponent(inner)}` : ''}`
    const page = await fetchFhir(req, o, path)
    if (page.status !== 200) return failed(page)
    for (const e of page.body.entry ?? []) resources.push(e.resource!)
    const more = page.body.link?.find((l) => l.relation === 'next')?.url
    inner = more ? new URL(more, 'http://x').searchParams.get('_cursor') : null
    if (!inner) typeIndex += 1
  }
  const total = 1 + totals.reduce((n, r) => n + (r.body.total ?? 0), 0)
  const bundle = searchsetBundle(
    o.absolute,
    `Patient/${id}/$everything`,
    {
      query: query._count !== undefined ? `_count=${count}` : '',
      cursor: typeof query._cursor === 'string' ? query._cursor : undefined,
    },
    { resources, total, next: next && encodeCursor(next) },
  )
  return reply.type(FHIR_CONTENT_TYPE).send(bundle)
}
