import { UnknownAppointment } from '@clinic/platform'
import { ExamEmpty, ExamNotSigned, ExamSigned } from '../../src/domain/errors'

/** The clinical problems (DESIGN 3 and 14, docs/DESIGN.md): status, code, and what they tell the client. */
describe('the clinical errors', () => {
  it('each carries its status and stable code, a title and a detail that says what to do', () => {
    const problem = (e: ExamSigned) => ({ status: e.status, code: e.code, title: e.title, detail: e.detail })
    expect(problem(new ExamSigned())).toEqual({
      status: 409,
      code: 'exam_signed',
      title: 'The exam is signed',
      detail: expect.stringContaining('POST /clinical/exams/{id}/amendments'),
    })
    expect(problem(new ExamNotSigned())).toEqual({
      status: 409,
      code: 'exam_not_signed',
      title: 'The exam is not signed',
      detail: expect.stringContaining('Sign the exam'),
    })
    expect(problem(new UnknownAppointment())).toEqual({
      status: 422,
      code: 'unknown_appointment',
      title: 'Unknown appointment',
      detail: expect.stringContaining('not an appointment of this patient'),
    })
    expect(problem(new ExamEmpty())).toEqual({
      status: 409,
      code: 'exam_empty',
      title: 'The exam has no findings',
      detail: expect.stringContaining('at least one finding'),
    })
  })
})
