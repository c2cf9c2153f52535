import { Type, type Static } from '@sinclair/typebox'
import { Changes, type ServiceContracts } from './define'

const Guardian = Type.Object({
  name: Type.String(),
  relationship: Type.Union([Type.String(), Type.Null()]),
  email: Type.Union([Type.String(), Type.Null()]),
  phone: Type.Union([Type.String(), Type.Null()]),
})
const PatientContactFields = {
  id: Type.String(),
  codalmacen: Type.Union([Type.String(), Type.Null()]),
  first_name: Type.String(),
  last_name: Type.String(),
  email: Type.Union([Type.String(), Type.Null()]),
  phone: Type.Union([Type.String(), Type.Null()]),
  preferred_channel: Type.Union([Type.String(), Type.Null()]),
  language: Type.String(),
  requires_legal_guardian: Type.Boolean(),
  guardian: Type.Union([Guardian, Type.Null()]),
  version: Type.Integer(),
}
/**
 * What other services may know of a patient: the data of `patient.created` and the answer of the
 * patients service's internal contact lookup (comms addresses messages with it). No notes.
 */
export const PatientContact = Type.Object(PatientContactFields)
export type PatientContact = Static<typeof PatientContact>

const read = { path: '/patients' }

export default {
  'patient.created': {
    resource: 'patient',
    data: PatientContact,
    webhook: { ...read, when: 'a patient is created' },
  },
  'patient.updated': {
    resource: 'patient',
    data: Type.Object({ ...PatientContactFields, changes: Changes }),
    webhook: { ...read, when: 'fields of a patient change' },
  },
} satisfies ServiceContracts
