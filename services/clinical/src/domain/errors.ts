import { AppError } from '@clinic/platform/core'

/** The clinical codes of DESIGN.md sections 3 and 14; the platform's handler renders them. */

export class ExamSigned extends AppError {
  constructor() {
    super({
      status: 409,
      code: 'exam_signed',
      title: 'The exam is signed',
      detail: 'A signed exam never changes: amend it (POST /clinical/exams/{id}/amendments)',
    })
  }
}

/** A prescription is issued from a signed exam only: what it prescribes must be final. */
export class ExamNotSigned extends AppError {
  constructor() {
    super({
      status: 409,
      code: 'exam_not_signed',
      title: 'The exam is not signed',
      detail: 'Sign the exam before issuing a prescription from it',
    })
  }
}

/**
 * Signing attests what was found: an exam with no finding at all attests nothing, and once signed it
 * could only grow by amendments. A visit without an examination stays a draft (its notes say why).
 */
export class ExamEmpty extends AppError {
  constructor() {
    super({
      status: 409,
      code: 'exam_empty',
      title: 'The exam has no findings',
      detail: 'An exam is signed with at least one finding (acuity, IOP, refraction or a diagnosis)',
    })
  }
}
