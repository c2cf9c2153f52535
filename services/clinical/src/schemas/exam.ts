import { Type, type Static } from '@sinclair/typebox'
import {
  DateOnly,
  Instant,
  ListQuery,
  MULTI_LINE,
  SINGLE_LINE,
  Uuid,
  centerCode,
  nullable,
} from '@clinic/platform/http'
import { Diagnosis, Iop, Lens, LensFields, Refraction, VisualAcuity, EYES, TREND_TYPES } from './findings'

/** The Exam contract (DESIGN.md section 14): validation, answers and the OpenAPI document. */

const enumOf = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...(description ? { description } : {}) })

export const EXAM_KINDS = ['comprehensive', 'follow_up', 'post_op', 'screening', 'contact_lens'] as const
export type ExamKind = (typeof EXAM_KINDS)[number]
export const EXAM_STATUSES = ['draft', 'signed'] as const
export type ExamStatus = (typeof EXAM_STATUSES)[number]

const When = (description: string) => Type.String({ format: 'date-time', maxLength: 40, description })
const Practitioner = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: SINGLE_LINE,
  description: 'who examined the patient',
  examples: ['dra-lopez'],
})
const ChiefComplaint = Type.String({
  maxLength: 1000,
  pattern: MULTI_LINE,
  description: 'why the patient came',
})
const Notes = Type.String({ maxLength: 8000, pattern: MULTI_LINE, description: 'free text; never in events' })

export const CreateExamBody = Type.Object(
  {
    patient_id: Uuid,
    codalmacen: Type.Optional(centerCode('the center; default ?codalmacen=, else the patient’s home center')),
    practitioner: Practitioner,
    appointment_id: Type.Optional(nullable(Uuid)),
    performed_at: Type.Optional(When('default now')),
    kind: Type.Optional(enumOf(EXAM_KINDS, 'default comprehensive')),
    chief_complaint: Type.Optional(nullable(ChiefComplaint)),
    notes: Type.Optional(nullable(Notes)),
  },
  {
    title: 'ExamCreate',
    additionalProperties: false,
    examples: [
      {
        patient_id: '019ab2c4-1f00-7000-8000-000000000001',
        codalmacen: 'ALM1',
        practitioner: 'dra-lopez',
        kind: 'follow_up',
        chief_complaint: 'control de glaucoma',
      },
    ],
  },
)
export type CreateExamInput = Static<typeof CreateExamBody>

export const UpdateExamBody = Type.Object(
  {
    practitioner: Type.Optional(Practitioner),
    appointment_id: Type.Optional(nullable(Uuid)),
    performed_at: Type.Optional(When('RFC 3339, any offset')),
    kind: Type.Optional(enumOf(EXAM_KINDS)),
    chief_complaint: Type.Optional(nullable(ChiefComplaint)),
    notes: Type.Optional(nullable(Notes)),
  },
  { title: 'ExamPatch', additionalProperties: false },
)
export type UpdateExamInput = Static<typeof UpdateExamBody>
export const READ_ONLY_FIELDS = [
  'id',
  'patient_id',
  'codalmacen',
  'status',
  'signed_at',
  'signed_by',
  'amendments',
  'created_at',
  'updated_at',
  'version',
  'visual_acuity',
  'iop',
  'refraction',
  'diagnoses',
  'prescriptions',
] as const

export const PRESCRIPTION_TYPES = ['spectacles', 'contact_lenses'] as const
export const PrescriptionLensBody = Type.Object(
  {
    eye: enumOf(EYES),
    ...LensFields,
    base_curve_mm: Type.Optional(nullable(Type.Number({ minimum: 6, maximum: 11 }))),
    diameter_mm: Type.Optional(nullable(Type.Number({ minimum: 8, maximum: 24 }))),
    brand: Type.Optional(nullable(Type.String({ minLength: 1, maxLength: 100, pattern: SINGLE_LINE }))),
  },
  { additionalProperties: false },
)
export const CreatePrescriptionBody = Type.Object(
  {
    type: enumOf(PRESCRIPTION_TYPES),
    lenses: Type.Array(PrescriptionLensBody, { minItems: 1, maxItems: 2, description: 'one per eye' }),
    valid_until: Type.Optional(DateOnly),
    notes: Type.Optional(nullable(Notes)),
  },
  { title: 'PrescriptionCreate', additionalProperties: false },
)
export type CreatePrescriptionInput = Static<typeof CreatePrescriptionBody>

export const Prescription = Type.Object(
  {
    id: Uuid,
    exam_id: Uuid,
    patient_id: Uuid,
    codalmacen: Type.String(),
    type: enumOf(PRESCRIPTION_TYPES),
    lenses: Type.Array(
      Type.Object({
        eye: enumOf(EYES),
        ...Lens,
        base_curve_mm: nullable(Type.Number()),
        diameter_mm: nullable(Type.Number()),
        brand: nullable(Type.String()),
      }),
    ),
    valid_until: DateOnly,
    notes: nullable(Type.String()),
    issued_at: Instant,
    issued_by: Type.String(),
    version: Type.Integer(),
  },
  { title: 'Prescription' },
)
export type Prescription = Static<typeof Prescription>

