import type { Resource } from '@medplum/fhirtypes'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Ctx } from '../context'
import { NotFound } from '../errors'
import {
  FHIR_BASE,
  FHIR_BASE_HEADER,
  FHIR_CONTENT_TYPE,
  FHIR_SNAPSHOT_HEADER,
  type FhirType,
} from '../fhir/definitions'
import { searchsetBundle, type FhirPage } from '../fhir/bundle'
import { parseSearch, type FhirSearch } from '../fhir/search'

/**
 * What a service answers for one FHIR type it owns: a read by id (null: 404) and a search. A type
 * whose read is no resource read (Binary: the bytes) leaves `read` out and routes it itself.
 */
export interface FhirTypeHandlers<R extends Resource = Resource> {
  type: FhirType
  read?(ctx: Ctx, id: string): Promise<R | null>
  search(ctx: Ctx, search: FhirSearch): Promise<FhirPage<R>>
}

/** The FHIR base the gateway says the client reached (an http(s) URL), else the relative one. */
export function fhirBaseOf(req: FastifyRequest): string | undefined {
  const base = req.headers[FHIR_BASE_HEADER]
  return typeof base === 'string' && /^https?:\/\/[^\s]+$/.test(base) ? base.replace(/\/$/, '') : undefined
}

/** A FHIR resource as answered: its content type, and its version as a weak ETag (FHIR's vread form). */
export function sendFhir(reply: FastifyReply, resource: Resource) {
  const version = resource.meta?.versionId
  if (version) reply.header('etag', `W/"${version}"`)
  if (resource.meta?.lastUpdated)
    reply.header('last-modified', new Date(resource.meta.lastUpdated).toUTCString())
  return reply.type(FHIR_CONTENT_TYPE).send(resource)
}

const ID = /^[A-Za-z0-9\-.]{1,64}$/
/** What pg_export_snapshot() answers: `00000003-0000001B-1`. */
const SNAPSHOT = /^[0-9A-F]{8}-[0-9A-F]{8}-\d{1,10}$/

/**
 * `GET /fhir/R4/<Type>/<id>` and `GET /fhir/R4/<Type>?...` for each type (DESIGN.md section 19):
 * read-only, answered as application/fhir+json; errors are OperationOutcomes (sendProblem, by the
 * path). Not in the OpenAPI document: the CapabilityStatement describes them.
 */
export async function fhirRoutes(app: FastifyInstance, handlers: FhirTypeHandlers[]) {
  for (const h of handlers) {
    const path = `${FHIR_BASE}/${h.type}`
    app.get(path, { schema: { hide: true } }, async (req, reply) => {
      const search = parseSearch(h.type, req.query as Record<string, string | string[]>)
      const snapshot = req.headers[FHIR_SNAPSHOT_HEADER]
      if (typeof snapshot === 'string' && SNAPSHOT.test(snapshot)) search.snapshot = snapshot
      const page = await h.search(req.ctx, search)
      return reply.type(FHIR_CONTENT_TYPE).send(searchsetBundle(fhirBaseOf(req), h.type, search, page))
    })
    const read = h.read
    if (!read) continue
    app.get(`${path}/:id`, { schema: { hide: true } }, async (req, reply) => {
      const { id } = req.params as { id: string }
      const resource = ID.test(id) ? await read(req.ctx, id) : null
      if (!resource) throw new NotFound(`No ${h.type} ${id}`)
      return sendFhir(reply, resource)
    })
  }
}
