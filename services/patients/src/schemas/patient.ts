import { Type, type Static } from '@sinclair/typebox'
import { DateOnly, Instant, MULTI_LINE, SINGLE_LINE, Uuid, centerCode, nullable } from '@clinic/platform/http'

/**
 * The Patient contract (DESIGN.md section 4). These schemas validate requests, filter responses
 * and produce the OpenAPI document; domain types are derived from them, never hand-copied.
 */

export const E164 = '^\\+[1-9]\\d{6,14}$'
export const BCP47 = '^[a-zA-Z]{2,3}(-[a-zA-Z0-9]{2,8})*$'
export const COUNTRY = '^[A-Z]{2}$'
export const NATIONAL_ID = '^[A-Za-z0-9./-]+$'

/**
 * Plain words for those patterns in a 400 (a regex is no message for a person); the platform's
 * text patterns (SINGLE_LINE, MULTI_LINE) have theirs.
 */
export const PATTERN_MESSAGES: Record<string, string> = {
  [E164]: 'must be an E.164 phone number, e.g. +34600111222',
  [BCP47]: 'must be a BCP 47 language tag, e.g. es or en-GB',
  [COUNTRY]: 'must be an ISO 3166-1 alpha-2 country code, e.g. ES',
  [NATIONAL_ID]: 'may contain only letters, digits, ".", "/" and "-"',
}

/**
 * A single-line field (names, address parts, the guardian's relationship): not blank, no line
 * breaks, tabs or control characters, as the appointments' practitioner. Only `notes` is free text.
 */
const text = (maxLength: number, description?: string) =>
  Type.String({ minLength: 1, maxLength, pattern: SINGLE_LINE, ...(description ? { description } : {}) })
export const SEXES = ['female', 'male', 'other', 'unknown'] as const
export const CHANNELS = ['email', 'sms'] as const

const Phone = Type.String({ pattern: E164, maxLength: 16, description: 'E.164, e.g. +34600111222' })
const Email = Type.String({ format: 'email', maxLength: 254 })
const SexValue = Type.Unsafe<(typeof SEXES)[number]>({ type: 'string', enum: [...SEXES] })
const ChannelValue = Type.Unsafe<(typeof CHANNELS)[number]>({ type: 'string', enum: [...CHANNELS] })

const addressFields = {
  line1: nullable(text(200)),
  line2: nullable(text(200)),
  city: nullable(text(100)),
  postal_code: nullable(text(20)),
  region: nullable(text(100)),
  country: nullable(Type.String({ pattern: COUNTRY, description: 'ISO 3166-1 alpha-2, e.g. ES' })),
}
export const Address = Type.Object(addressFields, { additionalProperties: false })
/** Every part optional on input; stored and returned with all six keys (null when absent). */
export const AddressInput = Type.Partial(Address, { additionalProperties: false })

export const GuardianInput = Type.Object(
  {
    name: text(200),
    relationship: Type.Optional(nullable(text(50, 'e.g. mother, father, legal tutor'))),
    email: Type.Optional(nullable(Email)),
    phone: Type.Optional(nullable(Phone)),
  },
  { additionalProperties: false },
)
export const Guardian = Type.Object({
  name: Type.String(),
  relationship: nullable(Type.String()),
  email: nullable(Type.String()),
  phone: nullable(Type.String()),
})

/** The fields a client may write, with their rules. */
const writable = {
  codalmacen: nullable(
    centerCode(
      'home center (null: none). On create it defaults to ?codalmacen=; a token limited to centers must give one of them',
    ),
  ),
  first_name: text(100),
  last_name: text(100),
  birth_date: Type.String({ format: 'date', description: 'YYYY-MM-DD, not in the future' }),
  sex: nullable(SexValue),
  national_id: nullable(
    Type.String({ minLength: 1, maxLength: 32, pattern: NATIONAL_ID, description: 'unique in the company' }),
  ),
  email: nullable(Email),
  phone: nullable(Phone),
  address: nullable(AddressInput),
  preferred_channel: nullable(ChannelValue),
  language: Type.String({ pattern: BCP47, maxLength: 35, description: 'BCP 47, e.g. es, ca, en-GB' }),
  requires_legal_guardian: Type.Boolean(),
  guardian: nullable(GuardianInput),
  notes: nullable(
    Type.String({
      maxLength: 4000,
      pattern: MULTI_LINE,
      description:
        'free text, line breaks allowed (no control characters; null clears it); never sent in events',
    }),
  ),
}

export const CreatePatientBody = Type.Object(
  {
    codalmacen: Type.Optional(writable.codalmacen),
    first_name: writable.first_name,
    last_name: writable.last_name,
    birth_date: writable.birth_date,
    sex: Type.Optional(writable.sex),
    national_id: Type.Optional(writable.national_id),
    email: Type.Optional(writable.email),
    phone: Type.Optional(writable.phone),
    address: Type.Optional(writable.address),
    preferred_channel: Type.Optional(writable.preferred_channel),
    language: Type.Optional(writable.language),
    requires_legal_guardian: Type.Optional(writable.requires_legal_guardian),
    guardian: Type.Optional(writable.guardian),
    notes: Type.Optional(writable.notes),
  },
  {
    title: 'PatientCreate',
    additionalProperties: false,
    examples: [
      {
        codalmacen: 'ALM1',
        first_name: 'Lucia',
        last_name: 'Garcia',
        birth_date: '2015-04-02',
        requires_legal_guardian: true,
        guardian: { name: 'Marta Garcia', relationship: 'mother', phone: '+34600111222' },
      },
    ],
  },
)
export type CreatePatientInput = Static<typeof CreatePatientBody>

/** Every writable field optional; `address` and `guardian` replace the stored value as a whole. */
export const UpdatePatientBody = Type.Partial(Type.Object(writable, { additionalProperties: false }), {
  title: 'PatientPatch',
  additionalProperties: false,
  examples: [{ email: 'lucia@example.test', preferred_channel: 'email' }],
})
export type UpdatePatientInput = Static<typeof UpdatePatientBody>

export const Patient = Type.Object(
  {
    id: Uuid,
    codalmacen: nullable(Type.String()),
    first_name: Type.String(),
    last_name: Type.String(),
    birth_date: DateOnly,
    sex: nullable(SexValue),
    national_id: nullable(Type.String()),
    email: nullable(Type.String()),
    phone: nullable(Type.String()),
    address: nullable(Address),
    preferred_channel: nullable(ChannelValue),
    language: Type.String(),
    requires_legal_guardian: Type.Boolean(),
    guardian: nullable(Guardian),
    notes: nullable(Type.String()),
    created_at: Instant,
    updated_at: Instant,
    version: Type.Integer({ minimum: 1, description: 'increments on every change; the ETag' }),
  },
  { title: 'Patient', additionalProperties: false },
)
export type Patient = Static<typeof Patient>
export type PatientAddress = Static<typeof Address>
export type PatientGuardian = Static<typeof Guardian>
/** The stored, editable part of a patient. */
export type PatientFields = Omit<Patient, 'id' | 'created_at' | 'updated_at' | 'version'>

/** What other services read (the `patient.created` event data): contact details, never notes. */

/** Fields a client can never write; named as read-only in a 400 rather than as unknown. */
export const READ_ONLY_FIELDS = [
  'id',
  'version',
  'created_at',
  'updated_at',
  'idempresa',
  'idEmpresa',
  'company_id',
] as const

export const SORTS = ['last_name', '-created_at'] as const
export type PatientSort = (typeof SORTS)[number]
