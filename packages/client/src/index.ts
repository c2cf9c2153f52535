// A typed client of the Clinic API: openapi-fetch over the generated `paths`, plus what every
// integrator would otherwise write by hand (auth, Idempotency-Key, If-Match, Retry-After, paging).
import createClient, { type Client } from 'openapi-fetch'
import { paginate, type LooseGet } from './paginate'
import { realSleep, retryingFetch, type Fetch } from './retry-after'
import { safeWrites } from './safe-writes'
import type { paths } from './schema'
import type { ListItem, ListPath, ListQuery } from './types'

export type { components, operations, paths } from './schema'
export type { ListItem, ListPath, ListQuery, Problem, Schema, Schemas } from './types'
export { ClinicApiError, unwrap } from './errors'
export { retryDelay, type Fetch } from './retry-after'

/** An API token (`X-service-Token`), or HTTP Basic with the token's username. */
export type ClinicAuth =
  { token: string; basic?: never } | { basic: { username: string; token: string }; token?: never }

export type ClinicClientOptions = ClinicAuth & {
  /** e.g. `http://127.0.0.1:8080/api` */
  baseUrl: string
  fetch?: Fetch
  /** Retries of a 429 or 503 that carries Retry-After (default 2). */
  maxRetries?: number
  /** A longer Retry-After is not waited for: the 429/503 is returned (default 60). */
  maxRetryAfterSeconds?: number
  sleep?: (ms: number) => Promise<void>
  /** Makes the Idempotency-Key of a POST the caller sent none for (default `crypto.randomUUID`). */
  idempotencyKey?: () => string
}

export type ClinicClient = Client<paths> & {
  /** Every item of a list endpoint, following `meta.next` with `?after=`. */
  paginate<P extends ListPath>(path: P, query?: ListQuery<P>): AsyncGenerator<ListItem<P>, void, undefined>
}

export function createClinicClient(options: ClinicClientOptions): ClinicClient {
  // Looked up at call time and called unbound: browsers refuse a `fetch` detached from `window`.
  const baseFetch: Fetch = options.fetch ?? ((request, init) => globalThis.fetch(request, init))
  const fetch = retryingFetch(baseFetch, {
    maxRetries: options.maxRetries ?? 2,
    maxWaitMs: (options.maxRetryAfterSeconds ?? 60) * 1000,
    sleep: options.sleep ?? realSleep,
  })
  const client = createClient<paths>({ baseUrl: options.baseUrl, headers: authHeaders(options), fetch })
  client.use(safeWrites(options.idempotencyKey ?? (() => globalThis.crypto.randomUUID())))
  const get = client.GET as unknown as LooseGet
  return { ...client, paginate: (path, query) => paginate(get, path, query) }
}

function authHeaders(auth: ClinicAuth): Record<string, string> {
  if (auth.basic) {
    const credentials = new TextEncoder().encode(`${auth.basic.username}:${auth.basic.token}`)
    return { Authorization: `Basic ${btoa(String.fromCharCode(...credentials))}` }
  }
  return { 'X-service-Token': auth.token }
}
