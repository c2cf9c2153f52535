import { operationsOf, ref, type Json, type OpenApi } from './types'

/** JSON Schema keywords whose values are schemas, maps of schemas, or lists of schemas. */
const ONE = ['additionalProperties', 'items', 'not', 'if', 'then', 'else', 'contains', 'propertyNames']
const MAP = ['properties', 'patternProperties', '$defs', 'dependentSchemas']
const LIST = ['anyOf', 'oneOf', 'allOf', 'prefixItems']
const NAME = /^[A-Z][A-Za-z0-9]*$/

/** The same JSON whatever the order of its keys: how two copies of a schema are compared. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`
  if (value && typeof value === 'object')
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical((value as Json)[k])}`)
      .join(',')}}`
  return JSON.stringify(value)
}

/** What must agree between two copies of a named schema (an example is documentation). */
const comparable = (schema: Json) => {
  const { examples: _e, example: _x, ...rest } = schema
  return canonical(rest)
}

/**
 * Moves every schema with a `title` (a TypeBox schema named in a service: `Patient`,
 * `PatientCreate`, `PatientList`) to `components.schemas` and puts a `$ref` in its place, inner
 * ones first. Two different schemas under one title are a mistake in a service: the merge stops.
 */
export function hoistNamedSchemas(doc: OpenApi): void {
  const schemas = (doc.components ??= {}).schemas ?? {}
  doc.components.schemas = schemas
  const visit = (schema: unknown): unknown => {
    if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return schema
    const s = schema as Json
    for (const k of ONE) if (k in s) s[k] = visit(s[k])
    for (const k of MAP)
      if (s[k] && typeof s[k] === 'object')
        for (const [name, sub] of Object.entries(s[k] as Json)) (s[k] as Json)[name] = visit(sub)
    for (const k of LIST) if (Array.isArray(s[k])) s[k] = (s[k] as unknown[]).map(visit)
    if (typeof s.title !== 'string' || !NAME.test(s.title)) return s
    const known = schemas[s.title] as Json | undefined
    if (known && comparable(known) !== comparable(s))
      throw new Error(`OpenAPI: two different schemas are named ${s.title}`)
    // The copy that kept its examples (fastify-swagger moves a body's to its media type) names it.
    if (!known || (!known.examples && s.examples)) schemas[s.title] = s
    return ref(s.title)
  }
  for (const [, , op] of operationsOf(doc)) {
    for (const p of op.parameters ?? []) if (p.schema) p.schema = visit(p.schema) as Json
    for (const media of Object.values(op.requestBody?.content ?? {}))
      if (media.schema) media.schema = visit(media.schema) as Json
    for (const response of Object.values(op.responses ?? {}))
      for (const media of Object.values(response.content ?? {}))
        if (media.schema) media.schema = visit(media.schema) as Json
  }
  doc.components.schemas = Object.fromEntries(Object.entries(schemas).sort(([a], [b]) => a.localeCompare(b)))
}
