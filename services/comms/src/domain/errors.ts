import { AppError } from '@clinic/platform/core'

/** The comms codes of DESIGN.md section 3; the platform's handler renders them. */

export class GuardianRequired extends AppError {
  constructor() {
    super({
      status: 422,
      code: 'guardian_required',
      title: 'The patient has no guardian',
      detail: 'recipient "guardian" needs a guardian on the patient',
    })
  }
}

export class NoContactAddress extends AppError {
  constructor(role: string, channel: string) {
    super({
      status: 422,
      code: 'no_contact_address',
      title: 'No contact address',
      detail: `the ${role} has no ${channel === 'sms' ? 'phone number' : 'email address'}`,
    })
  }
}

/** A Twilio status callback whose X-Twilio-Signature does not match (or no key to check it). */
export class InvalidSignature extends AppError {
  constructor() {
    super({
      status: 403,
      code: 'invalid_signature',
      title: 'Invalid signature',
      detail: 'X-Twilio-Signature does not match',
    })
  }
}

/** `recipient: "patient"` for a patient who requires a legal guardian, without `override_guardian`. */
export class GuardianOverrideRequired extends AppError {
  constructor() {
    super({
      status: 422,
      code: 'guardian_override_required',
      title: 'The patient requires a guardian',
      detail:
        'recipient "patient" for a patient who requires a legal guardian needs "override_guardian": true',
    })
  }
}

/** An SMS the house does not send: a country outside COMMS_SMS_COUNTRIES, a paid number, no number. */
export class DestinationNotAllowed extends AppError {
  constructor(detail: string) {
    super({ status: 422, code: 'destination_not_allowed', title: 'Destination not allowed', detail })
  }
}

/** Which messaging quota refused a message (DESIGN.md section 12). */
export type QuotaName = 'daily sms' | 'daily email' | 'hourly per recipient'

/** Over a messaging quota: nothing was stored; `Retry-After` says when the quota has room again. */
export class MessagingQuotaExceeded extends AppError {
  constructor(
    readonly quota: QuotaName,
    limit: number,
    readonly retryAfterSeconds: number,
  ) {
    const what =
      quota === 'hourly per recipient'
        ? `at most ${limit} messages to one recipient in an hour`
        : `at most ${limit} ${quota === 'daily sms' ? 'SMS' : 'emails'} per company and UTC day`
    super({
      status: 429,
      code: 'messaging_quota_exceeded',
      title: 'Messaging quota exceeded',
      detail: `${quota} limit reached: ${what}; retry in ${retryAfterSeconds} s`,
      headers: { 'retry-after': String(retryAfterSeconds) },
    })
  }
}

/**
 * The person set this preference themselves (an SMS keyword, the unsubscribe link): an API call
 * changes it only when it says so (`override: true`, which the audit trail shows).
 */
export class PreferenceSetByPerson extends AppError {
  constructor(source: string) {
    super({
      status: 409,
      code: 'preference_set_by_person',
      title: 'The person set this preference themselves',
      detail: `set by ${source === 'sms_keyword' ? 'an SMS keyword' : 'the unsubscribe link'}; send override: true to change it anyway`,
    })
  }
}
