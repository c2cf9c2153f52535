import { readFileSync } from 'node:fs'
import path from 'node:path'
import { ConfigError } from './config-error'
import { contractsByService } from './contracts'
import { callingProblems } from './internal-api/calling'

/** A work queue on clinic.events and the routing keys bound to it. */
export interface QueueEntry {
  queue: string
  bindings: string[]
}

/** What the gateway and a resource service share in services.json. */
export interface AppEntry {
  name: string
  port: number
  replicas: { min: number; max: number }
  schema?: string
  /** The event types it emits: the keys of its contracts file (contracts/<name>.ts). */
  publishes?: string[]
  consumes?: QueueEntry[]
  /** Resource services it calls over signed internal HTTP. */
  calls?: string[]
  /**
   * The token scopes of its operations (DESIGN.md section 13), the one place a scope is declared;
   * the gateway's entry holds those of no one service (`fhir:export`).
   */
  scopes?: string[]
  /** Its scopes a token has only when its list names them (a token made without a list lacks them). */
  named_only_scopes?: string[]
}

/** An entry of packages/platform/services.json, the one list of services. */
export interface ServiceEntry extends AppEntry {
  /** The API path families it answers, each with what the audit trail calls its resources. */
  families: Record<string, string>
  list_path: string
  webhooks?: string[]
  /** Path prefixes of pages for people outside the API bases (`/p/`): GET and POST, no API token. */
  pages?: string[]
  /** Request body limits in bytes, by service path, where a route needs more than the 64 KiB default. */
  body_limits?: Record<string, number>
  /**
   * POST paths taking multipart/form-data that the gateway streams to the service as they arrive
   * (never held whole), with the most bytes it forwards; the service checks the parts itself.
   */
  uploads?: Record<string, number>
  /**
   * The FHIR R4 resource types it maps (DESIGN.md section 19), each with the scope that reads it
   * (`any`: every token): the gateway routes `/fhir/R4/<Type>` (and below) to it, GET only.
   */
  fhir?: Record<string, string>
  /**
   * Families whose requests carry the company's and its centers' names in the gateway's assertion
   * (`ctx.auth.names`): what a service shows people (a consent). No other request carries them.
   */
  names?: string[]
}

/** An announced area that answers 501 not_implemented until its service exists. */
export interface PlannedEntry {
  family: string
  area: string
  resource_type: string
}

export interface ServiceList {
  gateway: AppEntry
  services: ServiceEntry[]
  planned: PlannedEntry[]
}

/** A services.json that cannot be used: one line naming every problem. */
export class ServiceListError extends ConfigError {
  override name = 'ServiceListError'
}

const NAME = /^[a-z][a-z0-9]*(-[a-z0-9]+)*$/
const FAMILY = /^[a-z][a-z0-9-]*$/
const PLAIN_PATH = /^[a-z0-9/_-]+$/
/** A FHIR resource type's name (`Patient`, `VisionPrescription`). */
const FHIR_TYPE = /^[A-Z][A-Za-z]{1,63}$/
// A page prefix is one or two path segments outside the API and the gateway's own paths, of one
// service; a two-segment prefix (`/p/c/`) is its service's even under another's one-segment `/p/`.
const PAGE = /^(\/[a-z0-9][a-z0-9_-]*){1,2}\/$/
const GATEWAY_PATHS = ['/api/', '/health/', '/metrics/']

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)
const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((s) => typeof s === 'string')

function checkApp(s: Record<string, unknown>, problems: string[]): string {
  const name = typeof s.name === 'string' && NAME.test(s.name) ? s.name : undefined
  if (!name) problems.push(`name ${JSON.stringify(s.name)} must be lowercase words joined by -`)
  const who = name ?? JSON.stringify(s.name)
  if (!Number.isInteger(s.port) || (s.port as number) < 1 || (s.port as number) > 65535)
    problems.push(`${who} needs a port (1-65535)`)
  const r = s.replicas
  if (
    !isObject(r) ||
    !Number.isInteger(r.min) ||
    !Number.isInteger(r.max) ||
    (r.min as number) > (r.max as number)
  )
    problems.push(`${who} needs replicas: { min, max }`)
  if (s.publishes !== undefined && !strings(s.publishes))
    problems.push(`${who}: publishes must list event types`)
  if (
    s.consumes !== undefined &&
    !(
      Array.isArray(s.consumes) &&
      s.consumes.every((c) => isObject(c) && typeof c.queue === 'string' && strings(c.bindings))
    )
  )
    problems.push(`${who}: consumes must list { queue, bindings }`)
  if (s.calls !== undefined && !strings(s.calls)) problems.push(`${who}: calls must list service names`)
  return who
}

