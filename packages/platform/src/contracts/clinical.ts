import { Type } from '@sinclair/typebox'
import { Changes, type ServiceContracts } from './define'

/** What integrators and the audit trail get of an exam: ids, center, status, counts; never values or notes. */
const ExamIds = {
  id: Type.String(),
  patient_id: Type.String(),
  codalmacen: Type.String(),
  practitioner: Type.String(),
  status: Type.String({ description: 'draft or signed' }),
  amendments: Type.Integer(),
  version: Type.Integer(),
}

const exam = { resource: 'clinical_exam' } as const
const read = { path: '/clinical/exams' }

export default {
  'clinical.exam.created': {
    ...exam,
    data: Type.Object(ExamIds),
    webhook: { ...read, when: 'an exam is opened (a draft)' },
  },
  /** Fields of the draft, or the kinds of findings added or removed. */
  'clinical.exam.updated': {
    ...exam,
    data: Type.Object({ ...ExamIds, changes: Changes }),
    webhook: { ...read, when: 'a draft exam changes (fields or findings)' },
  },
  'clinical.exam.signed': {
    ...exam,
    data: Type.Object({ ...ExamIds, changes: Changes }),
    webhook: { ...read, when: 'an exam is signed (final from then on)' },
  },
  /** The kinds of findings added or superseded by the amendment; the reason is in its history. */
  'clinical.exam.amended': {
    ...exam,
    data: Type.Object({ ...ExamIds, changes: Changes }),
    webhook: { ...read, when: 'a signed exam is amended (a new version with its reason)' },
  },
  'clinical.prescription.issued': {
    resource: 'clinical_prescription',
    data: Type.Object({
      id: Type.String(),
      exam_id: Type.String(),
      patient_id: Type.String(),
      codalmacen: Type.String(),
      type: Type.String(),
      valid_until: Type.String({ description: 'YYYY-MM-DD' }),
      version: Type.Integer(),
    }),
    webhook: { path: '/clinical/prescriptions', when: 'a prescription is issued from a signed exam' },
  },
} satisfies ServiceContracts
