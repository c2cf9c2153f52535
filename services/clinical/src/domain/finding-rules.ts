import type { FieldError } from '@clinic/platform/core'
import { acuityValueErrors, logmarOf, type Notation } from './acuity'

/** The kinds of finding, as the exam lists them (and as an amendment's `add` names them). */
export const FINDING_KINDS = ['visual_acuity', 'iop', 'refraction', 'diagnoses'] as const
export type FindingKind = (typeof FINDING_KINDS)[number]
/** Each kind's path segment: `POST /clinical/exams/{id}/visual-acuity`. */
export const KIND_PATHS: Record<FindingKind, string> = {
  visual_acuity: 'visual-acuity',
  iop: 'iop',
  refraction: 'refraction',
  diagnoses: 'diagnoses',
}
/** The kinds the trends endpoint answers (measurements, not diagnoses or refractions). */
export const TREND_KINDS = ['iop', 'visual_acuity'] as const

type Json = Record<string, unknown>
const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v)
const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined)
/** Whether x is a whole number of `step`s (steps of 0.25 or 0.1, without binary rounding noise). */
const onStep = (x: number, step: number) => Math.abs(Math.round(x / step) * step - x) < 1e-9

/**
 * What the schemas cannot say about a refraction (or a prescription's lens): quarter-dioptre
 * steps, and an axis exactly when there is a cylinder (a cylinder without an axis cannot be
 * ground; an axis without one is a typing slip worth refusing).
 */
export function refractionErrors(body: unknown, at = ''): FieldError[] {
  if (!isObject(body)) return []
  const errors: FieldError[] = []
  for (const field of ['sphere', 'cylinder', 'add'] as const) {
    const x = num(body[field])
    if (x !== undefined && !onStep(x, 0.25))
      errors.push({ path: `${at}/${field}`, message: 'must be in steps of 0.25 dioptres' })
  }
  const cylinder = num(body.cylinder) ?? 0
  const hasAxis = body.axis !== undefined && body.axis !== null
  if (cylinder !== 0 && !hasAxis)
    errors.push({ path: `${at}/axis`, message: 'is required when cylinder is not 0' })
  if (cylinder === 0 && hasAxis)
    errors.push({ path: `${at}/axis`, message: 'must be left out when cylinder is 0 (no cylinder, no axis)' })
  const sphere = num(body.sphere)
  if (sphere !== undefined && cylinder > 0 && Math.abs(sphere + cylinder) > 30)
    errors.push({
      path: `${at}/sphere`,
      message: 'in minus-cylinder form (sphere + cylinder) must stay within -30..+30',
    })
  const prism = body.prism
  if (isObject(prism)) {
    const amount = num(prism.amount)
    if (amount !== undefined && !onStep(amount, 0.25))
      errors.push({ path: `${at}/prism/amount`, message: 'must be in steps of 0.25 prism dioptres' })
  }
  return errors
}

/** IOP is read to one decimal: more is a transcription, not a measurement. */
export function iopErrors(body: unknown, at = ''): FieldError[] {
  if (!isObject(body)) return []
  const mmhg = num(body.mmhg)
  return mmhg !== undefined && !onStep(mmhg, 0.1)
    ? [{ path: `${at}/mmhg`, message: 'must have at most one decimal' }]
    : []
}

/**
 * Code formats by system. WHO ICD-10's codes are a category (`H40`) or a subcategory with one digit
 * (`H40.1`): a longer code (`H40.11`, `H40.1X10`) is from a clinical modification (ICD-10-CM, or
 * Spain's CIE-10-ES built on it), whose shape is a category and up to four more characters.
 * SNOMED CT: a concept id (digits).
 */