function checkService(s: Record<string, unknown>, who: string, problems: string[]) {
  const families = isObject(s.families) ? Object.entries(s.families) : []
  if (
    !families.length ||
    families.some(([f, type]) => !FAMILY.test(f) || typeof type !== 'string' || !type)
  ) {
    problems.push(`${who} needs families: { <lowercase path segment>: <resource_type> }`)
    return
  }
  const under = (p: string) => families.some(([f]) => p.startsWith(`/${f}/`)) && PLAIN_PATH.test(p)
  if (
    typeof s.list_path !== 'string' ||
    !families.some(([f]) => new RegExp(`^/${f}(/|$)`).test(s.list_path as string))
  )
    problems.push(`${who} needs a list_path under its families`)
  for (const w of strings(s.webhooks) ? s.webhooks : [])
    if (!under(w)) problems.push(`webhook ${w} of ${who} must be a plain path under its families`)
  if (s.webhooks !== undefined && !strings(s.webhooks)) problems.push(`${who}: webhooks must list paths`)
  for (const [p, limit] of Object.entries(isObject(s.body_limits) ? s.body_limits : {}))
    if (!under(p) || !Number.isInteger(limit) || (limit as number) < 1)
      problems.push(`body limit ${p} of ${who} must be a plain path under its families, and bytes`)
  for (const [p, limit] of Object.entries(isObject(s.uploads) ? s.uploads : {}))
    if (
      !(under(p) || families.some(([f]) => p === `/${f}`)) ||
      !Number.isInteger(limit) ||
      (limit as number) < 1
    )
      problems.push(`upload ${p} of ${who} must be a plain path of its families, and bytes`)
  if (s.fhir !== undefined && !(isObject(s.fhir) && Object.keys(s.fhir).every((t) => FHIR_TYPE.test(t))))
    problems.push(`${who}: fhir must map FHIR resource types (PascalCase) to the scope that reads them`)
  if (s.names !== undefined && !(strings(s.names) && s.names.every((f) => families.some(([x]) => x === f))))
    problems.push(`${who}: names must list families of its own`)
  for (const p of strings(s.pages) ? s.pages : [])
    if (!PAGE.test(p) || GATEWAY_PATHS.some((g) => p.startsWith(g)))
      problems.push(`page ${p} of ${who} must be one path segment outside /api, e.g. /p/`)
}

const twice = (xs: readonly unknown[]) => [...new Set(xs.filter((x, i) => xs.indexOf(x) !== i))]

/** Every problem of a parsed services.json, each a short phrase; none: the list is usable. */
export function serviceListProblems(list: unknown): string[] {
  if (!isObject(list) || !isObject(list.gateway) || !Array.isArray(list.services))
    return ['needs a gateway entry and a services array']
  const problems: string[] = []
  const services = list.services.filter(isObject)
  if (services.length !== list.services.length) problems.push('every entry of services must be an object')
  const apps = [list.gateway, ...services]
  const names = apps.map((s) => checkApp(s, problems))
  services.forEach((s, i) => checkService(s, names[i + 1]!, problems))
  const planned = Array.isArray(list.planned) ? list.planned.filter(isObject) : []
  for (const p of planned)
    if (
      typeof p.family !== 'string' ||
      !FAMILY.test(p.family) ||
      typeof p.resource_type !== 'string' ||
      !p.area
    )
      problems.push(
        `planned ${JSON.stringify(p.family)} needs a family (lowercase path segment), an area and a resource_type`,
      )
  for (const n of twice(names)) problems.push(`the service ${n} is listed twice`)
  for (const p of twice(apps.map((s) => s.port).filter((p) => p !== undefined)))
    problems.push(`the port ${String(p)} is listed twice`)
  const families = [
    ...services.flatMap((s) => (isObject(s.families) ? Object.keys(s.families) : [])),
    ...planned.map((p) => p.family),
  ]
  for (const f of twice(families)) problems.push(`the family ${String(f)} is listed twice`)
  for (const p of twice(services.flatMap((s) => (strings(s.pages) ? s.pages : []))))
    problems.push(`the page ${String(p)} is listed twice`)
  const resources = services.map((s) => s.name)
  for (const s of apps)
    for (const c of strings(s.calls) ? s.calls : [])
      if (!resources.includes(c)) problems.push(`${String(s.name)} calls ${c}, which is no resource service`)
  problems.push(...publishingProblems(apps))
  problems.push(...callingProblems(apps))
  problems.push(...scopeProblems(apps))
  return problems
}

