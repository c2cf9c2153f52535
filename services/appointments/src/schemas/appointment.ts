import { Type, type Static } from '@sinclair/typebox'
import {
  CenterCode,
  Instant,
  ListQuery,
  MULTI_LINE,
  SINGLE_LINE,
  Uuid,
  centerCode,
  nullable,
} from '@clinic/platform/http'

/**
 * The Appointment contract (DESIGN.md section 4). These schemas validate requests, filter
 * responses and produce the OpenAPI document; the domain's types come from them.
 */

export const STATUSES = ['scheduled', 'confirmed', 'checked_in', 'completed', 'cancelled', 'no_show'] as const
export type AppointmentStatus = (typeof STATUSES)[number]
export const SORTS = ['starts_at', '-starts_at'] as const
export type AppointmentSort = (typeof SORTS)[number]
export const DEFAULT_TIME_ZONE = 'Europe/Madrid'

export const TIME_ZONE_NAME = '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}$'
/** Plain words for this contract's own patterns (the platform's text patterns have theirs). */
export const TEXT_MESSAGES: Record<string, string> = {
  [TIME_ZONE_NAME]: 'must be an IANA time zone name, e.g. Europe/Madrid',
}

const statusOf = (values: readonly AppointmentStatus[], description?: string) =>
  Type.Unsafe<AppointmentStatus>({
    type: 'string',
    enum: [...values],
    ...(description ? { description } : {}),
  })

export const Practitioner = Type.String({
  minLength: 1,
  maxLength: 100,
  pattern: SINGLE_LINE,
  description: 'who sees the patient (a stable id or name, compared exactly); one appointment at a time',
  examples: ['dra-lopez'],
})
/** An instant a client sends: RFC 3339 with any offset (stored and answered in UTC). */
export const When = (description: string, example: string) =>
  Type.String({ format: 'date-time', maxLength: 40, description, examples: [example] })
const TimeZone = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: TIME_ZONE_NAME,
  description: `IANA time zone for reminders in local time (default ${DEFAULT_TIME_ZONE})`,
  examples: ['Europe/Madrid'],
})
const Reason = Type.String({ maxLength: 500, pattern: MULTI_LINE, description: 'why the patient comes' })
const Notes = Type.String({
  maxLength: 4000,
  pattern: MULTI_LINE,
  description: 'free text; never sent in events',
})
const CancellationReason = Type.String({
  maxLength: 500,
  pattern: MULTI_LINE,
  description: 'required to cancel',
})

const OutsideHoursFlag = Type.Boolean({
  description:
    'book a registered practitioner outside their working hours or time off anyway (else 422 outside_working_hours); the audit trail shows it',
})

export const CreateAppointmentBody = Type.Object(
  {
    patient_id: Uuid,
    codalmacen: Type.Optional(
      centerCode('the center: required, here or as ?codalmacen= (400 when neither names one)'),
    ),
    practitioner: Practitioner,
    starts_at: When('RFC 3339 with any offset; stored and returned in UTC', '2026-11-23T09:30:00+01:00'),
    ends_at: When('after starts_at, at most 12 h later', '2026-11-23T10:00:00+01:00'),
    time_zone: Type.Optional(TimeZone),
    reason: Type.Optional(nullable(Reason)),
    notes: Type.Optional(nullable(Notes)),
    hold_id: Type.Optional(
      Type.String({
        pattern: Uuid.pattern,
        description: 'a live hold of this slot (POST /appointments/holds): it becomes this appointment',
      }),
    ),
    outside_hours: Type.Optional(OutsideHoursFlag),
  },
  {
    title: 'AppointmentCreate',
    additionalProperties: false,
    examples: [
      {
        patient_id: '019ab2c4-1f00-7000-8000-000000000001',
        codalmacen: 'ALM1',
        practitioner: 'dra-lopez',
        starts_at: '2026-11-23T09:30:00+01:00',
        ends_at: '2026-11-23T10:00:00+01:00',
        reason: 'revision anual',
      },
    ],
  },
)
export type CreateAppointmentInput = Static<typeof CreateAppointmentBody>

