import { PatientContact } from '../contracts/patients'
import { IdParams } from '../schemas'
import { internalEndpoints, lookup } from './define'

/** The patients service's internal endpoints. */
export default internalEndpoints('patients', {
  /**
   * A patient of the caller's company: the data of `patient.created` (contact details, guardian,
   * language; no notes). The company, not the center (an appointment may be booked at any center).
   */
  lookUp: lookup({
    path: '/internal/patients/:id',
    operationId: 'internalGetPatientContact',
    summary: 'Resolve a patient of the company (service to service)',
    params: IdParams,
    answer: PatientContact,
  }),
})
