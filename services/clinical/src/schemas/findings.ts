import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { DateOnly, Instant, MULTI_LINE, SINGLE_LINE, Uuid, nullable } from '@clinic/platform/http'
import { NOTATIONS } from '../domain/acuity'

/**
 * The findings of an exam (DESIGN.md section 14), one schema per kind: what a POST takes and what
 * the exam shows. Values are kept as entered; computed fields (acuity's logMAR, a refraction's
 * minus-cylinder form) are added by the service.
 */

const enumOf = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...(description ? { description } : {}) })

export const EYES = ['right', 'left'] as const
export const ACUITY_EYES = ['right', 'left', 'both'] as const
export const DIAGNOSIS_EYES = ['right', 'left', 'both', 'not_applicable'] as const
export const ACUITY_KINDS = ['uncorrected', 'habitual', 'best_corrected', 'pinhole', 'near'] as const
export const IOP_METHODS = ['goldmann', 'icare', 'non_contact', 'tonopen', 'perkins', 'palpation'] as const
export const REFRACTION_KINDS = [
  'manifest',
  'autorefraction',
  'cycloplegic',
  'current_glasses',
  'contact_lens',
] as const
export const PRISM_BASES = ['in', 'out', 'up', 'down'] as const
export const DIAGNOSIS_SYSTEMS = ['icd10', 'icd10cm', 'cie10es', 'snomed'] as const
export const DIAGNOSIS_STATUSES = ['active', 'suspected', 'resolved'] as const
export const FINDING_STATES = ['live', 'superseded'] as const
export const TREND_TYPES = ['iop', 'visual_acuity'] as const

const Eye = enumOf(EYES)
const Label = (description: string, max = 100) =>
  Type.String({ minLength: 1, maxLength: max, pattern: SINGLE_LINE, description })

// Bodies -------------------------------------------------------------------------------------

export const AcuityBody = Type.Object(
  {
    eye: enumOf(ACUITY_EYES, '`both`: binocular'),
    kind: enumOf(ACUITY_KINDS, '`habitual`: with the patient’s own correction'),
    value: Type.String({
      minLength: 1,
      maxLength: 20,
      pattern: SINGLE_LINE,
      description: 'exactly as entered: 6/9, 20/30, 0.67, 0.18, 76, CF, HM, LP, NLP',
      examples: ['6/9'],
    }),
    notation: enumOf(NOTATIONS),
    distance_m: Type.Optional(
      Type.Number({ exclusiveMinimum: 0, maximum: 20, description: 'default 6 (near: 0.4)' }),
    ),
    chart: Type.Optional(nullable(Label('the chart used, e.g. ETDRS'))),
  },
  { title: 'VisualAcuityCreate', additionalProperties: false },
)
export const IopBody = Type.Object(
  {
    eye: Eye,
    mmhg: Type.Number({ minimum: 0, maximum: 80, description: 'one decimal at most' }),
    method: enumOf(IOP_METHODS),
    measured_at: Type.String({
      format: 'date-time',
      maxLength: 40,
      description: 'when it was taken (pressure varies through the day)',
    }),
    cct_um: Type.Optional(
      nullable(Type.Integer({ minimum: 300, maximum: 900, description: 'central corneal thickness, µm' })),
    ),
  },
  { title: 'IopCreate', additionalProperties: false },
)
const Prism = Type.Object(
  {
    amount: Type.Number({ exclusiveMinimum: 0, maximum: 50, description: 'prism dioptres' }),
    base: enumOf(PRISM_BASES),
  },
  { additionalProperties: false },
)
/** A refraction's optical fields (also a prescription lens's). */
export const LensFields = {
  sphere: Type.Number({ minimum: -30, maximum: 30, description: 'dioptres, steps of 0.25' }),
  cylinder: Type.Optional(
    Type.Number({
      minimum: -10,
      maximum: 10,
      description: 'dioptres, steps of 0.25; a plus cylinder is transposed to minus form',
    }),
  ),
  axis: Type.Optional(
    nullable(
      Type.Integer({ minimum: 1, maximum: 180, description: 'required exactly when cylinder is not 0' }),
    ),
  ),
  add: Type.Optional(nullable(Type.Number({ minimum: 0.25, maximum: 4, description: 'near addition' }))),
  prism: Type.Optional(nullable(Prism)),
}
export const RefractionBody = Type.Object(
  { eye: Eye, kind: enumOf(REFRACTION_KINDS), ...LensFields },
  { title: 'RefractionCreate', additionalProperties: false },
)
export const DiagnosisBody = Type.Object(
  {
    code: Type.String({
      minLength: 1,
      maxLength: 20,
      description: 'a code of `system`: ICD-10 (H40.1), ICD-10-CM (H40.11), CIE-10-ES, or a SNOMED CT id',
    }),
    system: enumOf(
      DIAGNOSIS_SYSTEMS,
      '`icd10`: WHO ICD-10; `icd10cm`: ICD-10-CM (US); `cie10es`: CIE-10-ES (Spain); `snomed`: SNOMED CT',
    ),
    display: Type.Optional(nullable(Label('the diagnosis in words', 300))),
    eye: Type.Optional(enumOf(DIAGNOSIS_EYES, 'default not_applicable')),
    status: Type.Optional(enumOf(DIAGNOSIS_STATUSES, 'default active')),
    onset: Type.Optional(nullable(DateOnly)),
  },
  { title: 'DiagnosisCreate', additionalProperties: false },
)

