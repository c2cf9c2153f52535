import serviceList from '@clinic/platform/services.json'
import { call } from './client'

/**
 * The operations of the API as the running gateway serves them (/api/openapi.json), checked
 * against packages/platform/services.json: the sweeps (isolation, scopes, fuzz) enumerate these, so
 * a new service's operations are covered without editing them.
 */

export interface Schema {
  $ref?: string
  type?: string | string[]
  enum?: unknown[]
  anyOf?: Schema[]
  format?: string
  pattern?: string
  minLength?: number
  maxLength?: number
  minimum?: number
  maximum?: number
  multipleOf?: number
  minItems?: number
  maxItems?: number
  items?: Schema
  properties?: Record<string, Schema>
  required?: string[]
  examples?: unknown[]
}

export interface Parameter {
  in: string
  name: string
  required?: boolean
  schema?: Schema
}

interface DocOperation {
  parameters?: Parameter[]
  requestBody?: { content: Record<string, { schema?: Schema; example?: unknown }> }
  responses?: Record<string, unknown>
  security?: unknown[]
  tags?: string[]
  'x-scope'?: unknown
  'x-also-scopes'?: unknown
}

export interface OpenApi {
  paths: Record<string, Record<string, DocOperation>>
  components?: { schemas?: Record<string, Schema> }
}

export interface Operation {
  /** Lower case, as in the document. */
  method: string
  path: string
  /** The path family: its first segment, which services.json routes to a service. */
  family: string
  params: Parameter[]
  /** The JSON request body's schema, null without one. */
  body: Schema | null
  /** The document's example of the body. */
  example?: unknown
  /** A list: a GET that pages with `after`. */
  list: boolean
  /** What the gateway documents as the operation's scope (the scopes suite checks it against DESIGN). */
  xScope: unknown
  /** The scopes the gateway documents as needed beside it (x-also-scopes). */
  xAlso: string[]
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete']

/** The families services.json routes to a resource service, and the announced (planned) ones. */
export const SERVED_FAMILIES = new Set(serviceList.services.flatMap((s) => Object.keys(s.families ?? {})))
const PLANNED_FAMILIES = new Set(
  ((serviceList as { planned?: Array<{ family: string }> }).planned ?? []).map((p) => p.family),
)

export const familyOf = (path: string) => path.split('/')[1] ?? ''

/**
 * The FHIR R4 types services.json maps (`fhir`), as their paths: the reads of the FHIR layer, each
 * under its type's scope, not operations of a path family (the sweeps leave them out).
 */
const FHIR_TYPE_PATHS = new Set(
  serviceList.services.flatMap((s) =>
    Object.keys((s as { fhir?: Record<string, string> }).fhir ?? {}).map((type) => `/fhir/R4/${type}`),
  ),
)
const isFhirRead = (path: string) => FHIR_TYPE_PATHS.has(path.split('/').slice(0, 4).join('/'))

export async function fetchDocument(base?: string): Promise<OpenApi> {
  const res = await call('GET', '/openapi.json', { base, timeoutMs: 30_000 })
  if (res.status !== 200) throw new Error(`GET /openapi.json: ${res.status}`)
  return res.body as OpenApi
}

/** A schema with its `$ref` followed. */
export const deref = (s: Schema, doc: OpenApi): Schema =>
  s.$ref ? (doc.components?.schemas?.[s.$ref.split('/').pop()!] ?? {}) : s

function operation(doc: OpenApi, path: string, method: string, o: DocOperation): Operation {
  // An upload documents its fields as a multipart/form-data object (the client sends it so).
  const json = o.requestBody?.content['application/json'] ?? o.requestBody?.content['multipart/form-data']
  return {
    method,
    path,
    family: familyOf(path),
    params: o.parameters ?? [],
    body: o.requestBody ? (json?.schema ? deref(json.schema, doc) : {}) : null,
    example: json?.example,
    list: method === 'get' && (o.parameters ?? []).some((p) => p.in === 'query' && p.name === 'after'),
    xScope: o['x-scope'],
    xAlso: Array.isArray(o['x-also-scopes']) ? o['x-also-scopes'].map(String) : [],
  }
}

/**
 * Every operation that needs a token and serves a company's data: not the public ones (`security:
 * []`: provider callbacks, checked by signature, and /health), the announced areas (501 for
 * everyone until served) nor the FHIR types' reads (services.json `fhir`). One under a family
 * services.json neither routes nor announces throws, naming it: the sweeps would not know what it is.
 */
export function apiOperations(doc: OpenApi): Operation[] {
  const paths = Object.entries(doc.paths).filter(([path]) => !isFhirRead(path))
  const ops = paths.flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([m, o]) => METHODS.includes(m) && o.security?.length !== 0 && !o.tags?.includes('planned'))
      .map(([m, o]) => operation(doc, path, m, o)),
  )
  const stray = ops.filter((o) => !SERVED_FAMILIES.has(o.family) && !PLANNED_FAMILIES.has(o.family))
  if (stray.length)
    throw new Error(
      `operations outside the families of services.json: ${stray.map((o) => `${o.method} ${o.path}`).join(', ')}`,
    )
  return ops.filter((o) => SERVED_FAMILIES.has(o.family))
}

/** The public POST operations that take a form body: provider callbacks, checked by their signature. */
export function callbackOperations(doc: OpenApi): Operation[] {
  return Object.entries(doc.paths).flatMap(([path, methods]) =>
    Object.entries(methods)
      .filter(([m, o]) => m === 'post' && o.security?.length === 0)
      .flatMap(([method, o]) => {
        const form = o.requestBody?.content['application/x-www-form-urlencoded']
        return form ? [{ ...operation(doc, path, method, o), body: form.schema ?? {} }] : []
      }),
  )
}

/** Path parameters in order (`/practitioners/{id}/time-off/{time_off_id}` -> id, time_off_id). */
export const pathParams = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!)

/**
 * The collection a path parameter names a record of: the path up to it
 * (`/practitioners/{id}/time-off/{time_off_id}`: `/practitioners` for id,
 * `/practitioners/{id}/time-off` for time_off_id).
 */
export const collectionOf = (path: string, param: string) => path.slice(0, path.indexOf(`/{${param}}`))
