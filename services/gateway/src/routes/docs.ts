import type {} from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import swaggerUi from '@fastify/swagger-ui'
import { request } from 'undici'
import { assertionHeaders, uuidv7, type AssertionSigner, type Principal } from '@clinic/platform'
import { BASES } from '../bases'
import { PLANNED, ROUTED_SERVICES, type Upstreams } from '../families'
import { finishDocument } from '../openapi/merge'
import type { OpenApi } from '../openapi/types'

export type { OpenApi }

const REFRESH_MS = 30_000

/**
 * Who the gateway is when it reads a service's OpenAPI document: no company, user or token. A
 * service answers /openapi.json to the internal network or with an assertion addressed to it, so
 * the gateway signs one (the merge works whatever INTERNAL_NETWORKS says of the gateway's address).
 */
const DOCS_READER: Principal = {
  companyId: 0,
  userId: '',
  username: 'gateway',
  tokenId: '',
  companyCenters: [],
  allowedCenters: [],
}

/** "Documents, consents and clinical (ophthalmology)" from the planned areas of the table. */
const plannedAreas = () => {
  const areas = PLANNED.map((p) => p.area)
  const text = areas.length > 1 ? `${areas.slice(0, -1).join(', ')} and ${areas.at(-1)}` : (areas[0] ?? '')
  return text.charAt(0).toUpperCase() + text.slice(1)
}

/**
 * One OpenAPI 3.1 document for the whole API, merged from the documents every service generates
 * from its route schemas (the schemas that validate requests are the ones documented), in the
 * order of the services' table, so the same documents always give the same bytes. Internal
 * routes are left out. docs/openapi.json is this document, committed (`npm run openapi`).
 */
export function mergeOpenApi(version: string, docs: Partial<Record<string, OpenApi>>): OpenApi {
  // A deep copy: the documents are kept and merged again later.
  const copies = JSON.parse(JSON.stringify(docs)) as Partial<Record<string, OpenApi>>
  const paths: NonNullable<OpenApi['paths']> = {}
  const tags: NonNullable<OpenApi['tags']> = []
  const schemas: Record<string, unknown> = {}
  for (const { service } of ROUTED_SERVICES) {
    const doc = copies[service]
    for (const [path, item] of Object.entries(doc?.paths ?? {}))
      if (!path.startsWith('/internal')) paths[path] = item
    tags.push(...(doc?.tags ?? []))
    Object.assign(schemas, doc?.components?.schemas)
  }
  const planned = PLANNED.length
    ? ` ${plannedAreas()} areas are announced and answer 501 not_implemented.`
    : ''
  return finishDocument({
    openapi: '3.1.0',
    info: {
      title: 'Clinic API',
      version,
      description:
        'Multi-tenant clinic management API. Every request is scoped to the company of the API token. ' +
        'Errors are application/problem+json with a stable `code`.' +
        planned,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [
      { url: '/api', description: 'current version' },
      { url: '/api/3', description: 'current version (local development base)' },
    ],
    security: [{ serviceToken: [] }, { basic: [] }],
    tags,
    paths,
    components: {
      schemas,
      securitySchemes: {
        serviceToken: { type: 'apiKey', in: 'header', name: 'X-service-Token' },
        basic: { type: 'http', scheme: 'basic', description: 'username:token' },
      },
    },
  })
}

export interface DocsOptions {
  version: string
  upstreams: Upstreams
  /** Signs the assertion the gateway reads each service's document with. */
  signer: AssertionSigner
}

export async function docsRoutes(app: FastifyInstance, deps: DocsOptions) {
  const docs: Partial<Record<string, OpenApi>> = {}
  let merged = mergeOpenApi(deps.version, docs)
  let fetchedAt = 0

  async function refresh() {
    const names = ROUTED_SERVICES.map((f) => f.service)
    await Promise.all(
      names.map(async (name) => {
        try {
          const headers = await assertionHeaders(
            { auth: DOCS_READER, requestId: uuidv7() },
            { method: 'GET', path: '/openapi.json', audience: name },
            deps.signer,
          )
          const res = await request(`${deps.upstreams[name]!}/openapi.json`, {
            headers,
            headersTimeout: 2000,
            bodyTimeout: 2000,
          })
          if (res.statusCode === 200) docs[name] = (await res.body.json()) as OpenApi
          else await res.body.dump()
        } catch {
          /* keep the last copy; try again next time */
        }
      }),
    )
    merged = mergeOpenApi(deps.version, docs)
    fetchedAt = Object.keys(docs).length === names.length ? Date.now() : 0
  }

  const current = async () => {
    if (Date.now() - fetchedAt > REFRESH_MS) await refresh()
    return merged
  }

  for (const base of BASES)
    app.get(`${base}/openapi.json`, { config: { public: true }, schema: { hide: true } }, current)

  // Swagger UI reads the merged document (kept fresh by the route above).
  app.addHook('onRequest', async (req) => {
    if (req.url.startsWith('/api/docs')) await current()
  })
  await app.register(swaggerUi, {
    routePrefix: '/api/docs',
    transformSpecification: () => merged as never,
    transformSpecificationClone: false,
    uiConfig: { docExpansion: 'list', deepLinking: true },
  })
}
