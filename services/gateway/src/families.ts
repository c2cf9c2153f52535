import type { ServiceEntry } from '@clinic/platform'
import { envName } from '@clinic/platform/naming'
import list from '@clinic/platform/services.json'

/** A resource service the gateway routes one or more path families to. */
export interface RoutedService {
  /** The service's name (its `<NAME>_URL` is the upstream). */
  service: string
  /** Default listening port of the service (upstream default http://127.0.0.1:<port>). */
  port: number
  /** First path segments under the API base it answers: `/api/<family>/...`. */
  families: readonly string[]
  /** POST paths forwarded without an API token: the service verifies them (provider signatures). */
  webhooks: readonly string[]
  /**
   * Path prefixes outside the API bases (`/p/`) of pages for people, opened from a message: GET and
   * POST (form bodies) forwarded without an API token; the service checks the link's own token.
   */
  pages: readonly string[]
  /** Paths whose request bodies may be larger than the 64 KiB default, in bytes. */
  bodyLimits: Readonly<Record<string, number>>
}

/** A path family and the service that answers it. */
export interface RoutedFamily {
  family: string
  service: string
  /** What the audit trail calls the resources of the family. */
  resourceType: string
}

/** An announced area that answers 501 not_implemented until its service exists. */
export interface PlannedFamily {
  family: string
  /** How the 501 names it. */
  area: string
  resourceType: string
}

interface PlannedEntry {
  family: string
  area: string
  resource_type: string
}
const source = list as unknown as { services: ServiceEntry[]; planned: PlannedEntry[] }

// A bad entry stops the gateway at start-up, naming it, instead of routing to `undefined`.
const FAMILY = /^[a-z][a-z0-9-]*$/
const PLAIN_PATH = /^[a-z0-9/_-]+$/
for (const s of source.services) {
  const families = Object.entries(s.families ?? {})
  if (!families.length || families.some(([f, type]) => !FAMILY.test(f) || !type))
    throw new Error(`services.json: ${s.name} needs families: { <lowercase path segment>: <resource_type> }`)
  const under = (p: string) => families.some(([f]) => p.startsWith(`/${f}/`)) && PLAIN_PATH.test(p)
  for (const w of s.webhooks ?? [])
    if (!under(w))
      throw new Error(`services.json: webhook ${w} of ${s.name} must be a plain path under its families`)
  for (const [p, limit] of Object.entries(s.body_limits ?? {}))
    if (!under(p) || !Number.isInteger(limit) || limit < 1)
      throw new Error(
        `services.json: body limit ${p} of ${s.name} must be a plain path under its families, and bytes`,
      )
}
// A page prefix is one path segment outside the API and the gateway's own paths, of one service.
const PAGE = /^\/[a-z0-9][a-z0-9_-]*\/$/
const GATEWAY_PATHS = ['/api/', '/health/', '/metrics/']
const pageOwner = new Map<string, string>()
for (const s of source.services)
  for (const p of s.pages ?? []) {
    if (!PAGE.test(p) || GATEWAY_PATHS.includes(p))
      throw new Error(`services.json: page ${p} of ${s.name} must be one path segment outside /api, e.g. /p/`)
    if (pageOwner.has(p)) throw new Error(`services.json: the page ${p} is listed twice`)
    pageOwner.set(p, s.name)
  }
for (const p of source.planned)
  if (!FAMILY.test(p.family) || !p.resource_type)
    throw new Error(
      `services.json: planned ${p.family} needs a family (lowercase path segment) and a resource_type`,
    )

/**
 * The gateway's one table, read from `@clinic/platform/services.json`: routing, the 501 areas,
 * the merged OpenAPI document, the health summary, the upstream configuration and the audit
 * resource types all come from it. A new service is one entry in that file.
 */
export const ROUTED_SERVICES: readonly RoutedService[] = source.services.map((s) => ({
  service: s.name,
  port: s.port,
  families: Object.keys(s.families),
  webhooks: s.webhooks ?? [],
  pages: s.pages ?? [],
  bodyLimits: s.body_limits ?? {},
}))

export const ROUTED: readonly RoutedFamily[] = source.services.flatMap((s) =>
  Object.entries(s.families).map(([family, resourceType]) => ({ family, service: s.name, resourceType })),
)

export const PLANNED: readonly PlannedFamily[] = source.planned.map((p) => ({
  family: p.family,
  area: p.area,
  resourceType: p.resource_type,
}))

const allFamilies = [...ROUTED, ...PLANNED].map((e) => e.family)
const twice = allFamilies.find((f, i) => allFamilies.indexOf(f) !== i)
if (twice) throw new Error(`services.json: the family ${twice} is listed twice`)

/** Upstream base URL per service name (patients -> http://127.0.0.1:8081). */
export type Upstreams = Record<string, string>

/** Path family -> resource type, routed and planned. */
export const RESOURCE_TYPES: ReadonlyMap<string, string> = new Map(
  [...ROUTED, ...PLANNED].map((f) => [f.family, f.resourceType]),
)

/** The env variable naming a service's upstream (DESIGN.md section 6): patients -> PATIENTS_URL (naming.cjs). */
export const upstreamEnv = (service: string) => envName(service, 'URL')
