// Names for parts of the generated schema that hold whatever schema.ts is regenerated to: every alias
// is computed from `paths` and `components`, none names a path or a component that may go away.
import type { components, paths } from './schema'

/** The named schemas of the document (`components.schemas`), or none. */
export type Schemas = components extends { schemas: infer S } ? S : Record<string, never>

/** One named schema: `Schema<'Patient'>`. */
export type Schema<Name extends keyof Schemas> = Schemas[Name]

/** The error body of DESIGN.md section 3, for a document that has no `Problem` schema (yet). */
export interface ProblemShape {
  type: string
  title: string
  status: number
  code: string
  detail?: string
  request_id: string
  errors?: { path: string; message: string }[]
}

/** An `application/problem+json` body: the document's `Problem` schema when it has one. */
export type Problem = Schemas extends { Problem: infer P } ? P : ProblemShape

type GetOf<P extends keyof paths> = paths[P] extends { get: infer Op } ? Op : never
type JsonOk<Op> = Op extends { responses: { 200: { content: { 'application/json': infer Body } } } }
  ? Body
  : never
type NoPathParams<Op> = Op extends { parameters: { path?: never } } ? true : false

/** Paths whose GET answers a list page (`{ data: [...], meta: { next } }`) and takes no path params. */
export type ListPath = {
  [P in keyof paths]: [JsonOk<GetOf<P>>] extends [never]
    ? never
    : JsonOk<GetOf<P>> extends { data: unknown[]; meta: { next?: unknown } }
      ? NoPathParams<GetOf<P>> extends true
        ? P
        : never
      : never
}[keyof paths]

/** The item type of a list path: `ListItem<'/patients'>` is a patient. */
export type ListItem<P extends ListPath> = JsonOk<GetOf<P>> extends { data: (infer Item)[] } ? Item : never

/** The query parameters of a list path. */
export type ListQuery<P extends ListPath> =
  GetOf<P> extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never
