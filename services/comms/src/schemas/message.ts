import { CenterCode, Instant, ListQuery, SINGLE_LINE, Uuid, nullable } from '@clinic/platform'
import { Type, type Static } from '@sinclair/typebox'

export const CHANNELS = ['email', 'sms'] as const
export type Channel = (typeof CHANNELS)[number]
export const ROLES = ['patient', 'guardian'] as const
export type RecipientRole = (typeof ROLES)[number]
/**
 * The statuses the API shows (DESIGN.md sections 4 and 12). The row also has `sending` (claimed by a
 * worker, provider not yet answered): shown as `queued`, and `?status=queued` finds it. `suppressed`:
 * the address opted out, the message is kept and never sent.
 */
export const STATUSES = ['queued', 'sent', 'failed', 'delivered', 'undelivered', 'suppressed'] as const
export type MessageStatus = (typeof STATUSES)[number]
export const TEMPLATES = ['appointment_reminder'] as const

export const SendMessageBody = Type.Object(
  {
    patient_id: Uuid,
    channel: Type.Optional(
      Type.Union(
        CHANNELS.map((c) => Type.Literal(c)),
        {
          description:
            "default: the patient's preferred_channel, else the first the recipient has an address for (email, then sms)",
        },
      ),
    ),
    recipient: Type.Optional(
      Type.Union(
        ROLES.map((r) => Type.Literal(r)),
        { description: 'default: guardian when the patient requires a legal guardian, else patient' },
      ),
    ),
    override_guardian: Type.Optional(
      Type.Boolean({
        description:
          'true: `recipient: "patient"` for a patient who requires a legal guardian is intended (else 422 guardian_override_required); recorded on the message and the audit trail. Ignored when it overrides nothing.',
      }),
    ),
    subject: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        pattern: SINGLE_LINE,
        description: 'email only; one line: no CR, LF or other control characters',
      }),
    ),
    body: Type.Optional(
      Type.String({ minLength: 1, description: 'email: at most 64 KiB; sms: at most 1,600 characters' }),
    ),
    template: Type.Optional(Type.Union(TEMPLATES.map((t) => Type.Literal(t)))),
    appointment_id: Type.Optional(Uuid),
  },
  {
    title: 'MessageSend',
    additionalProperties: false,
    examples: [
      {
        patient_id: '019ab2c4-1f00-7000-8000-000000000001',
        channel: 'sms',
        body: 'Recuerde su cita de mañana a las 9:30 en Centro Norte.',
      },
    ],
  },
)
export type SendMessageInput = Static<typeof SendMessageBody>

export const Recipient = Type.Object(
  {
    role: Type.Union(ROLES.map((r) => Type.Literal(r))),
    name: Type.String(),
    address: Type.String({ description: 'email address or E.164 phone number' }),
  },
  { title: 'MessageRecipient' },
)
export type Recipient = Static<typeof Recipient>

export const Message = Type.Object(
  {
    id: Uuid,
    patient_id: Uuid,
    appointment_id: nullable(Uuid),
    codalmacen: nullable(CenterCode),
    status: Type.Union(
      STATUSES.map((s) => Type.Literal(s)),
      {
        description:
          'queued -> sent | failed; sent -> delivered | undelivered (SMS receipts, final). A message being handed to its provider shows as queued. suppressed: the address opted out; kept, never sent.',
      },
    ),
    recipient: Recipient,
    channel: Type.Union(CHANNELS.map((c) => Type.Literal(c))),
    subject: nullable(Type.String()),
    template: nullable(Type.String()),
    override_guardian: Type.Boolean({
      description: 'sent to a patient who requires a legal guardian, with override_guardian',
    }),
    attempts: Type.Integer(),
    last_error: nullable(Type.String()),
    provider_id: nullable(Type.String()),
    created_at: Instant,
    sent_at: nullable(Instant),
  },
  { title: 'Message', additionalProperties: false },
)
export type Message = Static<typeof Message>
/** A message with its row version (the ETag); the response schema leaves `version` out. */
export type VersionedMessage = Message & { version: number }

export const ListMessagesQuery = Type.Object(
  {
    ...ListQuery,
    patient_id: Type.Optional(Uuid),
    appointment_id: Type.Optional(Uuid),
    status: Type.Optional(Type.Union(STATUSES.map((s) => Type.Literal(s)))),
    channel: Type.Optional(Type.Union(CHANNELS.map((c) => Type.Literal(c)))),
    from: Type.Optional(Type.String({ format: 'date-time', description: 'created_at from (inclusive)' })),
    to: Type.Optional(Type.String({ format: 'date-time', description: 'created_at before (exclusive)' })),
  },
  { additionalProperties: false },
)
export type ListMessagesQuery = Static<typeof ListMessagesQuery>
