import { Type, type Static } from '@sinclair/typebox'
import { Instant, ListQuery, MULTI_LINE, Uuid, centerCode, nullable } from '@clinic/platform/http'
import { DEFAULT_TIME_ZONE, Practitioner, TIME_ZONE_NAME, When } from './appointment'

/** The waitlist (DESIGN.md section 20): patients who would come sooner if a slot freed. */

export const ENTRY_STATUSES = ['waiting', 'offered', 'booked', 'expired', 'cancelled'] as const
export type EntryStatus = (typeof ENTRY_STATUSES)[number]
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const
export type Weekday = (typeof WEEKDAYS)[number]
const HH_MM = '^([01][0-9]|2[0-3]):[0-5][0-9]$'

const Times = Type.Object(
  {
    from: Type.String({ pattern: HH_MM, description: 'local HH:MM', examples: ['09:00'] }),
    to: Type.String({ pattern: HH_MM, description: 'local HH:MM, after from', examples: ['13:00'] }),
  },
  { additionalProperties: false, description: 'the slot must start in [from, to), local time' },
)
const Days = Type.Array(Type.Unsafe<Weekday>({ type: 'string', enum: [...WEEKDAYS] }), {
  minItems: 1,
  maxItems: 7,
  uniqueItems: true,
  description: 'weekdays the patient can come (local); default any',
})
const Channel = Type.Unsafe<'email' | 'sms'>({
  type: 'string',
  enum: ['email', 'sms'],
  description: "how the offer is sent; default the patient's (or guardian's) usual channel",
})

export const CreateWaitlistEntryBody = Type.Object(
  {
    patient_id: Uuid,
    codalmacen: centerCode('the center'),
    practitioner: Type.Optional(nullable(Practitioner)),
    duration_minutes: Type.Integer({ minimum: 5, maximum: 720, multipleOf: 5 }),
    earliest: Type.Optional(When('no slot starting before this instant', '2027-01-11T00:00:00+01:00')),
    latest: Type.Optional(When('no slot starting after this instant', '2027-02-28T00:00:00+01:00')),
    days: Type.Optional(Days),
    times: Type.Optional(Times),
    time_zone: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: TIME_ZONE_NAME,
        description: `the zone of days and times (default ${DEFAULT_TIME_ZONE})`,
      }),
    ),
    priority: Type.Optional(
      Type.Integer({
        minimum: -100,
        maximum: 100,
        default: 0,
        description: 'higher is offered first; then age',
      }),
    ),
    channel: Type.Optional(Channel),
    notes: Type.Optional(nullable(Type.String({ maxLength: 4000, pattern: MULTI_LINE }))),
  },
  {
    title: 'WaitlistEntryCreate',
    additionalProperties: false,
    examples: [
      {
        patient_id: '019ab2c4-1f00-7000-8000-000000000001',
        codalmacen: 'ALM1',
        practitioner: 'dra-lopez',
        duration_minutes: 20,
        days: ['mon', 'wed'],
        times: { from: '09:00', to: '13:00' },
      },
    ],
  },
)
export type CreateWaitlistEntryInput = Static<typeof CreateWaitlistEntryBody>

export const Offer = Type.Object(
  {
    id: Type.String({ ...Uuid, description: 'the offer; also the id of the hold that keeps the slot' }),
    starts_at: Instant,
    ends_at: Instant,
    practitioner: Type.String(),
    sends_at: Type.String({ ...Instant, description: 'when the patient is told (after quiet hours)' }),
    expires_at: Type.String({ ...Instant, description: 'the hold ends then; unanswered, the entry expires' }),
  },
  { additionalProperties: false },
)

export const WaitlistEntry = Type.Object(
  {
    id: Uuid,
    patient_id: Uuid,
    codalmacen: Type.String(),
    practitioner: nullable(Type.String({ description: 'null: any practitioner' })),
    duration_minutes: Type.Integer(),
    earliest: nullable(Instant),
    latest: nullable(Instant),
    days: nullable(Days),
    times: nullable(Times),
    time_zone: Type.String(),
    priority: Type.Integer(),
    channel: nullable(Channel),
    notes: nullable(Type.String()),
    status: Type.Unsafe<EntryStatus>({ type: 'string', enum: [...ENTRY_STATUSES] }),
    offer: nullable(
      Type.Object(Offer.properties, { additionalProperties: false, description: 'while offered' }),
    ),
    appointment_id: nullable(Type.String({ ...Uuid, description: 'once booked' })),
    created_at: Instant,
    updated_at: Instant,
    version: Type.Integer({ minimum: 1 }),
  },
  { title: 'WaitlistEntry', additionalProperties: false },
)
export type WaitlistEntry = Static<typeof WaitlistEntry>
export type OfferView = Static<typeof Offer>

export const ListWaitlistQuery = Type.Object(
  {
    ...ListQuery,
    status: Type.Optional(Type.Unsafe<EntryStatus>({ type: 'string', enum: [...ENTRY_STATUSES] })),
    practitioner: Type.Optional(Practitioner),
    patient_id: Type.Optional(Uuid),
  },
  { additionalProperties: false },
)
export type ListWaitlistInput = Static<typeof ListWaitlistQuery>
