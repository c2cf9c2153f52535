// Names for parts of the generated schema, computed from `paths` and `components` so they follow
// whatever schema.ts is regenerated to; only `Problem`, part of every error, is named.
import type { components, paths } from './schema'

/** The named schemas of the document (`components.schemas`). */
export type Schemas = components['schemas']

/** One named schema: `Schema<'Patient'>`. */
export type Schema<Name extends keyof Schemas> = Schemas[Name]

/** An `application/problem+json` body (RFC 9457): the document's `Problem` schema. */
export type Problem = components['schemas']['Problem']

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
