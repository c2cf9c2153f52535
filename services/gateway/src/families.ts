import { serviceList, ServiceListError, type ServiceList } from '@clinic/platform'
import { envName } from '@clinic/platform/naming'

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
  /** POST paths of multipart uploads streamed to the service unread, with the most bytes forwarded. */
  uploads: Readonly<Record<string, number>>
  /** Families whose requests carry the company's and centers' names in the assertion. */
  names: readonly string[]
  /** The FHIR R4 resource types it maps: `/fhir/R4/<Type>` and below are proxied to it (GET). */
  fhirTypes: readonly string[]
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

// Read and checked by the platform. An unusable list is reported when the configuration loads
// (loadGatewayConfig: one line, exit 78) rather than as a stack trace at import; until then it
// stands for a list of no services.
const source: ServiceList = (() => {
  try {
    return serviceList()
  } catch (err) {
    if (err instanceof ServiceListError)
      return {
        gateway: { name: 'gateway', port: 0, replicas: { min: 1, max: 1 } },
        services: [],
        planned: [],
      }
    throw err
  }
})()

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
  uploads: s.uploads ?? {},
  names: s.names ?? [],
  fhirTypes: Object.keys(s.fhir ?? {}),
}))

/** The FHIR base under each API base (DESIGN.md section 19): `/api/fhir/R4`. */
export const FHIR_BASE = '/fhir/R4'

/**
 * FHIR resource type -> the scope that reads it (services.json `fhir`; `any`: every token may), and
 * what the audit trail calls it (the type in snake case: `vision_prescription`).
 */
export const FHIR_TYPES: ReadonlyMap<string, { service: string; scope: string; resourceType: string }> =
  new Map(
    source.services.flatMap((s) =>
      Object.entries(s.fhir ?? {}).map(([type, scope]) => [
        type,
        { service: s.name, scope, resourceType: type.replace(/(?<=[a-z])(?=[A-Z])/g, '_').toLowerCase() },
      ]),
    ),
  )

export const ROUTED: readonly RoutedFamily[] = source.services.flatMap((s) =>
  Object.entries(s.families).map(([family, resourceType]) => ({ family, service: s.name, resourceType })),
)

export const PLANNED: readonly PlannedFamily[] = source.planned.map((p) => ({
  family: p.family,
  area: p.area,
  resourceType: p.resource_type,
}))

/**
 * The token scopes (services.json `scopes`, the one place they are declared): the services' in
 * list order, then the gateway's; `namedOnly` those a token has only when its list names them.
 */
export const DECLARED_SCOPES = {
  all: [...source.services, source.gateway].flatMap((s) => s.scopes ?? []),
  namedOnly: [...source.services, source.gateway].flatMap((s) => s.named_only_scopes ?? []),
}

/** Upstream base URL per service name (patients -> http://127.0.0.1:8081). */
export type Upstreams = Record<string, string>

/**
 * A Bulk Data export's path, from the API base's segments (`fhir`, `R4`, ...): a kick-off at any
 * level (`$export`, `Patient/$export`, `Group/<id>/$export`), an export's status and its files
 * (`$export/<id>[/<n>.ndjson]`). What needs `fhir:export` (scopes.ts) and is on the trail as
 * `fhir_export` (access-log.ts).
 */
export const isExportPath = (segments: ReadonlyArray<string | null>) =>
  segments[0] === 'fhir' &&
  segments[1] === 'R4' &&
  (segments[2] === '$export' || (segments.length <= 5 && segments.at(-1) === '$export'))

/** Path family -> resource type, routed and planned. */
export const RESOURCE_TYPES: ReadonlyMap<string, string> = new Map(
  [...ROUTED, ...PLANNED].map((f) => [f.family, f.resourceType]),
)

/** The env variable naming a service's upstream (DESIGN.md section 6): patients -> PATIENTS_URL (naming.cjs). */
export const upstreamEnv = (service: string) => envName(service, 'URL')