// Answers ------------------------------------------------------------------------------------

const FindingCommon = {
  id: Uuid,
  state: enumOf(FINDING_STATES, 'superseded: removed by an amendment, still readable'),
  recorded_at: Instant,
  recorded_by: Type.String({ description: 'username of who recorded it' }),
}
const Nullable = <T extends TSchema>(s: T) => nullable(s)

export const VisualAcuity = Type.Object(
  {
    ...FindingCommon,
    eye: enumOf(ACUITY_EYES),
    kind: enumOf(ACUITY_KINDS),
    value: Type.String(),
    notation: enumOf(NOTATIONS),
    logmar: Nullable(Type.Number({ description: 'computed; null for LP and NLP' })),
    distance_m: Type.Number(),
    chart: Nullable(Type.String()),
  },
  { title: 'VisualAcuity' },
)
export const Iop = Type.Object(
  {
    ...FindingCommon,
    eye: Eye,
    mmhg: Type.Number(),
    method: enumOf(IOP_METHODS),
    measured_at: Instant,
    cct_um: Nullable(Type.Integer()),
  },
  { title: 'Iop' },
)
export const Lens = {
  sphere: Type.Number(),
  cylinder: Type.Number({ description: 'minus-cylinder form (0: none)' }),
  axis: Nullable(Type.Integer()),
  add: Nullable(Type.Number()),
  prism: Nullable(Type.Object({ amount: Type.Number(), base: enumOf(PRISM_BASES) })),
}
export const Refraction = Type.Object(
  { ...FindingCommon, eye: Eye, kind: enumOf(REFRACTION_KINDS), ...Lens },
  { title: 'Refraction' },
)
export const Diagnosis = Type.Object(
  {
    ...FindingCommon,
    code: Type.String(),
    system: enumOf(DIAGNOSIS_SYSTEMS),
    system_as_entered: Type.Optional(
      Type.String({
        description:
          'only on a diagnosis whose system a migration relabelled: the system it was entered under (`icd10` before the ICD-10 editions were told apart)',
      }),
    ),
    display: Nullable(Type.String()),
    eye: enumOf(DIAGNOSIS_EYES),
    status: enumOf(DIAGNOSIS_STATUSES),
    onset: Nullable(DateOnly),
  },
  { title: 'Diagnosis' },
)

export const FINDING_BODIES = {
  visual_acuity: AcuityBody,
  iop: IopBody,
  refraction: RefractionBody,
  diagnoses: DiagnosisBody,
} as const
export const FINDING_SCHEMAS = {
  visual_acuity: VisualAcuity,
  iop: Iop,
  refraction: Refraction,
  diagnoses: Diagnosis,
} as const

export type VisualAcuity = Static<typeof VisualAcuity>
export type Iop = Static<typeof Iop>
export type Refraction = Static<typeof Refraction>
export type Diagnosis = Static<typeof Diagnosis>
export type Finding = VisualAcuity | Iop | Refraction | Diagnosis
export const FindingParams = Type.Object({ id: Uuid, finding_id: Uuid }, { additionalProperties: false })

/** Amendments: what to add, by kind, and which live findings to supersede. */
export const AmendmentBody = Type.Object(
  {
    reason: Type.String({
      minLength: 1,
      maxLength: 1000,
      pattern: MULTI_LINE,
      description: 'why it changes',
    }),
    add: Type.Optional(
      Type.Object(
        {
          visual_acuity: Type.Optional(Type.Array(AcuityBody, { maxItems: 20 })),
          iop: Type.Optional(Type.Array(IopBody, { maxItems: 20 })),
          refraction: Type.Optional(Type.Array(RefractionBody, { maxItems: 20 })),
          diagnoses: Type.Optional(Type.Array(DiagnosisBody, { maxItems: 20 })),
        },
        { additionalProperties: false },
      ),
    ),
    remove: Type.Optional(
      Type.Array(Uuid, { maxItems: 50, description: 'ids of live findings to supersede' }),
    ),
  },
  { title: 'AmendmentCreate', additionalProperties: false },
)
export type AmendmentInput = Static<typeof AmendmentBody>
