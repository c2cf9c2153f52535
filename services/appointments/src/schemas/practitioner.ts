import { Type, type Static } from '@sinclair/typebox'
import {
  Instant,
  ListQuery,
  MULTI_LINE,
  SINGLE_LINE,
  Uuid,
  centerCode,
  nullable,
} from '@clinic/platform/http'
import { DEFAULT_TIME_ZONE, TIME_ZONE_NAME, When } from './appointment'

/**
 * The Practitioner contract (DESIGN.md section 11): who works when and where, in their own time
 * zone, and their time off. These schemas validate requests and produce the OpenAPI document.
 */

export const PRACTITIONER_ID = '^[a-z0-9][a-z0-9-]{0,63}$'
/** "HH:MM", 00:00-23:59; an end may also be 24:00 (midnight at the end of the day). */
export const CLOCK_TIME = '^(([01][0-9]|2[0-3]):[0-5][0-9]|24:00)$'
export const DEFAULT_SLOT_MINUTES = 20
export const MAX_WORKING_HOURS = 100

export const PractitionerId = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: PRACTITIONER_ID,
  description: 'the slug appointments name in `practitioner`: lower-case letters, digits and -',
  examples: ['dra-lopez'],
})

const ClockTime = (description: string, example: string) =>
  Type.String({ pattern: CLOCK_TIME, description, examples: [example] })

export const WorkingHours = Type.Object(
  {
    codalmacen: centerCode('the center where the practitioner works then'),
    weekday: Type.Integer({ minimum: 1, maximum: 7, description: '1 = Monday ... 7 = Sunday' }),
    start: ClockTime('local time in the practitioner’s time zone, HH:MM', '09:00'),
    end: ClockTime('local time, after start (24:00 for midnight)', '14:00'),
  },
  { title: 'WorkingHours', additionalProperties: false },
)
export type WorkingHours = Static<typeof WorkingHours>

const TimeZone = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: TIME_ZONE_NAME,
  description: `IANA time zone of the working hours (default ${DEFAULT_TIME_ZONE})`,
  examples: ['Europe/Madrid'],
})
const SlotMinutes = Type.Integer({
  minimum: 5,
  maximum: 240,
  multipleOf: 5,
  description: `length of a slot in minutes, a multiple of 5 (default ${DEFAULT_SLOT_MINUTES})`,
})
const Name = Type.String({ minLength: 1, maxLength: 200, pattern: SINGLE_LINE, examples: ['Dra. López'] })
const Hours = Type.Array(WorkingHours, {
  maxItems: MAX_WORKING_HOURS,
  description: 'when and where the practitioner takes appointments; entries of a weekday may not overlap',
})

const EXAMPLE_HOURS = [
  { codalmacen: 'ALM1', weekday: 1, start: '09:00', end: '14:00' },
  { codalmacen: 'ALM1', weekday: 3, start: '15:00', end: '19:00' },
]

export const CreatePractitionerBody = Type.Object(
  {
    id: PractitionerId,
    name: Name,
    time_zone: Type.Optional(TimeZone),
    slot_minutes: Type.Optional(SlotMinutes),
    working_hours: Type.Optional(Hours),
    active: Type.Optional(Type.Boolean({ description: 'takes appointments (default true)' })),
  },
  {
    title: 'PractitionerCreate',
    additionalProperties: false,
    examples: [{ id: 'dra-lopez', name: 'Dra. López', slot_minutes: 20, working_hours: EXAMPLE_HOURS }],
  },
)
export type CreatePractitionerInput = Static<typeof CreatePractitionerBody>

export const UpdatePractitionerBody = Type.Object(
  {
    name: Type.Optional(Name),
    time_zone: Type.Optional(TimeZone),
    slot_minutes: Type.Optional(SlotMinutes),
    working_hours: Type.Optional(Hours),
    active: Type.Optional(Type.Boolean()),
  },
  {
    title: 'PractitionerPatch',
    additionalProperties: false,
    examples: [{ working_hours: EXAMPLE_HOURS }, { active: false }],
  },
)
export type UpdatePractitionerInput = Static<typeof UpdatePractitionerBody>

export const Practitioner = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    time_zone: Type.String(),
    slot_minutes: Type.Integer(),
    working_hours: Type.Array(WorkingHours),
    active: Type.Boolean(),
    created_at: Instant,
    updated_at: Instant,
    version: Type.Integer({ minimum: 1, description: 'increments on every change; the ETag' }),
  },
  {
    title: 'Practitioner',
    additionalProperties: false,
    examples: [
      {
        id: 'dra-lopez',
        name: 'Dra. López',
        time_zone: 'Europe/Madrid',
        slot_minutes: 20,
        working_hours: EXAMPLE_HOURS,
        active: true,
        created_at: '2026-11-22T17:05:12.345Z',
        updated_at: '2026-11-22T17:05:12.345Z',
        version: 1,
      },
    ],
  },
)
export type Practitioner = Static<typeof Practitioner>
/** The stored, editable part of a practitioner. */
export type PractitionerFields = Omit<Practitioner, 'id' | 'created_at' | 'updated_at' | 'version'>

export const ListPractitionersQuery = Type.Object(
  {
    ...ListQuery,
    active: Type.Optional(Type.Boolean({ description: 'only active (true) or inactive (false) ones' })),
  },
  { additionalProperties: false },
)
export type ListPractitionersInput = Static<typeof ListPractitionersQuery>

export const PractitionerParams = Type.Object({ id: PractitionerId }, { additionalProperties: false })
export const TimeOffParams = Type.Object(
  { id: PractitionerId, time_off_id: Uuid },
  { additionalProperties: false },
)

export const CreateTimeOffBody = Type.Object(
  {
    starts_at: When('RFC 3339 with any offset', '2026-12-24T00:00:00+01:00'),
    ends_at: When('after starts_at, at most 366 days later', '2026-12-27T00:00:00+01:00'),
    reason: Type.Optional(
      nullable(Type.String({ maxLength: 500, pattern: MULTI_LINE, description: 'e.g. holidays' })),
    ),
  },
  {
    title: 'TimeOffCreate',
    additionalProperties: false,
    examples: [
      { starts_at: '2026-12-24T00:00:00+01:00', ends_at: '2026-12-27T00:00:00+01:00', reason: 'vacaciones' },
    ],
  },
)
export type CreateTimeOffInput = Static<typeof CreateTimeOffBody>

export const TimeOff = Type.Object(
  {
    id: Uuid,
    practitioner: Type.String(),
    starts_at: Instant,
    ends_at: Instant,
    reason: nullable(Type.String()),
    created_at: Instant,
  },
  {
    title: 'TimeOff',
    additionalProperties: false,
    examples: [
      {
        id: '019ab2c6-3b00-7000-8000-000000000003',
        practitioner: 'dra-lopez',
        starts_at: '2026-12-23T23:00:00.000Z',
        ends_at: '2026-12-26T23:00:00.000Z',
        reason: 'vacaciones',
        created_at: '2026-11-22T17:05:12.345Z',
      },
    ],
  },
)
export type TimeOff = Static<typeof TimeOff>

export const ListTimeOffQuery = Type.Object(
  {
    ...ListQuery,
    from: Type.Optional(When('time off that ends after this instant', '2026-12-01T00:00:00Z')),
    to: Type.Optional(When('time off that starts before this instant', '2027-01-01T00:00:00Z')),
  },
  { additionalProperties: false },
)
export type ListTimeOffInput = Static<typeof ListTimeOffQuery>
