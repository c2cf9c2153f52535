import type {} from '@fastify/swagger'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import proxy from '@fastify/http-proxy'
import {
  FHIR_BASE_HEADER,
  NotImplemented,
  AssertionBatcher,
  UpstreamUnavailable,
  sendProblem,
  type AssertionSigner,
} from '@clinic/platform'
import { BASES } from '../bases'
import { spreadLookup } from '../spread-lookup'
import { FHIR_BASE, PLANNED, ROUTED_SERVICES, type RoutedService, type Upstreams } from '../families'
import { forwardHeaders, prepareForward, type Forward } from './forward'

/**
 * How long the gateway waits for a service's answer headers, and then between body chunks, before
 * 503: above the longest wait a route may hold on purpose, the change feed's 30 s long poll
 * (`GET /events?wait=30`, DESIGN.md section 10), with room for the page it then reads.
 */
export const UPSTREAM_TIMEOUT_MS = 40_000
/**
 * Families whose reads may be long polls, and the query parameter (seconds) that asks for the
 * wait: the access line counts a request slow only past the wait it asked for (request-log.ts).
 */
const LONG_POLLS: Readonly<Record<string, string>> = { events: 'wait' }

/**
 * Under both bases: every planned area answers 501 not_implemented, every routed family is
 * proxied to its service (undici keep-alive) with a signed assertion instead of the client's
 * credentials; a relative Location gets the client's base; a service that does not answer is 503.
 */
export async function proxyRoutes(
  app: FastifyInstance,
  {
    upstreams,
    signer,
    publicBaseUrl,
  }: { upstreams: Upstreams; signer: AssertionSigner; publicBaseUrl: string },
) {
  for (const { service } of ROUTED_SERVICES)
    if (!upstreams[service]) throw new Error(`no upstream URL for the ${service} service`)
  // Declared, so that every request object has them from its construction: set on some requests
  // only, they would give those another shape (slower reads, and a property store allocated each).
  app.decorateRequest('rawBody', undefined)
  app.decorateRequest('assertion', undefined)
  const batcher = new AssertionBatcher(signer)
  for (const base of BASES) {
    for (const { family, area } of PLANNED) {
      const planned = async () => {
        throw new NotImplemented(area)
      }
      app.all(`${base}/${family}`, { schema: { hide: true } }, planned)
      app.all(`${base}/${family}/*`, { schema: { hide: true } }, planned)
    }
    for (const s of ROUTED_SERVICES)
      await serviceRoutes(app, base, s, {
        upstreams,
        signer,
        batcher,
        fhirBase: `${publicBaseUrl.replace(/\/$/, '')}${base}${FHIR_BASE}`,
      })
  }
  // Pages for people (services.json `pages`, e.g. a patient link /p/a/<token>), outside the API
  // bases: GET, and POST of a form, with no API token and so no assertion (the service checks the
  // link's own signed token). Rate-limited per address as every request; no access event (public).
  for (const { service, pages } of ROUTED_SERVICES)
    for (const page of pages)
      await app.register(proxy, {
        ...proxyOptions(upstreams[service]!, { base: '', service, signer, batcher }),
        prefix: page.slice(0, -1),
        rewritePrefix: page.slice(0, -1),
        httpMethods: ['GET', 'POST'],
        config: { public: true, page: true },
      })
}

