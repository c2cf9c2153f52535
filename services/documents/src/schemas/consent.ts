import { Type, type Static } from '@sinclair/typebox'
import { Instant, ListQuery, MULTI_LINE, SINGLE_LINE, Uuid, nullable } from '@clinic/platform/http'

/** The consent templates and consents of DESIGN.md section 16. */

export const CONSENT_STATUSES = ['pending', 'granted', 'refused', 'withdrawn', 'expired'] as const
export type ConsentStatus = (typeof CONSENT_STATUSES)[number]
export const SIGNER_ROLES = ['patient', 'guardian'] as const
export type SignerRole = (typeof SIGNER_ROLES)[number]

const enumOf = <T extends string>(values: readonly T[], description?: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], ...(description ? { description } : {}) })

const Key = Type.String({
  pattern: '^[a-z0-9][a-z0-9-]{0,63}$',
  description: 'a slug naming the procedure, e.g. cataract-surgery',
  examples: ['cataract-surgery'],
})
const Language = Type.String({
  pattern: '^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$',
  maxLength: 35,
  description: 'BCP 47, e.g. es or en',
  examples: ['es'],
})
const Name = Type.String({ minLength: 1, maxLength: 200, pattern: SINGLE_LINE })

export const CreateTemplateBody = Type.Object(
  {
    key: Key,
    language: Language,
    title: Type.String({ minLength: 1, maxLength: 200, pattern: SINGLE_LINE }),
    body: Type.String({
      minLength: 1,
      maxLength: 20_000,
      pattern: MULTI_LINE,
      description: 'plain text with paragraphs, shown exactly as written',
    }),
    codalmacen: Type.Optional(
      Type.String({
        pattern: '^[A-Za-z0-9_-]{1,10}$',
        description: 'the center it is for; none: the whole company',
      }),
    ),
  },
  {
    title: 'ConsentTemplateCreate',
    additionalProperties: false,
    examples: [
      {
        key: 'cataract-surgery',
        language: 'es',
        title: 'Consentimiento informado: cirugía de cataratas',
        body: 'Se me ha explicado la intervención, sus riesgos y alternativas.\n\nAutorizo la cirugía.',
      },
    ],
  },
)
export type CreateTemplateInput = Static<typeof CreateTemplateBody>

export const ConsentTemplate = Type.Object(
  {
    id: Uuid,
    key: Type.String(),
    language: Type.String(),
    title: Type.String(),
    body: Type.String(),
    version: Type.Integer({ minimum: 1, description: '1, 2, ... per key and language' }),
    text_sha256: Type.String({ description: 'SHA-256 (hex) of the body as UTF-8: what a consent freezes' }),
    codalmacen: nullable(Type.String()),
    created_at: Instant,
  },
  { title: 'ConsentTemplate', additionalProperties: false },
)
export type ConsentTemplate = Static<typeof ConsentTemplate>

export const ListTemplatesQuery = Type.Object(
  { ...ListQuery, key: Type.Optional(Key), language: Type.Optional(Language) },
  { additionalProperties: false },
)
export type ListTemplatesInput = Static<typeof ListTemplatesQuery>

export const Evidence = Type.Object(
  {
    signer_role: enumOf(SIGNER_ROLES),
    signer_name: Type.String(),
    signed_at: Instant,
    method: Type.Unsafe<'patient_link' | 'in_person'>({
      type: 'string',
      enum: ['patient_link', 'in_person'],
    }),
    ip: nullable(Type.String()),
    user_agent: nullable(Type.String()),
    text_sha256: Type.String(),
    witness: Type.Optional(Type.String()),
    signer_name_on_file: Type.Optional(
      nullable(
        Type.String({
          description:
            "the signer's name on the patient's record when they answered (the guardian's, or the patient's): null when the record has none",
        }),
      ),
    ),
    signer_name_matches: Type.Optional(
      nullable(
        Type.Boolean({
          description:
            'whether `signer_name` (as typed) names the signer on file: every word of the name on file in it, ignoring case, accents and spacing; false is a mismatch for staff to look at; null when there is no name on file',
        }),
      ),
    ),
    answer: Type.Unsafe<'accept' | 'decline'>({ type: 'string', enum: ['accept', 'decline'] }),
  },
  { title: 'ConsentEvidence', additionalProperties: false },
)
export type Evidence = Static<typeof Evidence>

export const Consent = Type.Object(
  {
    id: Uuid,
    patient_id: Uuid,
    template_key: Type.String(),
    language: Type.String(),
    template_version: Type.Integer(),
    text_sha256: Type.String(),
    signer_role: enumOf(SIGNER_ROLES),
    status: enumOf(CONSENT_STATUSES),
    expires_at: Instant,
    evidence: nullable(Evidence),
    document_id: nullable(Uuid),
    withdrawn_at: nullable(Instant),
    withdrawal_reason: nullable(Type.String()),
    appointment_id: nullable(Uuid),
    exam_id: nullable(Uuid),
    codalmacen: nullable(Type.String()),
    created_at: Instant,
    updated_at: Instant,
    version: Type.Integer({ minimum: 1 }),
  },
  { title: 'Consent', additionalProperties: false },
)
export type Consent = Static<typeof Consent>

export const CreateConsentBody = Type.Object(
  {
    patient_id: Uuid,
    template_key: Key,
    language: Type.Optional(Language),
    appointment_id: Type.Optional(Uuid),
    exam_id: Type.Optional(Uuid),
    expires_at: Type.Optional(
      Type.String({
        format: 'date-time',
        maxLength: 40,
        description: 'default: 7 days from now; at most 90 days from now',
      }),
    ),
    send: Type.Optional(Type.Boolean({ description: 'send the signer the link (default true)' })),
    channel: Type.Optional(enumOf(['email', 'sms'] as const, "default: the patient's preferred")),
    codalmacen: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]{1,10}$' })),
  },
  {
    title: 'ConsentCreate',
    additionalProperties: false,
    examples: [
      { patient_id: '019ab2c4-1f00-7000-8000-000000000001', template_key: 'cataract-surgery', send: false },
    ],
  },
)
export type CreateConsentInput = Static<typeof CreateConsentBody>

export const GrantBody = Type.Object(
  {
    signer_role: enumOf(SIGNER_ROLES),
    signer_name: Name,
    witness: Name,
    document_id: Type.Optional(Uuid),
  },
  { title: 'ConsentGrant', additionalProperties: false },
)
export type GrantInput = Static<typeof GrantBody>

export const WithdrawBody = Type.Object(
  {
    reason: Type.String({ minLength: 1, maxLength: 500, pattern: MULTI_LINE }),
    signer_name: Name,
  },
  { title: 'ConsentWithdraw', additionalProperties: false },
)
export type WithdrawInput = Static<typeof WithdrawBody>

export const ListConsentsQuery = Type.Object(
  {
    ...ListQuery,
    patient_id: Type.Optional(Uuid),
    template_key: Type.Optional(Key),
    status: Type.Optional(enumOf(CONSENT_STATUSES)),
    appointment_id: Type.Optional(Uuid),
  },
  { additionalProperties: false },
)
export type ListConsentsInput = Static<typeof ListConsentsQuery>
