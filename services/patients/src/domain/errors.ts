import { AppError } from '@clinic/platform/core'

/** The errors the Patient rules own (DESIGN.md section 3); the generic ones are the platform's. */
export class GuardianRequired extends AppError {
  constructor() {
    super({
      status: 422,
      code: 'guardian_required',
      title: 'Guardian required',
      detail: 'A patient with requires_legal_guardian needs a guardian with a name and an email or phone',
    })
  }
}

export class DuplicateNationalId extends AppError {
  constructor() {
    super({
      status: 409,
      code: 'duplicate_national_id',
      title: 'Duplicate national id',
      detail: 'Another patient of this company has that national id',
    })
  }
}
