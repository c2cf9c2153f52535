import { AppError } from '@clinic/platform/core'

/** The appointment-specific codes of DESIGN.md section 3; the platform's handler renders them. */

export class InvalidTransition extends AppError {
  constructor(detail: string) {
    super({ status: 409, code: 'invalid_transition', title: 'Transition not allowed', detail })
  }
}

/** Who already holds the time: the practitioner or the patient (DESIGN.md: the detail names which). */
export type SlotHolder = 'practitioner' | 'patient'

export class SlotConflict extends AppError {
  readonly holder: SlotHolder
  constructor(holder: SlotHolder) {
    super({
      status: 409,
      code: 'slot_conflict',
      title: 'The slot is taken',
      detail:
        holder === 'practitioner'
          ? 'The practitioner already has an overlapping appointment'
          : 'The patient already has an overlapping appointment',
    })
    this.holder = holder
  }
}
