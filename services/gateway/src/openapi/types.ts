/** The parts of an OpenAPI 3.1 document the merge reads and writes (loosely typed JSON). */
export type Json = Record<string, unknown>

export interface OpenApi {
  paths?: Record<string, Record<string, Operation>>
  components?: Record<string, Record<string, unknown> | undefined> & { schemas?: Record<string, unknown> }
  tags?: Array<{ name: string; description?: string }>
  [k: string]: unknown
}

export interface Operation {
  operationId?: string
  tags?: string[]
  parameters?: Array<{ in: string; name: string; schema?: Json; required?: boolean; description?: string }>
  requestBody?: { content?: Record<string, { schema?: Json }> }
  responses?: Record<string, Response>
  security?: unknown[]
  [k: string]: unknown
}

export interface Response {
  description: string
  headers?: Record<string, { schema?: Json; description?: string; required?: boolean }>
  content?: Record<string, { schema?: Json; [k: string]: unknown }>
}

export const METHODS = ['get', 'put', 'post', 'patch', 'delete'] as const

/** Every operation of the document, with its path and method. */
export function* operationsOf(doc: OpenApi): Generator<[string, string, Operation]> {
  for (const [path, item] of Object.entries(doc.paths ?? {}))
    for (const method of METHODS) if (item[method]) yield [path, method, item[method]]
}

export const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