const SCOPE = /^[a-z][a-z_]*:[a-z][a-z_]*$/

/** Scopes are `<area>:<verb>`, declared once in all; a named-only scope is one of its entry's. */
function scopeProblems(apps: Array<Record<string, unknown>>): string[] {
  const problems: string[] = []
  for (const s of apps) {
    const name = String(s.name)
    if (s.scopes !== undefined && !(strings(s.scopes) && s.scopes.every((x) => SCOPE.test(x))))
      problems.push(`${name}: scopes must list <area>:<verb> names`)
    const own = strings(s.scopes) ? s.scopes : []
    if (
      s.named_only_scopes !== undefined &&
      !(strings(s.named_only_scopes) && s.named_only_scopes.every((x) => own.includes(x)))
    )
      problems.push(`${name}: named_only_scopes must be among its scopes`)
  }
  for (const x of twice(apps.flatMap((s) => (strings(s.scopes) ? s.scopes : []))))
    problems.push(`the scope ${String(x)} is declared twice`)
  const declared = new Set(apps.flatMap((s) => (strings(s.scopes) ? s.scopes : [])))
  const fhir = apps.flatMap((s) => Object.entries(isObject(s.fhir) ? s.fhir : {}))
  for (const [type, scope] of fhir)
    if (scope !== 'any' && !declared.has(String(scope)))
      problems.push(`the FHIR type ${type} is read with ${String(scope)}, which no entry declares`)
  for (const t of twice(fhir.map(([type]) => type)))
    problems.push(`the FHIR type ${String(t)} has two owners`)
  return problems
}

/** Each app's `publishes` is the list of its contracts file, and no event type has two publishers. */
function publishingProblems(apps: Array<Record<string, unknown>>): string[] {
  const problems: string[] = []
  const contracts: Record<string, object> = contractsByService
  for (const s of apps) {
    const listed = strings(s.publishes) ? [...s.publishes].sort() : []
    const name = String(s.name)
    const declared = Object.hasOwn(contracts, name) ? Object.keys(contracts[name]!).sort() : []
    for (const t of listed.filter((t) => !declared.includes(t)))
      problems.push(
        `${name} publishes ${t}, which packages/platform/src/contracts/${name}.ts does not declare`,
      )
    for (const t of declared.filter((t) => !listed.includes(t)))
      problems.push(`${name} does not list ${t} of its contracts file in publishes`)
  }
  for (const t of twice(apps.flatMap((s) => (strings(s.publishes) ? s.publishes : []))))
    problems.push(`the event type ${String(t)} has two publishers`)
  return problems
}

/** Parses and checks services.json: the list, or a ServiceListError naming every problem on one line. */
export function parseServiceList(text: string): ServiceList {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (err) {
    throw new ServiceListError(`packages/platform/services.json is not JSON: ${(err as Error).message}`)
  }
  const problems = serviceListProblems(raw)
  if (problems.length) throw new ServiceListError(`packages/platform/services.json: ${problems.join('; ')}`)
  return raw as ServiceList
}

let list: ServiceList | undefined
/**
 * services.json, read and checked once at run time (the file sits beside src/ and dist/, outside the
 * compiled project). Every service reads it through here, so a malformed list stops any of them
 * with the same one line.
 */
export const serviceList = (): ServiceList =>
  (list ??= parseServiceList(readFileSync(path.resolve(__dirname, '../services.json'), 'utf8')))

/** The listening port services.json gives a service (the gateway included). */
export function servicePort(name: string): number {
  const { gateway, services } = serviceList()
  const entry = [gateway, ...services].find((s) => s.name === name)
  if (!entry) throw new ServiceListError(`packages/platform/services.json lists no service ${name}`)
  return entry.port
}

/** Where a service answers on this machine by default: http://127.0.0.1:<its port>. */
export const serviceUrl = (name: string) => `http://127.0.0.1:${servicePort(name)}`
