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

/**
 * Every string in `value` (field names too, at any depth) that is not safe text, as field errors with
 * JSON pointers (`/first_name`, `/guardian/name`, `/tags/0`). Only parsed JSON is walked: arrays and
 * plain objects. Anything else (a Buffer, the request stream a proxy route parses the body into) is
 * skipped, and the walk stops after `limit` findings or 100,000 values, whichever comes first.
 */
export function unsafeTextErrors(value: unknown, base = '', limit = 20): FieldError[] {
  const out: FieldError[] = []
  // The keys from `value` down to the value walked: a pointer is built only for a finding, so a
  // request of safe text (most) builds none.
  const keys: string[] = []
  const pointerTo = (last?: string) => {
    let path = base
    for (const key of keys) path += `/${pointer(key)}`
    return last === undefined ? path : `${path}/${pointer(last)}`
  }
  let budget = 100_000
  const walk = (v: unknown, depth: number) => {
    if (out.length >= limit || --budget < 0) return
    if (typeof v === 'string') {
      if (!isSafeText(v)) out.push({ path: pointerTo(), message: BAD_TEXT_MESSAGE })
      return
    }
    if (v === null || typeof v !== 'object' || depth > 64) return
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        keys.push(String(i))
        walk(v[i], depth + 1)
        keys.pop()
      }
      return
    }
    if (!isPlainObject(v)) return
    for (const key in v) {
      if (!Object.prototype.hasOwnProperty.call(v, key)) continue
      if (!isSafeText(key)) {
        out.push({ path: pointerTo(key.replace(BAD_CODE_UNITS_GLOBAL, '\ufffd')), message: BAD_TEXT_MESSAGE })
        continue
      }
      keys.push(key)
      walk((v as Record<string, unknown>)[key], depth + 1)
      keys.pop()
    }
  }
  walk(value, 0)
  return out
}

/** An RFC 3339 instant exactly as `Date.toISOString()` writes it (what cursors carry), and real. */
export function isIsoInstant(s: unknown): s is string {
  if (typeof s !== 'string' || !/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/.test(s)) return false
  const t = Date.parse(s)
  return !Number.isNaN(t) && new Date(t).toISOString() === s
}