const ICD10_CM_SHAPE = /^[A-Z][0-9]{2}(\.[0-9A-Z]{1,4})?$/
export const CODE_FORMATS: Record<string, { pattern: RegExp; message: string }> = {
  icd10: {
    pattern: /^[A-Z][0-9]{2}(\.[0-9])?$/,
    message:
      'is not a WHO ICD-10 code (H40 or H40.1; H40.11 is ICD-10-CM or CIE-10-ES: system icd10cm or cie10es)',
  },
  icd10cm: { pattern: ICD10_CM_SHAPE, message: 'is not an ICD-10-CM code (e.g. H40.11)' },
  cie10es: { pattern: ICD10_CM_SHAPE, message: 'is not a CIE-10-ES code (e.g. H40.11)' },
  snomed: { pattern: /^[0-9]{6,18}$/, message: 'is not a SNOMED CT concept id (6 to 18 digits)' },
}

export function diagnosisErrors(body: unknown, at = ''): FieldError[] {
  if (!isObject(body) || typeof body.code !== 'string' || typeof body.system !== 'string') return []
  const format = CODE_FORMATS[body.system]
  return format && !format.pattern.test(body.code) ? [{ path: `${at}/code`, message: format.message }] : []
}

/** The rules beyond the schema of each kind's body. */
export const FINDING_RULES: Record<FindingKind, (body: unknown, at?: string) => FieldError[]> = {
  visual_acuity: acuityValueErrors,
  iop: iopErrors,
  refraction: refractionErrors,
  diagnoses: diagnosisErrors,
}

/**
 * A refraction in minus-cylinder form: a plus cylinder is transposed (sphere + cyl, -cyl, axis
 * ± 90), so the same eye reads the same whoever wrote it down. Without cylinder it is 0 and has
 * no axis.
 */
export function minusCylinder<T extends { sphere: number; cylinder?: number | null; axis?: number | null }>(
  r: T,
): T & { cylinder: number; axis: number | null } {
  const cylinder = r.cylinder ?? 0
  if (cylinder === 0) return { ...r, cylinder: 0, axis: null }
  if (cylinder < 0) return { ...r, cylinder, axis: r.axis ?? null }
  const axis = r.axis!
  return { ...r, sphere: r.sphere + cylinder, cylinder: -cylinder, axis: axis > 90 ? axis - 90 : axis + 90 }
}

/** What is stored of a finding: its eye, its own fields, and the instant a trend sorts it by. */
export interface FindingValues {
  eye: string
  data: Json
  /** IOP: measured_at; acuity: null (the exam's performed_at then). */
  measuredAt: string | null
}

const omitUndefined = (o: Json): Json =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined))

/**
 * A validated finding body as stored: acuity with its computed logMAR and distance, refraction in
 * minus-cylinder form, diagnoses with their defaults. Throws nothing: the route's rules ran.
 */
export function findingValues(kind: FindingKind, body: Json): FindingValues {
  switch (kind) {
    case 'visual_acuity': {
      const read = logmarOf(body.notation as Notation, body.value as string)
      const logmar = 'logmar' in read ? read.logmar : null
      const distance = (body.distance_m as number | undefined) ?? (body.kind === 'near' ? 0.4 : 6)
      const { eye, ...rest } = body
      return {
        eye: eye as string,
        data: omitUndefined({ ...rest, distance_m: distance, chart: rest.chart ?? null, logmar }),
        measuredAt: null,
      }
    }
    case 'iop': {
      const { eye, ...rest } = body
      const measuredAt = new Date(rest.measured_at as string).toISOString()
      return {
        eye: eye as string,
        data: { ...rest, measured_at: measuredAt, cct_um: rest.cct_um ?? null },
        measuredAt,
      }
    }
    case 'refraction': {
      const { eye, ...rest } = body
      const r = minusCylinder(rest as Json & { sphere: number; cylinder?: number; axis?: number })
      return {
        eye: eye as string,
        data: { ...r, add: r.add ?? null, prism: r.prism ?? null },
        measuredAt: null,
      }
    }
    case 'diagnoses': {
      const { eye, ...rest } = body
      return {
        eye: (eye as string | undefined) ?? 'not_applicable',
        data: {
          ...rest,
          display: rest.display ?? null,
          status: rest.status ?? 'active',
          onset: rest.onset ?? null,
        },
        measuredAt: null,
      }
    }
  }
}
