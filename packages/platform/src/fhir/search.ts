import { ValidationFailed, type FieldError } from '../errors'
import {
  COMMON_PARAMS,
  DEFAULT_COUNT,
  FHIR_SEARCH_PARAMS,
  MAX_COUNT,
  type FhirParam,
  type FhirType,
} from './definitions'

/** One bound of a date search, over half-open ranges: `>=` the start of a range, `<` its end. */
export interface DateBound {
  op: '>=' | '<'
  /** An instant, RFC 3339 UTC with milliseconds. */
  at: string
}
export interface TokenValue {
  /** `null`: any system (`<code>`); `''`: no system (`|<code>`). */
  system: string | null
  code: string
}
export interface ReferenceValue {
  type: string
  id: string
}

/**
 * A search as a service runs it (DESIGN.md section 19): every parameter already checked against
 * the type's declared ones. Each parameter is a list of occurrences (all must match) of
 * alternatives (comma-separated: any may match).
 */
export interface FhirSearch {
  type: FhirType
  ids: string[] | null
  lastUpdated: DateBound[]
  /** 0: the total only. */
  count: number
  /** `_total`: `accurate` (the default) counts the matches; `none` skips the count (bulk paging). */
  total: 'accurate' | 'none'
  order: 'asc' | 'desc'
  /** `_cursor` of a `next` link, as sent (the store reads it: fhirKeyset). */
  cursor: string | undefined
  tokens(name: string): TokenValue[][]
  strings(name: string): string[][]
  /** Every bound of every occurrence: all must hold. */
  dates(name: string): DateBound[]
  references(name: string): ReferenceValue[][]
  /** The search's parameters as a query string, without `_cursor` (for `self` and `next`). */
  query: string
  /** An export's snapshot to read in (FHIR_SNAPSHOT_HEADER); none: the present. */
  snapshot?: string
}

const RESULT_PARAMS = new Set(['_count', '_sort', '_cursor', '_format', '_total'])
/** `_format` values naming FHIR JSON, the one format served. */
export const JSON_FORMATS: ReadonlySet<string> = new Set([
  'json',
  'application/json',
  'application/fhir+json',
])
/** year, month, day, or an instant to the second or millisecond with its offset (FHIR `dateTime`). */
const DATE =
  /^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:T(\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}:\d{2}))?)?)?$/
const PREFIXES = ['eq', 'gt', 'ge', 'lt', 'le'] as const

/** The range [start, end) a FHIR date names at its precision (a date alone is a UTC day). */
export function dateRange(value: string): { start: Date; end: Date } | null {
  const m = DATE.exec(value)
  if (!m) return null
  const [, y, mo, d, h, , s, frac, zone] = m
  if (h !== undefined && zone === undefined) return null
  const start = new Date(value.length <= 10 ? `${y}-${mo ?? '01'}-${d ?? '01'}T00:00:00Z` : value)
  if (Number.isNaN(start.getTime())) return null
  // A date that rolled over (2026-02-30) is not one.
  if (
    h === undefined &&
    start.toISOString().slice(0, value.length) !== `${y}-${mo ?? '01'}-${d ?? '01'}`.slice(0, value.length)
  )
    return null
  const end = new Date(start)
  if (h !== undefined) {
    const ms =
      frac !== undefined ? Math.max(1, 10 ** (3 - Math.min(frac.length, 3))) : s !== undefined ? 1000 : 60_000
    end.setTime(start.getTime() + ms)
  } else if (d !== undefined) end.setUTCDate(end.getUTCDate() + 1)
  else if (mo !== undefined) end.setUTCMonth(end.getUTCMonth() + 1)
  else end.setUTCFullYear(end.getUTCFullYear() + 1)
  return { start, end }
}

/** The bounds of one date value with its prefix, or an error message. */
function dateBounds(raw: string): DateBound[] | string {
  const prefix = PREFIXES.find((p) => raw.startsWith(p))
  const range = dateRange(prefix ? raw.slice(2) : raw)
  if (!range) {
    if (/^[a-z]{2}/.test(raw) && !prefix)
      return `prefix ${raw.slice(0, 2)} is not supported (eq, gt, ge, lt, le)`
    return 'must be a FHIR date (YYYY, YYYY-MM, YYYY-MM-DD or an instant with its offset)'
  }
  const start = range.start.toISOString()
  const end = range.end.toISOString()
  switch (prefix ?? 'eq') {
    case 'eq':
      return [
        { op: '>=', at: start },
        { op: '<', at: end },
      ]
    case 'gt':
      return [{ op: '>=', at: end }]
    case 'ge':
      return [{ op: '>=', at: start }]
    case 'lt':
      return [{ op: '<', at: start }]
    default:
      return [{ op: '<', at: end }]
  }
}

function referenceValue(raw: string, param: FhirParam): ReferenceValue | string {
  const parts = raw.split('/').filter(Boolean)
  const id = parts.at(-1) ?? ''
  const type = parts.length >= 2 ? parts.at(-2)! : (param.target?.[0] ?? '')
  if (!type) return 'must name its type (`<Type>/<id>`)'
  if (!/^[A-Za-z0-9\-.]{1,64}$/.test(id)) return 'is not a FHIR id'
  if (param.target && !param.target.includes(type)) return `must name a ${param.target.join(' or ')}`
  return { type, id }
}

