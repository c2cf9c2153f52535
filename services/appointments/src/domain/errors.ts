import { AppError } from '@clinic/platform/core'
import type { Slot } from '../schemas/availability'

/** The appointment-specific codes of DESIGN.md sections 3 and 11; the platform's handler renders them. */

export class InvalidTransition extends AppError {
  constructor(detail: string) {
    super({ status: 409, code: 'invalid_transition', title: 'Transition not allowed', detail })
  }
}

/** Who already holds the time: the practitioner or the patient (DESIGN.md: the detail names which). */
export type SlotHolder = 'practitioner' | 'patient'

const HOLDER_DETAIL: Record<SlotHolder, string> = {
  practitioner: 'The practitioner already has an overlapping appointment or hold',
  patient: 'The patient already has an overlapping appointment',
}

/**
 * The slot is taken. `hidden`: what takes it is at a center the caller may not see, so the detail
 * names no one. `alternatives`: the practitioner's next free slots, for a registered practitioner.
 */
export class SlotConflict extends AppError {
  readonly holder: SlotHolder
  constructor(holder: SlotHolder, o: { hidden?: boolean; alternatives?: Slot[] } = {}) {
    super({
      status: 409,
      code: 'slot_conflict',
      title: 'The slot is taken',
      detail: o.hidden ? 'That time is not available' : HOLDER_DETAIL[holder],
      extensions: o.alternatives ? { alternatives: o.alternatives } : undefined,
    })
    this.holder = holder
  }
}

/** Why a registered practitioner cannot be booked then (DESIGN.md section 11). */
export type NotWorking = 'inactive' | 'outside_hours' | 'time_off'

const NOT_WORKING_DETAIL: Record<NotWorking, string> = {
  inactive: 'The practitioner is not taking appointments (inactive)',
  outside_hours: 'The practitioner does not work at that center then',
  time_off: 'The practitioner is on time off then',
}

export class OutsideWorkingHours extends AppError {
  constructor(why: NotWorking, overridable: boolean) {
    super({
      status: 422,
      code: 'outside_working_hours',
      title: 'Outside working hours',
      detail: `${NOT_WORKING_DETAIL[why]}${overridable ? '; send "outside_hours": true to book anyway' : ''}`,
    })
  }
}

export class DuplicatePractitioner extends AppError {
  constructor() {
    super({
      status: 409,
      code: 'duplicate_practitioner',
      title: 'Practitioner already registered',
      detail: 'A practitioner of this company already has that id',
    })
  }
}
