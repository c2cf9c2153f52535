import type { Principal } from '@clinic/platform/core'
import { grantInPerson } from '../src/domain/grant-in-person'
import { requestConsent } from '../src/domain/request-consent'
import type { Consent, GrantInput } from '../src/schemas/consent'
import { consentWorld } from './consent-fakes'
import { NOW, loggingCtxOf } from './fakes'

export const LATER = new Date(NOW.getTime() + 3_600_000)

/** A pending consent (center ALM1, an exam of the patient's) asked an hour before it is answered. */
export async function answerWorld(o: { principal?: Partial<Principal>; guardian?: boolean } = {}) {
  const w = consentWorld()
  const names = { company: 'Clínica Ñandú', centers: { ALM1: 'Centro Gràcia' } }
  const { ctx, lines } = loggingCtxOf({ names, ...o.principal })
  const company = ctx.auth.companyId
  const patient = w.patients.add(company, {
    first_name: 'Begoña',
    last_name: 'Muñoz',
    requires_legal_guardian: !!o.guardian,
    guardian: o.guardian ? { name: 'Marta García', relationship: 'madre', email: null, phone: null } : null,
  })
  const template = w.store.addTemplate(company)
  const exam = w.exams.add(company, patient)
  const { body: consent } = await requestConsent(ctx, w.deps, {
    body: { patient_id: patient, template_key: 'cataract-surgery', codalmacen: 'ALM1', exam_id: exam },
    idempotencyKey: undefined,
    requestHash: 'h',
  })
  w.store.events.length = 0
  lines.length = 0
  w.at(LATER.toISOString())
  const grant = (body: Partial<GrantInput> = {}, input: { id?: string; queryCenter?: string } = {}) =>
    grantInPerson(ctx, w.deps, {
      id: input.id ?? consent.id,
      queryCenter: input.queryCenter,
      body: {
        signer_role: o.guardian ? 'guardian' : 'patient',
        signer_name: o.guardian ? 'Marta García' : 'Begoña Muñoz',
        witness: 'Enfermera Ficticia',
        ...body,
      },
      ip: '203.0.113.7',
      userAgent: 'Mostrador/1.0',
    })
  const make = (fields: Partial<Consent>) => w.store.seed(company, { ...consent, ...fields })
  const uploads = () => [...w.content.uploads.values()].map((u) => u.state)
  return { ...w, ctx, lines, company, patient, template, exam, consent, grant, make, uploads }
}
