import { PLANNED, ROUTED_SERVICES } from '../families'
import { ALSO_NEEDED, operationScope } from '../scopes'
import { hoistNamedSchemas } from './components'
import { HEALTH_SCHEMA, healthPath, plannedPath } from './extra-paths'
import { HEADERS, documentHeaders, headersOf } from './headers'
import { COMMON_ERRORS, PROBLEM_SCHEMAS, PROBLEM_TYPE, problemResponse } from './problems'
import { operationsOf, type OpenApi, type Operation, type Response } from './types'

const TAGS = [
  { name: 'health', description: 'The stack at a glance (public).' },
  {
    name: 'planned',
    description: 'Announced areas: documents, consents and clinical data answer 501 until they ship.',
  },
]

/** Provider callbacks (services.json `webhooks`): no API token, the provider's signature instead. */
const WEBHOOKS = new Set(ROUTED_SERVICES.flatMap((s) => s.webhooks))

/** Needs a token: every operation but those marked `security: []` (callbacks, /health). */
const secured = (op: Operation) => !(Array.isArray(op.security) && op.security.length === 0)

/** Readable names for the 2xx answers fastify-swagger leaves as "Default Response". */
function describeSuccess(op: Operation) {
  for (const [status, response] of Object.entries(op.responses ?? {})) {
    if (!status.startsWith('2') || response.description !== 'Default Response') continue
    const schema = Object.values(response.content ?? {})[0]?.schema as { $ref?: string } | undefined
    const name = schema?.$ref?.split('/').at(-1)
    response.description = name ? `The ${name.replace(/([a-z])([A-Z])/g, '$1 $2').toLowerCase()}` : 'Done'
  }
}

/**
 * An error's response: the shared Problem (or ValidationProblem) schema, unless the service names
 * its own (a `...Problem` title: a problem with members of its own, e.g. a conflict's alternatives).
 */
function errorResponse(status: string, response: Response) {
  const schema = Object.values(response.content ?? {})[0]?.schema as { title?: unknown } | undefined
  if (typeof schema?.title === 'string' && schema.title.endsWith('Problem'))
    return { description: response.description, content: { [PROBLEM_TYPE]: { schema } } }
  return problemResponse(status, response.description)
}

/**
 * Every error as problem+json with the named schema (whatever a service's own document says: the
 * platform sends every error that way), and the errors any operation may meet added where a
 * service did not list them: 401 when secured, 400 with input, 404 with a path id, 403 with
 * `codalmacen`, 413/415 with a body, 429, 500 and 503 always.
 */
function documentErrors(op: Operation, secured: boolean, shared: Set<string>) {
  const responses = (op.responses ??= {})
  for (const [status, response] of Object.entries(responses))
    if (Number(status) >= 400) responses[status] = errorResponse(status, response)
  const params = op.parameters ?? []
  const may: Record<string, boolean> = {
    '400': params.length > 0 || !!op.requestBody,
    '401': secured,
    '403': secured && (typeof op['x-scope'] === 'string' || params.some((p) => p.name === 'codalmacen')),
    '404': params.some((p) => p.in === 'path'),
    '413': !!op.requestBody,
    '415': !!op.requestBody,
    '429': true,
    '500': true,
    '503': true,
  }
  for (const [status, [name]] of Object.entries(COMMON_ERRORS))
    if (may[status] && !responses[status]) {
      responses[status] = { $ref: `#/components/responses/${name}` } as never
      shared.add(status)
    }
  op.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)))
}

/**
 * The scope of a secured operation (operationScope: the gateway's route table, or a FHIR type's) as
 * `x-scope`, any it needs besides as `x-also-scopes`, in its description, and in a 403 of the
 * service's own; none for an operation the table lacks (the gateway asks every scope of it; the e2e
 * suite fails on it), for a FHIR type every token reads, nor for the announced areas.
 */
function documentScope(op: Operation, scope: string | undefined, also: readonly string[] = []) {
  if (!scope) return
  op['x-scope'] = scope
  if (also.length) op['x-also-scopes'] = [...also]
  const all = [scope, ...also]
  const needs = also.length
    ? `Needs the token scopes ${all.map((s) => `\`${s}\``).join(' and ')} (else 403 insufficient_scope).`
    : `Needs the token scope \`${scope}\` (else 403 insufficient_scope).`
  op.description = op.description ? `${String(op.description)}\n\n${needs}` : needs
  const own = op.responses?.['403']
  if (own && !('$ref' in own))
    own.description = `insufficient_scope: the token lacks ${all.join(' or ')}; or ${own.description}`
}

/** Turns the services' merged paths into the document generators and validators read. */
export function finishDocument(doc: OpenApi): OpenApi {
  const paths = (doc.paths ??= {})
  const shared = new Set<string>(['429'])
  for (const p of PLANNED) paths[`/${p.family}`] = plannedPath(p)
  for (const [path, method, op] of operationsOf(doc)) {
    if (WEBHOOKS.has(path)) op.security = []
    if (secured(op)) {
      const key = `${method.toUpperCase()} ${path}`
      documentScope(op, operationScope(key) ?? undefined, ALSO_NEEDED[key])
    }
    documentErrors(op, secured(op), shared)
  }
  hoistNamedSchemas(doc)
  for (const [, , op] of operationsOf(doc)) describeSuccess(op)
  paths['/health'] = healthPath()
  for (const [, method, op] of operationsOf(doc)) documentHeaders(method, op, secured(op))
  doc.components!.schemas = { ...doc.components!.schemas, ...PROBLEM_SCHEMAS, HealthSummary: HEALTH_SCHEMA }
  doc.components!.schemas = Object.fromEntries(
    Object.entries(doc.components!.schemas).sort(([a], [b]) => a.localeCompare(b)),
  )
  doc.components!.headers = HEADERS
  // The shared errors: an operation refers to them; a 401 or 429 of a public route has no rate limit.
  doc.components!.responses = Object.fromEntries(
    Object.entries(COMMON_ERRORS)
      .filter(([status]) => shared.has(status))
      .map(([status, [name, description]]) => [
        name,
        { ...problemResponse(status, description), headers: headersOf(status, status !== '401') },
      ]),
  )
  doc.tags = [...(doc.tags ?? []), ...TAGS]
  return doc
}
