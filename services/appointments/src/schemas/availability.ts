import { Type, type Static } from '@sinclair/typebox'
import { Instant, Uuid, centerCode, nullable, problemSchema } from '@clinic/platform/http'
import { When } from './appointment'
import { PractitionerId } from './practitioner'

/** Availability and holds (DESIGN.md section 11): free slots of a center, and keeping one a while. */

export const MAX_AVAILABILITY_DAYS = 31
export const MAX_AVAILABILITY_LIMIT = 500
export const DEFAULT_AVAILABILITY_LIMIT = 100
export const MAX_PRACTITIONERS_ASKED = 50

export const AvailabilityQuery = Type.Object(
  {
    codalmacen: centerCode('the center (required)'),
    from: When('slots starting at or after this instant', '2026-11-23T00:00:00Z'),
    to: When(
      `slots starting before this instant; at most ${MAX_AVAILABILITY_DAYS} days after from`,
      '2026-11-30T00:00:00Z',
    ),
    practitioner: Type.Optional(
      Type.Array(PractitionerId, {
        minItems: 1,
        maxItems: MAX_PRACTITIONERS_ASKED,
        description:
          'only these practitioners, by repeating the parameter; default every active one of the center',
      }),
    ),
    duration: Type.Optional(
      Type.Integer({
        minimum: 5,
        maximum: 720,
        multipleOf: 5,
        description: 'minutes each slot must last, a multiple of 5 (default each practitioner’s slot length)',
      }),
    ),
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_AVAILABILITY_LIMIT,
        default: DEFAULT_AVAILABILITY_LIMIT,
        description: 'at most this many slots, earliest first; `limit=1` is the next available',
      }),
    ),
  },
  { additionalProperties: false },
)
export type AvailabilityInput = Static<typeof AvailabilityQuery>

export const Slot = Type.Object(
  {
    practitioner: Type.String(),
    codalmacen: Type.String(),
    starts_at: Instant,
    ends_at: Instant,
  },
  {
    title: 'Slot',
    additionalProperties: false,
    examples: [
      {
        practitioner: 'dra-lopez',
        codalmacen: 'ALM1',
        starts_at: '2026-11-23T08:00:00.000Z',
        ends_at: '2026-11-23T08:20:00.000Z',
      },
    ],
  },
)
export type Slot = Static<typeof Slot>

export const SlotList = Type.Object(
  { data: Type.Array(Slot, { description: 'by starts_at, then practitioner' }) },
  { title: 'SlotList', additionalProperties: false },
)

export const CreateHoldBody = Type.Object(
  {
    practitioner: PractitionerId,
    codalmacen: centerCode('the center of the slot'),
    starts_at: When('RFC 3339 with any offset', '2026-11-23T09:00:00+01:00'),
    ends_at: When('after starts_at, at most 12 h later', '2026-11-23T09:20:00+01:00'),
    patient_id: Type.Optional(nullable(Uuid)),
  },
  {
    title: 'HoldCreate',
    additionalProperties: false,
    examples: [
      {
        practitioner: 'dra-lopez',
        codalmacen: 'ALM1',
        starts_at: '2026-11-23T09:00:00+01:00',
        ends_at: '2026-11-23T09:20:00+01:00',
      },
    ],
  },
)
export type CreateHoldInput = Static<typeof CreateHoldBody>

export const Hold = Type.Object(
  {
    id: Uuid,
    practitioner: Type.String(),
    codalmacen: Type.String(),
    starts_at: Instant,
    ends_at: Instant,
    patient_id: nullable(Uuid),
    expires_at: Type.String({
      format: 'date-time',
      description: 'after this the hold blocks nothing (RFC 3339 UTC)',
    }),
    created_at: Instant,
  },
  {
    title: 'Hold',
    additionalProperties: false,
    examples: [
      {
        id: '019ab2c7-4c00-7000-8000-000000000004',
        practitioner: 'dra-lopez',
        codalmacen: 'ALM1',
        starts_at: '2026-11-23T08:00:00.000Z',
        ends_at: '2026-11-23T08:20:00.000Z',
        patient_id: null,
        expires_at: '2026-11-22T17:10:12.345Z',
        created_at: '2026-11-22T17:05:12.345Z',
      },
    ],
  },
)
export type Hold = Static<typeof Hold>

/** A 409 slot_conflict that offers the practitioner's next free slots. */
export const SlotConflictProblem = Type.Unsafe({
  ...problemSchema,
  title: 'SlotConflictProblem',
  description:
    'slot_conflict (with `alternatives` for a registered practitioner), idempotency_conflict, or invalid_transition (PATCH)',
  properties: {
    ...problemSchema.properties,
    alternatives: Type.Array(Slot, {
      maxItems: 3,
      description: 'the next free slots of that practitioner at that center, same duration',
    }),
  },
})
