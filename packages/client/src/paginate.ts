// Lists answer `{ data, meta: { next } }`; `?after=<next>` reads the following page in the same order
// without the cost (or the 10,000 cap) of a growing offset.
import { ClinicApiError } from './errors'
import type { ListItem, ListPath, ListQuery } from './types'

interface Page {
  data: unknown[]
  meta?: { next?: string | null }
}

/** openapi-fetch's GET, loosened: its types cannot follow a path chosen by a caller's type parameter. */
export type LooseGet = (
  path: string,
  init: { params: { query: Record<string, unknown> } },
) => Promise<{ data?: unknown; error?: unknown; response: Response }>

/** Every item of a list, page after page, until `meta.next` is null. Throws `ClinicApiError`. */
export async function* paginate<P extends ListPath>(
  get: LooseGet,
  path: P,
  query?: ListQuery<P>,
): AsyncGenerator<ListItem<P>, void, undefined> {
  let params: Record<string, unknown> = { ...query }
  for (;;) {
    const { data, error, response } = await get(path, { params: { query: params } })
    if (!response.ok) throw new ClinicApiError(response, error)
    const page = data as Page
    yield* page.data as ListItem<P>[]
    const next = page.meta?.next
    if (!next) return
    // The cursor already encodes the position: an offset next to it would be refused.
    const { offset: _offset, ...rest } = params
    params = { ...rest, after: next }
  }
}