function tokenValue(raw: string): TokenValue {
  const bar = raw.indexOf('|')
  return bar < 0 ? { system: null, code: raw } : { system: raw.slice(0, bar), code: raw.slice(bar + 1) }
}

/**
 * The codes of a token parameter's alternatives that name `system` or no system (`<code>`): what a
 * column holding our own codes of that system matches (`|<code>` and other systems match nothing).
 */
export const codesIn = (alternatives: readonly TokenValue[], system: string): string[] =>
  alternatives.filter((t) => t.system === null || t.system === system).map((t) => t.code)

type Parsed = TokenValue | string | DateBound[] | ReferenceValue
type ResultParams = Pick<FhirSearch, 'count' | 'order' | 'cursor' | 'total'>

/** `_count`, `_sort`, `_format`, `_total` or `_cursor` into `result`; a problem with the value, or null. */
function resultParam(result: ResultParams, name: string, raw: string): string | null {
  if (name === '_count') {
    if (!/^\d{1,4}$/.test(raw) || Number(raw) > MAX_COUNT) return `must be an integer from 0 to ${MAX_COUNT}`
    result.count = Number(raw)
  } else if (name === '_sort') {
    if (raw !== '_lastUpdated' && raw !== '-_lastUpdated') return 'must be _lastUpdated or -_lastUpdated'
    result.order = raw === '_lastUpdated' ? 'asc' : 'desc'
  } else if (name === '_format') {
    if (!JSON_FORMATS.has(raw)) return 'must be json (application/fhir+json)'
  } else if (name === '_total') {
    if (raw !== 'accurate' && raw !== 'none') return 'must be accurate or none (estimate is not offered)'
    result.total = raw
  } else result.cursor = raw
  return null
}

/**
 * A type's search from its query string: every parameter declared for the type (definitions.ts)
 * or common (`_id`, `_lastUpdated`) or a result parameter (`_count`, `_sort`, `_cursor`,
 * `_format`, `_total`); anything else, a modifier, an empty value or a value of the wrong form is a 400
 * naming the parameter. Never silently ignored: a client filtering on a parameter we did not read
 * would take every row for its answer.
 */
export function parseSearch(
  type: FhirType,
  query: Record<string, string | string[] | undefined>,
): FhirSearch {
  const declared: Record<string, FhirParam> = { ...COMMON_PARAMS, ...FHIR_SEARCH_PARAMS[type] }
  const errors: FieldError[] = []
  const fail = (name: string, message: string) => errors.push({ path: `/${name}`, message })
  const values = new Map<string, Parsed[][]>()
  const result: ResultParams = { count: DEFAULT_COUNT, order: 'asc', cursor: undefined, total: 'accurate' }
  const kept: Array<[string, string]> = []

  for (const [name, value] of Object.entries(query)) {
    const list = value === undefined ? [] : Array.isArray(value) ? value : [value]
    for (const raw of list) {
      if (name !== '_cursor') kept.push([name, raw])
      if (raw === '') {
        fail(name, 'must not be empty')
        continue
      }
      if (RESULT_PARAMS.has(name)) {
        if (list.length > 1) {
          fail(name, 'must be given once')
          break
        }
        const problem = resultParam(result, name, raw)
        if (problem) fail(name, problem)
        continue
      }
      const colon = name.indexOf(':')
      const param = Object.hasOwn(declared, name) ? declared[name] : undefined
      if (!param) {
        fail(
          name,
          colon > 0 && Object.hasOwn(declared, name.slice(0, colon))
            ? `modifier :${name.slice(colon + 1)} is not supported`
            : `is not a search parameter of ${type} (see /fhir/R4/metadata)`,
        )
        continue
      }
      const alternatives: Parsed[] = []
      for (const v of param.type === 'date' ? [raw] : raw.split(',')) {
        if (v === '') {
          fail(name, 'has an empty value')
          continue
        }
        if (param.type === 'date') {
          const b = dateBounds(v)
          if (typeof b === 'string') fail(name, b)
          else alternatives.push(b)
        } else if (param.type === 'reference') {
          const r = referenceValue(v, param)
          if (typeof r === 'string') fail(name, r)
          else alternatives.push(r)
        } else if (param.type === 'token') alternatives.push(tokenValue(v))
        else alternatives.push(v)
      }
      const occurrences = values.get(name) ?? []
      occurrences.push(alternatives)
      values.set(name, occurrences)
    }
  }
  if (errors.length) throw new ValidationFailed(errors, 'The search is not valid')

  const get = <T>(name: string) => (values.get(name) ?? []) as T[][]
  const idSets = get<TokenValue>('_id').map((alts) => alts.map((t) => t.code))
  const ids = idSets.length ? idSets.reduce((a, b) => a.filter((id) => b.includes(id))) : null
  return {
    type,
    ids,
    lastUpdated: get<DateBound[]>('_lastUpdated').flat(2),
    ...result,
    tokens: (name) => get<TokenValue>(name),
    strings: (name) => get<string>(name),
    dates: (name) => get<DateBound[]>(name).flat(2),
    references: (name) => get<ReferenceValue>(name),
    query: new URLSearchParams(kept).toString(),
  }
}
