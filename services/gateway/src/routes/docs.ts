import type {} from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import swaggerUi from '@fastify/swagger-ui'
import { request } from 'undici'
import type { Deps, Upstreams } from '../app'
import { BASES } from '../bases'

type OpenApi = {
  paths?: Record<string, unknown>
  components?: { schemas?: Record<string, unknown>; securitySchemes?: Record<string, unknown> }
  [k: string]: unknown
}

const REFRESH_MS = 30_000

/**
 * One OpenAPI 3.1 document for the whole API, merged from the documents every service generates
 * from its route schemas (the schemas that validate requests are the ones documented). Internal
 * routes are left out. A service that is down is retried on the next read.
 */
export function mergeOpenApi(version: string, docs: Partial<Record<keyof Upstreams, OpenApi>>): OpenApi {
  const paths: Record<string, unknown> = {}
  const schemas: Record<string, unknown> = {}
  for (const doc of Object.values(docs)) {
    for (const [path, item] of Object.entries(doc?.paths ?? {}))
      if (!path.startsWith('/internal')) paths[path] = item
    Object.assign(schemas, doc?.components?.schemas ?? {})
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Clinic API',
      version,
      description:
        'Multi-tenant clinic management API. Every request is scoped to the company of the API token. ' +
        'Errors are application/problem+json with a stable `code`. Documents, consents and clinical ' +
        '(ophthalmology) areas are announced and answer 501 not_implemented.',
    },
    servers: [
      { url: '/api', description: 'current version' },
      { url: '/api/3', description: 'current version (local development base)' },
    ],
    security: [{ serviceToken: [] }, { basic: [] }],
    paths,
    components: {
      schemas,
      securitySchemes: {
        serviceToken: { type: 'apiKey', in: 'header', name: 'X-service-Token' },
        basic: { type: 'http', scheme: 'basic', description: 'username:token' },
      },
    },
  }
}

export async function docsRoutes(app: FastifyInstance, { deps }: { deps: Deps }) {
  const docs: Partial<Record<keyof Upstreams, OpenApi>> = {}
  let merged = mergeOpenApi(deps.version, docs)
  let fetchedAt = 0

  async function refresh() {
    const names = Object.keys(deps.upstreams) as Array<keyof Upstreams>
    await Promise.all(
      names.map(async (name) => {
        try {
          const res = await request(`${deps.upstreams[name]}/openapi.json`, {
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
