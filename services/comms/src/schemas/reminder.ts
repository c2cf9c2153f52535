import { CenterCode, Instant, ListQuery, Uuid, nullable } from '@clinic/platform'
import { Type, type Static } from '@sinclair/typebox'

const HHMM = '^([01][0-9]|2[0-3]):[0-5][0-9]$'
/** `P1D`, `PT2H`, `P1DT12H`, `P2W` (weeks, days, hours, minutes). */
const DURATION = '^P(?=\\d|T\\d)(\\d+W)?(\\d+D)?(T(?=\\d)(\\d+H)?(\\d+M)?)?$'

export const QuietHours = Type.Object(
  {
    start: Type.String({ pattern: HHMM, description: 'local time (the appointment’s time_zone)' }),
    end: Type.String({ pattern: HHMM }),
  },
  { title: 'QuietHours', additionalProperties: false },
)

export const ReminderPolicyBody = Type.Object(
  {
    enabled: Type.Boolean(),
    offsets: Type.Array(Type.String({ pattern: DURATION, maxLength: 20 }), {
      minItems: 1,
      maxItems: 3,
      uniqueItems: true,
      description:
        'ISO 8601 durations before starts_at (1 to 3, each at most 30 days); days count on the local calendar',
    }),
    quiet_hours: Type.Optional(nullable(QuietHours)),
    confirm_links: Type.Optional(Type.Boolean({ default: true })),
  },
  {
    title: 'ReminderPolicyInput',
    additionalProperties: false,
    examples: [{ enabled: true, offsets: ['P1D', 'PT2H'], quiet_hours: { start: '21:00', end: '08:00' } }],
  },
)
export type ReminderPolicyInput = Static<typeof ReminderPolicyBody>

export const ReminderPolicy = Type.Object(
  {
    enabled: Type.Boolean(),
    offsets: Type.Array(Type.String()),
    quiet_hours: nullable(QuietHours),
    confirm_links: Type.Boolean(),
    updated_at: nullable(Instant),
  },
  { title: 'ReminderPolicy', additionalProperties: false },
)
export type ReminderPolicy = Static<typeof ReminderPolicy> & { version: number }

export const REMINDER_STATUSES = ['scheduled', 'sent', 'cancelled', 'skipped', 'suppressed'] as const
export type ReminderStatus = (typeof REMINDER_STATUSES)[number]

export const Reminder = Type.Object(
  {
    id: Uuid,
    appointment_id: Uuid,
    patient_id: Uuid,
    codalmacen: nullable(CenterCode),
    offset: Type.String({ description: 'the policy offset it was scheduled for' }),
    starts_at: Instant,
    due_at: Instant,
    status: Type.Union(
      REMINDER_STATUSES.map((s) => Type.Literal(s)),
      {
        description:
          'scheduled -> sent (its message queued) | suppressed (the address opted out) | skipped (due before it was scheduled, or not deliverable) | cancelled (the appointment was cancelled, moved, checked in or no-show)',
      },
    ),
    reason: nullable(Type.String({ description: 'why it was skipped or cancelled' })),
    message_id: nullable(Uuid),
    created_at: Instant,
    updated_at: Instant,
  },
  { title: 'Reminder', additionalProperties: false },
)
export type Reminder = Static<typeof Reminder>

export const ListRemindersQuery = Type.Object(
  {
    ...ListQuery,
    appointment_id: Type.Optional(Uuid),
    status: Type.Optional(Type.Union(REMINDER_STATUSES.map((s) => Type.Literal(s)))),
  },
  { additionalProperties: false },
)
export type ListRemindersQuery = Static<typeof ListRemindersQuery>
