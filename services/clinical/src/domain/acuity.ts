import type { FieldError } from '@clinic/platform/core'

export const NOTATIONS = [
  'snellen_m',
  'snellen_ft',
  'decimal',
  'logmar',
  'etdrs_letters',
  'qualitative',
] as const
export type Notation = (typeof NOTATIONS)[number]

/**
 * logMAR of the qualitative grades. Counting fingers and hand motion have no line on a chart; the
 * values are those of Lange et al. 2009 (Freiburg acuity test), which clinics and registries use
 * to put them on the same scale. Light perception and no light perception have no logMAR at all.
 */
const QUALITATIVE: Record<string, number | null> = { CF: 1.98, HM: 2.28, LP: null, NLP: null }

const FRACTION = /^([0-9]{1,3}(?:\.[0-9]{1,2})?)\/([0-9]{1,3}(?:\.[0-9]{1,2})?)$/
const NUMBER = /^-?[0-9]{1,2}(?:\.[0-9]{1,3})?$/
const LETTERS = /^[0-9]{1,3}$/

/** Rounded to 0.01, never -0 (a 6/6 is 0, not -0). */
const hundredths = (x: number): number => {
  const r = Math.round(x * 100) / 100
  return r === 0 ? 0 : r
}

/**
 * The logMAR of an acuity as entered, by the rules of DESIGN 14: Snellen `-log10(num/den)`,
 * decimal `-log10(d)`, ETDRS letters `(85 - L) * 0.02`, CF and HM by Lange, LP and NLP null.
 * `{ error }` names why the value does not read in its notation.
 */
export function logmarOf(notation: Notation, value: string): { logmar: number | null } | { error: string } {
  const v = value.trim()
  switch (notation) {
    case 'snellen_m':
    case 'snellen_ft': {
      const m = FRACTION.exec(v)
      const num = m && Number(m[1])
      const den = m && Number(m[2])
      if (!num || !den)
        return {
          error: `is not a Snellen fraction (${notation === 'snellen_m' ? '6/9' : '20/30'}: test distance / letter size)`,
        }
      return { logmar: hundredths(-Math.log10(num / den)) }
    }
    case 'decimal': {
      const d = NUMBER.test(v) ? Number(v) : NaN
      if (!(d > 0 && d <= 4))
        return { error: 'is not a decimal acuity (greater than 0, at most 4, e.g. 0.67)' }
      return { logmar: hundredths(-Math.log10(d)) }
    }
    case 'logmar': {
      const l = NUMBER.test(v) ? Number(v) : NaN
      if (!(l >= -0.5 && l <= 3)) return { error: 'is not a logMAR value (-0.5 to 3.0, e.g. 0.18)' }
      return { logmar: hundredths(l) }
    }
    case 'etdrs_letters': {
      const letters = LETTERS.test(v) ? Number(v) : NaN
      if (!(letters >= 0 && letters <= 100)) return { error: 'is not a count of ETDRS letters (0 to 100)' }
      return { logmar: hundredths((85 - letters) * 0.02) }
    }
    case 'qualitative': {
      const grade = v.toUpperCase()
      if (!Object.hasOwn(QUALITATIVE, grade)) return { error: 'is not one of CF, HM, LP, NLP' }
      return { logmar: QUALITATIVE[grade]! }
    }
  }
}

/** The field error of an acuity's value that does not read in its notation, if any. */
export function acuityValueErrors(body: unknown, at = ''): FieldError[] {
  if (!body || typeof body !== 'object') return []
  const { value, notation } = body as { value?: unknown; notation?: unknown }
  if (typeof value !== 'string' || !(NOTATIONS as readonly unknown[]).includes(notation)) return []
  const read = logmarOf(notation as Notation, value)
  return 'error' in read
    ? [{ path: `${at}/value`, message: `${read.error} (notation ${String(notation)})` }]
    : []
}
