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

export class UnknownAppointment extends AppError {
  constructor() {
    super({
      status: 422,
      code: 'unknown_appointment',
      title: 'Unknown appointment',
      detail: 'appointment_id is not an appointment of this patient in this company',
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
