import type { Resource } from '@medplum/fhirtypes'
import { FHIR_BASE } from './definitions'
import type { FhirSearch } from './search'

/** A page of a search as the store answers it: the resources, the exact total, the next cursor. */
export interface FhirPage<R extends Resource = Resource> {
  resources: R[]
  /** Undefined when the search asked for none (`_total=none`). */
  total: number | undefined
  next: string | null
}

/** One page of a search as a store reads it (fhirSearchPage): its rows, the exact total, the next cursor. */
export interface FhirRows<T> {
  rows: T[]
  total: number | undefined
  next: string | null
}

/** A store's page with each row mapped to its resource (by the row alone: never its index). */
export const fhirPageOf = <T, R extends Resource>(page: FhirRows<T>, map: (row: T) => R): FhirPage<R> => ({
  resources: page.rows.map((row) => map(row)),
  total: page.total,
  next: page.next,
})

/**
 * A `searchset` Bundle (DESIGN.md section 19): `total` exact, `link` `self` and, past a full page,
 * `next` (the same search with `_cursor`); each entry's `fullUrl` is the resource's own URL. `base`
 * is the FHIR base the client reached (FHIR_BASE_HEADER; relative when no gateway sent one).
 */
export function searchsetBundle<R extends Resource>(
  base: string | undefined,
  path: string,
  search: Pick<FhirSearch, 'query' | 'cursor'>,
  page: FhirPage<R>,
) {
  const root = base ?? FHIR_BASE
  const url = (cursor: string | undefined) => {
    const q = new URLSearchParams(search.query)
    if (cursor) q.set('_cursor', cursor)
    const text = q.toString()
    return `${root}/${path}${text ? `?${text}` : ''}`
  }
  return {
    resourceType: 'Bundle' as const,
    type: 'searchset' as const,
    ...(page.total === undefined ? {} : { total: page.total }),
    link: [
      { relation: 'self', url: url(search.cursor) },
      ...(page.next ? [{ relation: 'next', url: url(page.next) }] : []),
    ],
    entry: page.resources.map((resource) => ({
      fullUrl: `${root}/${resource.resourceType}/${resource.id}`,
      resource,
      search: { mode: 'match' as const },
    })),
  }
}
