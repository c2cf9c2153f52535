import type { FieldError } from './errors'

/**
 * NUL, and UTF-16 surrogates without their pair: PostgreSQL cannot store either in text or jsonb
 * (it answers with an error that quotes the value), and neither has a meaning in a name or a note.
 */
// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
const BAD_CODE_UNITS = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

const BAD_CODE_UNITS_GLOBAL = new RegExp(BAD_CODE_UNITS.source, 'g')

export const BAD_TEXT_MESSAGE = 'must not contain NUL characters or unpaired surrogates'

export const isSafeText = (s: string): boolean => !BAD_CODE_UNITS.test(s)

/** JSON pointer escaping (RFC 6901) of one field name. */
const pointer = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1')

/** A parsed JSON object: `{}`, or a prototype-less map such as the parsed query string. */
const isPlainObject = (v: object) => {
  const proto = Object.getPrototypeOf(v) as object | null
  return proto === null || proto === Object.prototype || Object.getPrototypeOf(proto) === null
}

let safeBudget = 0
/** unsafeTextErrors' walk without its paths: true when every string is safe, false when unsure. */
function allSafe(v: unknown, depth: number): boolean {
  if (--safeBudget < 0) return false
  if (typeof v === 'string') return isSafeText(v)
  if (v === null || typeof v !== 'object' || depth > 64) return true
  if (Array.isArray(v)) {
    for (const item of v) if (!allSafe(item, depth + 1)) return false
    return true
  }
  if (!isPlainObject(v)) return true
  for (const key in v) {
    if (!Object.prototype.hasOwnProperty.call(v, key)) continue
    if (!isSafeText(key) || !allSafe((v as Record<string, unknown>)[key], depth + 1)) return false
  }
  return true
}

/**
 * Every string in `value` (field names too, at any depth) that is not safe text, as field errors with
 * JSON pointers (`/first_name`, `/guardian/name`, `/tags/0`). Only parsed JSON is walked: arrays and
 * plain objects. Anything else (a Buffer, the request stream a proxy route parses the body into) is
 * skipped, and the walk stops after `limit` findings or 100,000 values, whichever comes first.
 */
export function unsafeTextErrors(value: unknown, base = '', limit = 20): FieldError[] {
  // Most requests hold safe text only: that is found without a path built per field.
  safeBudget = 100_000
  if (allSafe(value, 0)) return []
  const out: FieldError[] = []
  let budget = 100_000
  const walk = (v: unknown, path: string, depth: number) => {
    if (out.length >= limit || --budget < 0) return
    if (typeof v === 'string') {
      if (!isSafeText(v)) out.push({ path, message: BAD_TEXT_MESSAGE })
      return
    }
    if (v === null || typeof v !== 'object' || depth > 64) return
    if (Array.isArray(v)) {
      v.forEach((item, i) => walk(item, `${path}/${i}`, depth + 1))
      return
    }
    if (!isPlainObject(v)) return
    for (const [key, item] of Object.entries(v)) {
      if (!isSafeText(key)) {
        out.push({
          path: `${path}/${pointer(key.replace(BAD_CODE_UNITS_GLOBAL, '\ufffd'))}`,
          message: BAD_TEXT_MESSAGE,
        })
        continue
      }
      walk(item, `${path}/${pointer(key)}`, depth + 1)
    }
  }
  walk(value, base, 0)
  return out
}

/** An RFC 3339 instant exactly as `Date.toISOString()` writes it (what cursors carry), and real. */
export function isIsoInstant(s: unknown): s is string {
  if (typeof s !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(s)) return false
  const t = Date.parse(s)
  return !Number.isNaN(t) && new Date(t).toISOString() === s
}
