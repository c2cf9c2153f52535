import { Type, type Static } from '@sinclair/typebox'
import {
  DateOnly,
  Instant,
  MULTI_LINE,
  SINGLE_LINE,
  Uuid,
  centerCode,
  nullable,
  problemSchema,
} from '@clinic/platform/http'
import { Appointment, DEFAULT_TIME_ZONE, Practitioner, TIME_ZONE_NAME } from './appointment'
import { Slot } from './availability'

/**
 * The recurring series contract (DESIGN.md section 20): requests, the series as answered, and
 * the 409 series_conflict. Each occurrence is an ordinary Appointment.
 */

export const SERIES_STATUSES = ['active', 'ended', 'cancelled'] as const
export type SeriesStatus = (typeof SERIES_STATUSES)[number]
export const SCOPES = ['this', 'following', 'all'] as const
export type SeriesScope = (typeof SCOPES)[number]
/** Why an occurrence cannot be booked (or moved): who holds the time, or why the practitioner does not work then. */
export const CONFLICT_REASONS = [
  'practitioner_busy',
  'patient_busy',
  'outside_hours',
  'time_off',
  'inactive',
  'unavailable',
] as const
export type ConflictReason = (typeof CONFLICT_REASONS)[number]

export const HH_MM = '^([01][0-9]|2[0-3]):[0-5][0-9]$'
export const SERIES_TEXT_MESSAGES: Record<string, string> = {
  [TIME_ZONE_NAME]: 'must be an IANA time zone name, e.g. Europe/Madrid',
  [HH_MM]: 'must be a local time HH:MM (00:00 to 23:59)',
}

const enumOf = <T extends string>(values: readonly T[], description: string) =>
  Type.Unsafe<T>({ type: 'string', enum: [...values], description })
const Duration = Type.Integer({
  minimum: 5,
  maximum: 720,
  description: 'minutes each occurrence lasts (5 to 720)',
  examples: [30],
})
const Reason = Type.String({ maxLength: 500, pattern: MULTI_LINE, description: 'why the patient comes' })
const Notes = Type.String({
  maxLength: 4000,
  pattern: MULTI_LINE,
  description: 'free text; never sent in events',
})
const OccurrenceNumber = Type.Integer({
  minimum: 1,
  maximum: 104,
  description: "the occurrence's number in the series (its appointments' `occurrence`)",
})

export const CreateSeriesBody = Type.Object(
  {
    patient_id: Uuid,
    practitioner: Practitioner,
    codalmacen: centerCode('the center of every occurrence'),
    start: Type.String({
      minLength: 16,
      maxLength: 40,
      description:
        "the first occurrence's local date and time in the series' zone, YYYY-MM-DDTHH:MM; an offset may follow only if it is the zone's own then",
      examples: ['2027-03-22T09:30'],
    }),
    duration_minutes: Duration,
    rrule: Type.String({
      minLength: 1,
      maxLength: 500,
      pattern: SINGLE_LINE,
      description:
        'RFC 5545 RRULE: FREQ=DAILY|WEEKLY|MONTHLY, INTERVAL, COUNT or UNTIL (one), BYDAY, BYMONTHDAY; at most 104 occurrences within 2 years',
      examples: ['FREQ=WEEKLY;BYDAY=MO;COUNT=10'],
    }),
    exdates: Type.Optional(
      Type.Array(DateOnly, { maxItems: 200, description: 'local dates (YYYY-MM-DD) the rule skips' }),
    ),
    reason: Type.Optional(nullable(Reason)),
    notes: Type.Optional(nullable(Notes)),
    time_zone: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        pattern: TIME_ZONE_NAME,
        description: `IANA zone of start, for a practitioner with no record (a registered one's own zone is used); default ${DEFAULT_TIME_ZONE}`,
      }),
    ),
    allow_partial: Type.Optional(
      Type.Boolean({
        description:
          'book the free occurrences and list the others in `skipped` (else 409 series_conflict, nothing booked)',
      }),
    ),
  },
  {
    title: 'SeriesCreate',
    additionalProperties: false,
    examples: [
      {
        patient_id: '019ab2c4-1f00-7000-8000-000000000001',
        practitioner: 'dra-lopez',
        codalmacen: 'ALM1',
        start: '2027-03-22T09:30',
        duration_minutes: 30,
        rrule: 'FREQ=WEEKLY;BYDAY=MO;COUNT=10',
        exdates: ['2027-04-05'],
        reason: 'rehabilitacion',
      },
    ],
  },
)
export type CreateSeriesInput = Static<typeof CreateSeriesBody>