export const Exam = Type.Object(
  {
    id: Uuid,
    patient_id: Uuid,
    codalmacen: Type.String(),
    practitioner: Type.String(),
    appointment_id: nullable(Uuid),
    performed_at: Instant,
    kind: enumOf(EXAM_KINDS),
    chief_complaint: nullable(Type.String()),
    notes: nullable(Type.String()),
    status: enumOf(EXAM_STATUSES),
    signed_at: nullable(Instant),
    signed_by: nullable(Type.String()),
    amendments: Type.Integer({ description: 'how many amendments since signing' }),
    created_at: Instant,
    updated_at: Instant,
    version: Type.Integer(),
    visual_acuity: Type.Array(VisualAcuity),
    iop: Type.Array(Iop),
    refraction: Type.Array(Refraction),
    diagnoses: Type.Array(Diagnosis),
    prescriptions: Type.Array(Prescription),
  },
  { title: 'Exam' },
)
export type Exam = Static<typeof Exam>
/** The exam's own columns (its findings and prescriptions are separate tables). */
export type ExamRow = Omit<Exam, 'visual_acuity' | 'iop' | 'refraction' | 'diagnoses' | 'prescriptions'>
export type ExamFields = Pick<
  ExamRow,
  | 'patient_id'
  | 'codalmacen'
  | 'practitioner'
  | 'appointment_id'
  | 'performed_at'
  | 'kind'
  | 'chief_complaint'
  | 'notes'
>

export const ListExamsQuery = Type.Object(
  {
    ...ListQuery,
    patient_id: Type.Optional(Uuid),
    practitioner: Type.Optional(Practitioner),
    status: Type.Optional(enumOf(EXAM_STATUSES)),
    from: Type.Optional(When('performed_at from (inclusive)')),
    to: Type.Optional(When('performed_at to (exclusive)')),
  },
  { additionalProperties: false },
)
export type ListExamsInput = Static<typeof ListExamsQuery>

export const HistoryEntry = Type.Object(
  {
    version: Type.Integer({ description: 'the exam’s version after this change' }),
    action: enumOf(['created', 'updated', 'finding_added', 'finding_removed', 'signed', 'amended'] as const),
    at: Instant,
    by: Type.Object({ user_id: Type.String(), username: Type.String() }),
    reason: nullable(Type.String()),
    changes: Type.Object({
      fields: Type.Array(Type.String(), { description: 'names of changed fields, never their values' }),
      added: Type.Array(Uuid, { description: 'findings added' }),
      superseded: Type.Array(Uuid, { description: 'findings removed (draft) or superseded (amendment)' }),
    }),
  },
  { title: 'ExamHistoryEntry' },
)
export type HistoryEntry = Static<typeof HistoryEntry>
export const History = Type.Object({ data: Type.Array(HistoryEntry) }, { title: 'ExamHistory' })

export const TrendQuery = Type.Object(
  {
    type: Type.Optional(enumOf(TREND_TYPES, 'default iop')),
    eye: Type.Optional(enumOf(['right', 'left', 'both'] as const)),
    kind: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 40,
        pattern: SINGLE_LINE,
        description: 'acuity kind or IOP method',
      }),
    ),
    from: Type.Optional(When('from (inclusive)')),
    to: Type.Optional(When('to (exclusive)')),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 500 })),
    codalmacen: Type.Optional(centerCode()),
  },
  { additionalProperties: false },
)
export type TrendInput = Static<typeof TrendQuery>
export const Measurement = Type.Object(
  {
    id: Uuid,
    exam_id: Uuid,
    performed_at: Instant,
    eye: Type.String(),
    mmhg: Type.Optional(Type.Number()),
    method: Type.Optional(Type.String()),
    measured_at: Type.Optional(Instant),
    cct_um: Type.Optional(nullable(Type.Integer())),
    value: Type.Optional(Type.String()),
    notation: Type.Optional(Type.String()),
    logmar: Type.Optional(nullable(Type.Number())),
    kind: Type.Optional(Type.String()),
    distance_m: Type.Optional(Type.Number()),
  },
  { title: 'Measurement' },
)
export type Measurement = Static<typeof Measurement>
export const TrendList = Type.Object(
  {
    data: Type.Array(Measurement),
    meta: Type.Object({ total: Type.Integer(), limit: Type.Integer() }),
  },
  { title: 'MeasurementList' },
)
export const PatientParams = Type.Object({ patient_id: Uuid }, { additionalProperties: false })