export const UpdateAppointmentBody = Type.Object(
  {
    codalmacen: Type.Optional(CenterCode),
    practitioner: Type.Optional(Practitioner),
    starts_at: Type.Optional(When('RFC 3339, any offset', '2026-11-23T11:00:00+01:00')),
    ends_at: Type.Optional(When('RFC 3339, any offset', '2026-11-23T11:30:00+01:00')),
    time_zone: Type.Optional(TimeZone),
    reason: Type.Optional(nullable(Reason)),
    notes: Type.Optional(nullable(Notes)),
    status: Type.Optional(
      statusOf(
        STATUSES,
        'scheduled -> confirmed -> (check-in endpoint) -> checked_in -> completed; scheduled or confirmed -> cancelled | no_show',
      ),
    ),
    cancellation_reason: Type.Optional(CancellationReason),
    outside_hours: Type.Optional(OutsideHoursFlag),
  },
  {
    title: 'AppointmentPatch',
    additionalProperties: false,
    examples: [
      { starts_at: '2026-11-23T11:00:00+01:00', ends_at: '2026-11-23T11:30:00+01:00' },
      { status: 'cancelled', cancellation_reason: 'el paciente avisa de que no puede venir' },
    ],
  },
)
export type UpdateAppointmentInput = Static<typeof UpdateAppointmentBody>

export const Appointment = Type.Object(
  {
    id: Uuid,
    patient_id: Uuid,
    codalmacen: Type.String(),
    practitioner: Type.String(),
    starts_at: Instant,
    ends_at: Instant,
    time_zone: Type.String(),
    reason: nullable(Type.String()),
    notes: nullable(Type.String()),
    status: statusOf(STATUSES),
    cancellation_reason: nullable(Type.String()),
    checked_in_at: nullable(Instant),
    series_id: nullable(
      Type.String({
        ...Uuid,
        description: 'the recurring series it is an occurrence of (DESIGN.md section 20)',
      }),
    ),
    occurrence: nullable(Type.Integer({ minimum: 1, description: "its number in the series' plan, from 1" })),
    recurrence_id: nullable(
      Type.String({
        ...Instant,
        description: 'the start the series planned for it (RFC 5545 RECURRENCE-ID): kept when it moves',
      }),
    ),
    waitlist_entry_id: nullable(
      Type.String({ ...Uuid, description: 'the waitlist entry whose offer booked it' }),
    ),
    created_at: Instant,
    updated_at: Instant,
    version: Type.Integer({ minimum: 1, description: 'increments on every change; the ETag' }),
  },
  {
    title: 'Appointment',
    additionalProperties: false,
    examples: [
      {
        id: '019ab2c5-2a00-7000-8000-000000000002',
        patient_id: '019ab2c4-1f00-7000-8000-000000000001',
        codalmacen: 'ALM1',
        practitioner: 'dra-lopez',
        starts_at: '2026-11-23T08:30:00.000Z',
        ends_at: '2026-11-23T09:00:00.000Z',
        time_zone: 'Europe/Madrid',
        reason: 'revision anual',
        notes: null,
        status: 'scheduled',
        cancellation_reason: null,
        checked_in_at: null,
        series_id: null,
        occurrence: null,
        recurrence_id: null,
        waitlist_entry_id: null,
        created_at: '2026-11-22T17:05:12.345Z',
        updated_at: '2026-11-22T17:05:12.345Z',
        version: 1,
      },
    ],
  },
)
export type Appointment = Static<typeof Appointment>
/** The stored, editable part of an appointment. */
export type AppointmentFields = Omit<Appointment, 'id' | 'created_at' | 'updated_at' | 'version'>

export const ListAppointmentsQuery = Type.Object(
  {
    ...ListQuery,
    patient_id: Type.Optional(Uuid),
    series_id: Type.Optional(
      Type.String({ ...Uuid, description: 'the occurrences of a recurring series (DESIGN.md section 20)' }),
    ),
    practitioner: Type.Optional(Practitioner),
    status: Type.Optional(
      Type.Array(statusOf(STATUSES), {
        minItems: 1,
        maxItems: STATUSES.length,
        description: 'one or several, by repeating the parameter: `status=scheduled&status=confirmed`',
      }),
    ),
    from: Type.Optional(
      When('starts_at on or after this instant (URL-encode a + offset as %2B)', '2026-11-23T00:00:00Z'),
    ),
    to: Type.Optional(When('starts_at before this instant', '2026-11-24T00:00:00Z')),
    sort: Type.Optional(
      Type.Union(
        SORTS.map((s) => Type.Literal(s)),
        { default: 'starts_at', description: '`starts_at` (default, earliest first) or `-starts_at`' },
      ),
    ),
  },
  { additionalProperties: false },
)
export type ListAppointmentsInput = Static<typeof ListAppointmentsQuery>

/** Fields a client can never write; named as read-only in a 400 rather than as unknown. */
export const READ_ONLY_FIELDS = [
  'id',
  'version',
  'created_at',
  'updated_at',
  'checked_in_at',
  'idempresa',
  'idEmpresa',
  'company_id',
] as const
