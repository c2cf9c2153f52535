import { FHIR_BASE, JSON_FORMATS, fhirRoutes, sendFhir } from '@clinic/platform'
import type { FastifyInstance, FastifySchema } from 'fastify'
import type { ConsentStore } from '../domain/consent-store'
import type { ContentStore } from '../domain/content-store'
import type { DocumentStore } from '../domain/document-store'
import { readFhirConsent, searchFhirConsents } from '../domain/fhir-consents'
import {
  fhirBinaryContent,
  readFhirBinary,
  readFhirDocumentReference,
  searchFhirBinaries,
  searchFhirDocumentReferences,
} from '../domain/fhir-documents'
import { sendContent } from './download'

export interface FhirRoutesOptions {
  documents: DocumentStore
  content: ContentStore
  consents: ConsentStore
}

/** Not in the OpenAPI document: the CapabilityStatement describes FHIR. */
const HIDDEN = { schema: { hide: true } as FastifySchema }

/**
 * Whether a Binary read asks for the FHIR resource rather than the bytes: `_format` naming JSON, or
 * an Accept naming application/fhir+json (R4: a Binary read not asking for a FHIR type explicitly
 * answers the bytes in their own type).
 */
function wantsResource(accept: string | undefined, format: unknown): boolean {
  if (typeof format === 'string') return JSON_FORMATS.has(format)
  return /application\/(fhir\+json|json\+fhir)/i.test(accept ?? '')
}

/**
 * FHIR R4 read and search of `DocumentReference`, `Binary` and `Consent` (DESIGN.md section 19;
 * README "FHIR"). Binary's read answers the bytes as a download does (GET /documents/<id>/content:
 * same use case, headers, Range), or the Binary resource with its bytes as `data` when asked for
 * application/fhir+json; its search is the platform's.
 */
export async function documentFhirRoutes(app: FastifyInstance, o: FhirRoutesOptions) {
  await fhirRoutes(app, [
    {
      type: 'DocumentReference',
      read: (ctx, id) => readFhirDocumentReference(ctx, o.documents, id),
      search: (ctx, search) => searchFhirDocumentReferences(ctx, o.documents, search),
    },
    {
      type: 'Consent',
      read: (ctx, id) => readFhirConsent(ctx, o.consents, id),
      search: (ctx, search) => searchFhirConsents(ctx, o.consents, search),
    },
    // Binary's read is routed below: the bytes, or the resource when asked for.
    { type: 'Binary', search: (ctx, search) => searchFhirBinaries(ctx, o.documents, search) },
  ])

  const deps = { store: o.documents, content: o.content }
  app.get(`${FHIR_BASE}/Binary/:id`, HIDDEN, async (req, reply) => {
    const { id } = req.params as { id: string }
    const { _format: format } = req.query as Record<string, unknown>
    reply.header('vary', 'accept')
    if (wantsResource(req.headers.accept, format)) {
      reply.header('cache-control', 'private, no-store')
      reply.header('x-content-type-options', 'nosniff')
      return sendFhir(reply, await readFhirBinary(req.ctx, deps, id))
    }
    const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v)
    const input = { id, range: one(req.headers.range), ifRange: one(req.headers['if-range']) }
    return sendContent(reply, await fhirBinaryContent(req.ctx, deps, input))
  })
}
