import { Instant, ListQuery, listOf, nullable } from '@clinic/platform'
import { Type, type Static } from '@sinclair/typebox'
import { CHANNELS } from './message'

/**
 * Who set a preference (DESIGN.md section 12): the API (`PUT /comms/preferences`), an inbound SMS
 * keyword (STOP, BAJA, START...), or the one-click unsubscribe link of an email (RFC 8058).
 */
export const SOURCES = ['api', 'sms_keyword', 'email_unsubscribe'] as const
export type PreferenceSource = (typeof SOURCES)[number]

const Channel = Type.Union(CHANNELS.map((c) => Type.Literal(c)))
/** Checked again per channel (domain/preference-store.ts): an email address or an E.164 number. */
const Address = Type.String({
  minLength: 1,
  maxLength: 254,
  description: 'an email address (compared lower-cased) or an E.164 phone number (+34600111222)',
})

export const Preference = Type.Object(
  {
    id: Type.String({
      format: 'uuid',
      description:
        'stable id of the company, channel and address (a UUIDv5, no address in it): the resource_id of its comms.preference.updated events on the audit trail (resource_type preference)',
    }),
    channel: Channel,
    address: Address,
    opted_out: Type.Boolean({ description: 'true: nothing is sent to this address on this channel' }),
    source: nullable(
      Type.Unsafe<PreferenceSource>({
        type: 'string',
        enum: [...SOURCES],
        description: 'who set it; null when never set (not opted out)',
      }),
    ),
    updated_at: nullable(Instant),
  },
  { title: 'Preference', additionalProperties: false },
)
export type Preference = Static<typeof Preference>

export const PreferenceList = listOf(Preference, 'PreferenceList')

export const PreferenceQuery = Type.Object(
  {
    ...ListQuery,
    address: Address,
    channel: Type.Optional(Channel),
  },
  { additionalProperties: false },
)
export type PreferenceQuery = Static<typeof PreferenceQuery>

export const PutPreferenceBody = Type.Object(
  {
    channel: Channel,
    address: Address,
    opted_out: Type.Boolean(),
    override: Type.Optional(
      Type.Boolean({
        description:
          'true to change a preference the person set themselves (source sms_keyword or email_unsubscribe); the audit trail shows it. Without it such a change is 409 preference_set_by_person',
      }),
    ),
  },
  {
    title: 'PreferenceUpdate',
    additionalProperties: false,
    examples: [{ channel: 'sms', address: '+34600111222', opted_out: true }],
  },
)
export type PutPreferenceBody = Static<typeof PutPreferenceBody>