/** One service's routes under one base: its families, FHIR types, provider callbacks and larger bodies. */
async function serviceRoutes(
  app: FastifyInstance,
  base: string,
  { families, service, webhooks, bodyLimits, uploads, names, fhirTypes }: RoutedService,
  {
    upstreams,
    signer,
    batcher,
    fhirBase,
  }: { upstreams: Upstreams; signer: AssertionSigner; batcher: AssertionBatcher; fhirBase: string },
) {
  // An upload's POST is a route of its family's proxy (the family's root, or a path under it,
  // for which a route of its own would collide with the family's): marked on registration.
  const marked = new Map(Object.entries(uploads).map(([path, limit]) => [`${base}${path}`, limit]))
  if (marked.size)
    app.addHook('onRoute', (route) => {
      const limit = marked.get(route.url.length > 1 ? route.url.replace(/\/$/, '') : route.url)
      const methods = [route.method].flat()
      if (limit !== undefined && methods.includes('POST')) route.config = { ...route.config, upload: limit }
    })
  const options = proxyOptions(upstreams[service]!, { base, service, signer, batcher })
  for (const family of families)
    await app.register(proxy, {
      ...(names.includes(family)
        ? proxyOptions(upstreams[service]!, { base, service, signer, batcher, names: true })
        : options),
      prefix: `${base}/${family}`,
      rewritePrefix: `/${family}`,
      httpMethods: ['GET', 'POST', 'PATCH', 'PUT', 'DELETE'],
      ...(LONG_POLLS[family] ? { config: { longPoll: LONG_POLLS[family] } } : {}),
    })
  // The FHIR resource types it maps (DESIGN.md section 19): read-only, under the FHIR base.
  const fhirOptions = proxyOptions(upstreams[service]!, { base, service, signer, batcher, fhirBase })
  for (const type of fhirTypes)
    await app.register(proxy, {
      ...fhirOptions,
      prefix: `${base}${FHIR_BASE}/${type}`,
      rewritePrefix: `${FHIR_BASE}/${type}`,
      httpMethods: ['GET'],
    })
  // A provider's callbacks carry no API token and may be form-encoded: the service checks
  // their signature. No assertion is forwarded, so the service sees no principal.
  for (const path of webhooks)
    await app.register(proxy, {
      ...options,
      prefix: `${base}${path}`,
      rewritePrefix: path,
      httpMethods: ['POST'],
      config: { public: true, webhook: true },
    })
  // Routes that take larger bodies than the default (a 64 KiB email body, JSON-escaped).
  for (const [path, bodyLimit] of Object.entries(bodyLimits))
    await app.register(proxy, {
      ...options,
      prefix: `${base}${path}`,
      rewritePrefix: path,
      httpMethods: ['POST'],
      config: { bodyLimit },
    })
}

/** How one service is reached under one base ('' for pages): keep-alive, headers, 503 when away. */
function proxyOptions(upstream: string, o: Forward) {
  const { base, service } = o
  return {
    upstream,
    preHandler: prepareForward(o),
    internalRewriteLocationHeader: false,
    // reply-from's own lines name the URL with its query string (a patient's name in `?q=`, a link's
    // token in a page's path): the platform's one access line per request names the route instead.
    disableRequestLogging: true,
    undici: {
      connections: 128,
      pipelining: 1,
      // Each new connection to one of the service's replicas, chosen at random (spread-lookup.ts).
      connect: { lookup: spreadLookup },
      keepAliveTimeout: 30_000,
      headersTimeout: UPSTREAM_TIMEOUT_MS,
      bodyTimeout: UPSTREAM_TIMEOUT_MS,
    },
    replyOptions: {
      rewriteRequestHeaders: (req: unknown, headers: Record<string, string | string[] | undefined>) =>
        o.fhirBase
          ? { ...forwardHeaders(req as FastifyRequest, headers), [FHIR_BASE_HEADER]: o.fhirBase }
          : forwardHeaders(req as FastifyRequest, headers),
      rewriteHeaders: (headers: Record<string, string | string[] | undefined>) => {
        // The service's keep-alive is about its connection to the gateway, not the client's
        // (which may have asked for Connection: close).
        delete headers.connection
        delete headers['keep-alive']
        const location = headers.location
        if (typeof location === 'string' && location.startsWith('/')) headers.location = base + location
        return headers
      },
      onError: (reply: unknown, { error }: { error: Error }) => {
        const r = reply as FastifyReply
        r.request.log.warn({ err: error.message, upstream: service }, 'upstream unavailable')
        void sendProblem(r, new UpstreamUnavailable(`The ${service} service is unavailable; retry shortly`))
      },
    },
  }
}