export const UpdateSeriesBody = Type.Object(
  {
    scope: enumOf(
      SCOPES,
      'this: one occurrence; following: it and the rest (a new series); all: every future one',
    ),
    occurrence: Type.Optional(OccurrenceNumber),
    start_time: Type.Optional(
      Type.String({ pattern: HH_MM, description: "new local start time (HH:MM) in the series' zone" }),
    ),
    duration_minutes: Type.Optional(Duration),
    practitioner: Type.Optional(Practitioner),
    notes: Type.Optional(nullable(Notes)),
  },
  {
    title: 'SeriesPatch',
    additionalProperties: false,
    examples: [{ scope: 'following', occurrence: 4, start_time: '10:00' }],
  },
)
export type UpdateSeriesInput = Static<typeof UpdateSeriesBody>

export const CancelSeriesBody = Type.Object(
  {
    scope: enumOf(SCOPES, 'this: one occurrence; following: it and the rest; all: every future one'),
    occurrence: Type.Optional(OccurrenceNumber),
    reason: Type.String({
      maxLength: 500,
      pattern: MULTI_LINE,
      description: "the cancelled appointments' cancellation_reason",
    }),
  },
  { title: 'SeriesCancel', additionalProperties: false, examples: [{ scope: 'all', reason: 'alta medica' }] },
)
export type CancelSeriesInput = Static<typeof CancelSeriesBody>

export const SkippedOccurrence = Type.Object(
  {
    occurrence: Type.Integer({ minimum: 1 }),
    starts_at: Instant,
    reason: enumOf(CONFLICT_REASONS, 'why it was not booked'),
  },
  { title: 'SkippedOccurrence', additionalProperties: false },
)
export type SkippedOccurrence = Static<typeof SkippedOccurrence>

export const SeriesConflictItem = Type.Object(
  {
    occurrence: Type.Integer({ minimum: 1 }),
    starts_at: Instant,
    reason: enumOf(CONFLICT_REASONS, 'who holds the time, or why the practitioner does not work then'),
    alternatives: Type.Array(Slot, {
      maxItems: 3,
      description: 'the next free slots of that (registered) practitioner at that center, same duration',
    }),
  },
  { title: 'SeriesConflictItem', additionalProperties: false },
)
export type SeriesConflictItem = Static<typeof SeriesConflictItem>

export const SeriesConflictProblem = Type.Unsafe({
  ...problemSchema,
  title: 'SeriesConflictProblem',
  description:
    'series_conflict (every occurrence that cannot be booked or moved), idempotency_conflict or invalid_transition',
  properties: {
    ...problemSchema.properties,
    conflicts: Type.Array(SeriesConflictItem, { maxItems: 104 }),
  },
})

export const Series = Type.Object(
  {
    id: Uuid,
    patient_id: Uuid,
    practitioner: Type.String(),
    codalmacen: Type.String(),
    time_zone: Type.String({ description: 'the zone its wall times are in' }),
    start: Type.String({ description: "the first occurrence's local wall time, YYYY-MM-DDTHH:MM" }),
    rrule: Type.String({ description: 'the rule as kept: UNTIL as the end of the last local day' }),
    exdates: Type.Array(DateOnly),
    duration_minutes: Type.Integer(),
    reason: nullable(Type.String()),
    notes: nullable(Type.String()),
    status: enumOf(
      SERIES_STATUSES,
      'active; ended (split, cancelled from an occurrence on, or past its last occurrence); cancelled',
    ),
    previous_series_id: nullable(Type.String({ ...Uuid, description: 'the series a split ended' })),
    next_series_id: nullable(
      Type.String({ ...Uuid, description: 'the series a split continued this one with' }),
    ),
    occurrences: Type.Array(Appointment, { description: 'its appointments, any status, by occurrence' }),
    skipped: Type.Array(SkippedOccurrence, { description: 'occurrences not booked (allow_partial)' }),
    created_at: Instant,
    updated_at: Instant,
    version: Type.Integer({
      minimum: 1,
      description: 'increments on every change made through the series; the ETag',
    }),
  },
  { title: 'Series', additionalProperties: false },
)
export type Series = Static<typeof Series>
