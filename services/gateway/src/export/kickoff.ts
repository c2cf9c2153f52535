import { PATIENT_COMPARTMENT, ValidationFailed, type FieldError } from '@clinic/platform'
import { FHIR_TYPES } from '../families'
import { InsufficientScope } from '../plugins/scopes'
import type { Scope } from '../scopes'

/**
 * What a Bulk Data kick-off asks (HL7 Bulk Data Access IG 2.0.0, DESIGN.md section 19), checked:
 * the level, the types, `_since`. Pure: the route reads the request, this decides.
 */
export type ExportLevel = 'system' | 'patient' | 'group'

export interface ExportRequest {
  level: ExportLevel
  /** The types to export, in the order their files come. */
  types: string[]
  /** Resources changed after this instant (milliseconds), or null for everything. */
  since: Date | null
}

/** The gateway's own types (the identity schema): no scope needed, system level only. */
export const GATEWAY_TYPES = ['Organization', 'Location'] as const

/**
 * Types never exported: `Slot` is availability computed from working hours (no record: a grid
 * without end), and `Binary` is a document's bytes, which the exported DocumentReference links to
 * (`content.attachment.url`) and a client downloads as any read.
 */
export const NOT_EXPORTED: ReadonlyMap<string, string> = new Map([
  ['Slot', 'Slot is availability computed from working hours, not a record; it is not exported'],
  ['Binary', "Binary is a document's bytes: export DocumentReference and read its attachment url"],
])

/** Every type a level exports, in file order: the gateway's, then each service's as services.json lists them. */
export function levelTypes(level: ExportLevel): string[] {
  const services = [...FHIR_TYPES.keys()].filter((t) => !NOT_EXPORTED.has(t))
  if (level === 'system') return [...GATEWAY_TYPES, ...services]
  // A patient's compartment: the Patient, and every type with a `patient` search parameter.
  return services.filter((t) => t === 'Patient' || (PATIENT_COMPARTMENT as readonly string[]).includes(t))
}

/** The scope that reads a type; null: every token reads it. */
const scopeOf = (type: string): Scope | null => {
  const scope = FHIR_TYPES.get(type)?.scope
  return !scope || scope === 'any' ? null : (scope as Scope)
}

/** The kick-off's parameters (a GET's query or a POST's Parameters resource) as name -> values. */
export type KickoffParams = Map<string, string[]>

const OUTPUT_FORMATS = new Set(['application/fhir+ndjson', 'application/ndjson', 'ndjson'])
/** Parameters of the IG this server does not offer: a 400 naming each, never silently ignored. */
const UNSUPPORTED = new Set([
  '_typeFilter',
  '_elements',
  'patient',
  'includeAssociatedData',
  'organizeOutputBy',
])

const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/

/**
 * The request a kick-off makes, or a 400 naming every parameter in error (unknown, unsupported,
 * malformed), or a 403 naming the scope of a `_type` the token may not read. Without `_type`: the
 * level's types the token may read.
 */
export function exportRequest(
  level: ExportLevel,
  params: KickoffParams,
  held: readonly string[],
): ExportRequest {
  const errors: FieldError[] = []
  const fail = (name: string, message: string) => errors.push({ path: `/${name}`, message })
  let since: Date | null = null
  let asked: string[] | null = null
  for (const [name, values] of params) {
    if (name === '_outputFormat') {
      if (values.length > 1 || !OUTPUT_FORMATS.has(values[0]!))
        fail(name, 'must be application/fhir+ndjson (or application/ndjson, ndjson), once')
    } else if (name === '_since') {
      const at = values[0]!
      if (values.length > 1 || !INSTANT.test(at) || Number.isNaN(Date.parse(at)))
        fail(name, 'must be one instant with its time zone, e.g. 2026-12-06T10:00:00.000Z')
      else since = new Date(Date.parse(at))
    } else if (name === '_type') {
      asked = [...(asked ?? []), ...values.flatMap((v) => v.split(','))]
    } else if (UNSUPPORTED.has(name)) {
      fail(name, 'is not supported by this server')
    } else fail(name, 'is not a parameter of $export (_outputFormat, _since, _type)')
  }
  const offered = levelTypes(level)
  for (const t of asked ?? []) {
    if (NOT_EXPORTED.has(t)) fail('_type', NOT_EXPORTED.get(t)!)
    else if (!offered.includes(t))
      fail('_type', `${t || '(empty)'} is not a type of a ${level}-level export (${offered.join(', ')})`)
  }
  if (errors.length) throw new ValidationFailed(errors, 'The $export request is not valid')
  if (asked) {
    for (const t of asked) {
      const scope = scopeOf(t)
      if (scope && !held.includes(scope)) throw new InsufficientScope(scope)
    }
    // In the level's order, each once.
    return { level, since, types: offered.filter((t) => asked!.includes(t)) }
  }
  return {
    level,
    since,
    types: offered.filter((t) => {
      const scope = scopeOf(t)
      return !scope || held.includes(scope)
    }),
  }
}
