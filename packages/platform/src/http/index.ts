import Ajv from 'ajv'
import addFormats from 'ajv-formats'
import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import type { FastifyInstance } from 'fastify'
import type { Knex } from 'knex'
import type { AssertionKeys } from '../assertion-keys'
import { assertionHooks } from './assertion-hooks'
import { DEFAULT_INTERNAL_NETWORKS, internalNetworkMatcher } from './internal-networks'
import { VERSION_HEADER } from './limits'
import { httpMetrics } from './metrics'
import { problemHandlers } from './problems'
import { probes, type ReadinessCheck } from './probes'
import { requestLog } from './request-log'
import { routeRules } from './route-rules'
import { serverSpans } from './server-span'
import { textSafety } from './text-safety'

export * from './answer'
export * from './fhir-routes'
export * from './assertion-hooks'
export * from './internal-networks'
export * from './internal-routes'
export * from './limits'
export * from './link-pages'
export * from './link-page-routes'
export * from './metrics'
export * from './options'
export * from './problems'
export * from './probes'
export * from './request-log'
export * from './route-config'
export * from './route-rules'
export * from './server-span'

export interface HttpPluginOptions {
  /** The service's name (services.json): assertions addressed to another service are refused. */
  service: string
  version: string
  /** The gateway's public key and the callers' (by issuer); null only in the gateway itself. */
  assertionKeys: AssertionKeys | null
  /**
   * Addresses and CIDR ranges that may read /metrics and /openapi.json without an assertion
   * (INTERNAL_NETWORKS; loopback always may). Default DEFAULT_INTERNAL_NETWORKS.
   */
  internalNetworks?: readonly string[]
  readiness?: ReadinessCheck[]
  description?: string
  /** The OpenAPI tags of its routes, described (the gateway's merged document lists them). */
  tags?: Array<{ name: string; description: string }>
  /** The service's knex: every statement it sends is counted in `db_statements_total`. */
  knex?: Knex
  /** The access log's clock (monotonic ms; `performance.now` unless a test moves its own). */
  clock?: () => number
}

/** Marks a body schema that documents a body its route reads as a stream (never validated here). */
export const STREAMED_BODY_SCHEMA = 'x-streamed-body'

/**
 * Two validators: query strings and path params arrive as text and are coerced ("25" -> 25);
 * JSON bodies are taken as sent, so `"true"` or `null` for a boolean is an error, not a guess.
 * Both refuse unknown fields (never silently dropped) and report every bad field at once.
 */
function validatorCompiler() {
  // allowUnionTypes: nullable fields are `type: [T, 'null']`, one clear error per field.
  const common = {
    removeAdditional: false,
    allErrors: true,
    useDefaults: true,
    allowUnionTypes: true,
    strict: false,
  } as const
  const make = (coerceTypes: false | 'array') => addFormats(new Ajv({ ...common, coerceTypes }))
  const body = make(false)
  const text = make('array')
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) =>
    // A body the route reads as a stream (STREAMED_BODY_SCHEMA: a multipart upload) is described
    // for the OpenAPI document only: the route checks its parts itself as they arrive.
    httpPart === 'body' && (schema as Record<string, unknown>)[STREAMED_BODY_SCHEMA] === true
      ? () => true
      : (httpPart === 'body' ? body : text).compile(schema)
}

/**
 * What every service (and the gateway) is on HTTP, one concern a module: the gateway assertion,
 * route rules, text safety, problem+json errors, the version and request-id headers, one access
 * line and one server span per request, metrics, probes and the OpenAPI document of its routes.
 */
async function platformHttp(app: FastifyInstance, opts: HttpPluginOptions) {
  app.setValidatorCompiler(validatorCompiler())
  serverSpans(app)
  // JSON only: anything else is 415, as in the gateway. PATCH bodies follow JSON merge patch
  // (RFC 7396) at the top level, so its media type is JSON too.
  app.removeContentTypeParser('text/plain')
  app.addContentTypeParser(
    'application/merge-patch+json',
    { parseAs: 'string' },
    app.getDefaultJsonParser('error', 'error'),
  )
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: `clinic ${opts.service}`, version: opts.version, description: opts.description },
      tags: opts.tags ?? [],
    },
  })
  const isInternal = internalNetworkMatcher(opts.internalNetworks ?? DEFAULT_INTERNAL_NETWORKS)
  assertionHooks(app, { service: opts.service, assertionKeys: opts.assertionKeys, isInternal })
  routeRules(app)
  textSafety(app)
  problemHandlers(app)
  httpMetrics(app, { service: opts.service, knex: opts.knex })
  requestLog(app, opts.clock)
  // Callback hooks where nothing is awaited: an async hook costs a promise per request.
  app.addHook('onSend', (req, reply, payload, done) => {
    reply.header(VERSION_HEADER, opts.version)
    reply.header('x-request-id', req.id)
    done(null, payload)
  })
  probes(app, opts.readiness ?? [])
}

export const http = fp(platformHttp, { name: 'clinic-platform-http', fastify: '5.x' })
