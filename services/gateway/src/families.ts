import type { ServiceEntry } from '@clinic/platform'
import { envName } from '@clinic/platform/naming'
import list from '@clinic/platform/services.json'

/** A resource service the gateway routes a path family to. */
export interface RoutedFamily {
  /** First path segment under the API base: `/api/<family>/...`. */
  family: string
  /** The service that answers it (its `<NAME>_URL` is the upstream). */
  service: string
  /** Default listening port of the service (upstream default http://127.0.0.1:<port>). */
  port: number
  /** What the audit trail calls the resources of the family. */
  resourceType: string
  /** POST paths forwarded without an API token: the service verifies them (provider signatures). */
  webhooks: readonly string[]
  /** Paths whose request bodies may be larger than the 64 KiB default, in bytes. */
  bodyLimits: Readonly<Record<string, number>>
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
const source = list as { services: ServiceEntry[]; planned: PlannedEntry[] }

// A bad entry stops the gateway at start-up, naming it, instead of routing to `undefined`.
const FAMILY = /^[a-z][a-z0-9-]*$/
for (const e of [...source.services, ...source.planned]) {
  const name = 'name' in e ? e.name : e.family
  if (!FAMILY.test(e.family ?? '') || !e.resource_type)
    throw new Error(`services.json: ${name} needs a family (lowercase path segment) and a resource_type`)
}
for (const s of source.services)
  for (const w of s.webhooks ?? [])
    if (!w.startsWith(`/${s.family}/`) || !/^[a-z0-9/_-]+$/.test(w))
      throw new Error(`services.json: webhook ${w} of ${s.name} must be a plain path under /${s.family}/`)
for (const s of source.services)
  for (const [p, limit] of Object.entries(s.body_limits ?? {}))
    if (!p.startsWith(`/${s.family}/`) || !/^[a-z0-9/_-]+$/.test(p) || !Number.isInteger(limit) || limit < 1)
      throw new Error(
        `services.json: body limit ${p} of ${s.name} must be a plain path under /${s.family}/ and bytes`,
      )
const families = [...source.services, ...source.planned].map((e) => e.family)
const twice = families.find((f, i) => families.indexOf(f) !== i)
if (twice) throw new Error(`services.json: the family ${twice} is listed twice`)

/**
 * The gateway's one table, read from `@clinic/platform/services.json`: routing, the 501 areas,
 * the merged OpenAPI document, the health summary, the upstream configuration and the audit
 * resource types all come from it. A new service is one entry in that file.
 */
export const ROUTED: readonly RoutedFamily[] = source.services.map((s) => ({
  family: s.family,
  service: s.name,
  port: s.port,
  resourceType: s.resource_type,
  webhooks: s.webhooks ?? [],
  bodyLimits: s.body_limits ?? {},
}))

export const PLANNED: readonly PlannedFamily[] = source.planned.map((p) => ({
  family: p.family,
  area: p.area,
  resourceType: p.resource_type,
}))

/** Upstream base URL per service name (patients -> http://127.0.0.1:8081). */
export type Upstreams = Record<string, string>

/** Path family -> resource type, routed and planned. */
export const RESOURCE_TYPES: ReadonlyMap<string, string> = new Map(
  [...ROUTED, ...PLANNED].map((f) => [f.family, f.resourceType]),
)

/** The env variable naming a service's upstream (DESIGN.md section 6): patients -> PATIENTS_URL (naming.cjs). */
export const upstreamEnv = (service: string) => envName(service, 'URL')
