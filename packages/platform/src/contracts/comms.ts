import { Type } from '@sinclair/typebox'
import { Changes, type ServiceContracts } from './define'

/** Ids, channel, role and status only: never a body, subject or address. */
const MessageIds = {
  id: Type.String(),
  patient_id: Type.String(),
  appointment_id: Type.Union([Type.String(), Type.Null()]),
  channel: Type.String(),
  recipient_role: Type.String(),
  status: Type.String(),
}
/** Present (true) when a message went to a patient who requires a guardian, with `override_guardian`. */
const OverrideGuardian = Type.Optional(Type.Literal(true))

const message = { resource: 'message' } as const
const path = '/comms/messages'

export default {
  /** `override_guardian`: sent to a patient who requires a guardian, on purpose (DESIGN.md section 3). */
  'comms.message.queued': {
    ...message,
    data: Type.Object({ ...MessageIds, override_guardian: OverrideGuardian }),
    webhook: { path, when: 'a message is accepted' },
  },
  /** Kept but never sent: the address opted out (DESIGN.md section 12). */
  'comms.message.suppressed': {
    ...message,
    data: Type.Object({ ...MessageIds, override_guardian: OverrideGuardian }),
  },
  'comms.message.sent': {
    ...message,
    data: Type.Object(MessageIds),
    webhook: { path, when: 'the provider took it' },
  },
  /** A message that could not be sent is a failure on the audit trail. */
  'comms.message.failed': {
    ...message,
    data: Type.Object(MessageIds),
    failure: 'always',
    webhook: { path, when: 'it could not be sent after its retries' },
  },
  /** So is a receipt saying it never arrived. */
  'comms.message.delivered': {
    ...message,
    data: Type.Object(MessageIds),
    failure: { field: 'status', values: ['undelivered'] },
    webhook: { path, when: 'a delivery receipt arrived (status delivered or undelivered)' },
  },
  /**
   * Consent per company, channel and address (DESIGN.md section 12): the preference's id (a hash of
   * company, channel and address), never the address. `source`: api, sms_keyword, email_unsubscribe.
   * Its resource on the audit trail is the preference, never the address.
   */
  'comms.preference.updated': {
    resource: 'preference',
    data: Type.Object({
      preference_id: Type.String(),
      channel: Type.String(),
      opted_out: Type.Boolean(),
      source: Type.String(),
      /** Present (true) when an API call changed a preference the person set (`override: true`). */
      override: Type.Optional(Type.Literal(true)),
      changes: Changes,
    }),
  },
  /**
   * A patient link's page was opened (DESIGN.md sections 12 and 16: each view is on the trail, actor
   * `patient-link`): the appointment, the link's id and what the page showed (`open`, `closed`,
   * `used`, `not_found`); never the token.
   */
  'comms.patient_link.viewed': {
    resource: 'appointment',
    data: Type.Object({ appointment_id: Type.String(), link_id: Type.String(), page: Type.String() }),
  },
  /**
   * A view of a waitlist offer's page (`/p/w/<token>`, actor `patient-link`), on the entry's trail:
   * the entry (null when the offer is unknown), the offer and what the page showed (`open`,
   * `accepted`, `declined`, `taken`, `expired`, `not_found`); never the token.
   */
  'comms.waitlist_link.viewed': {
    resource: 'waitlist_entry',
    data: Type.Object({
      entry_id: Type.Union([Type.String(), Type.Null()]),
      offer_id: Type.String(),
      page: Type.String(),
    }),
  },
} satisfies ServiceContracts
