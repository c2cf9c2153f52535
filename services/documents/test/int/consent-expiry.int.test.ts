import { injectAs, testPrincipal } from '@clinic/platform/testing'
import { startApp, type Harness } from '../helpers'

/** A pending consent past expires_at is expired (DESIGN.md section 16), the worker or not. */
let now = new Date('2026-11-27T10:00:00Z')
let h: Harness
beforeAll(async () => {
  h = await startApp({ clock: () => now })
})
afterAll(() => h.close())

it('a pending consent past its expiry is never granted in person, though the worker has not expired it yet', async () => {
  const p = testPrincipal()
  const as = injectAs(h.app, p)
  const body = 'Autorizo la intervención.'
  await as('POST', '/consents/templates', {
    key: 'cataract-surgery',
    language: 'es',
    title: 'Cataratas',
    body,
  })
  const patient_id = h.far.patient(p.companyId)
  const ask = {
    patient_id,
    template_key: 'cataract-surgery',
    send: false,
    expires_at: '2026-11-28T10:00:00Z',
  }
  const consent = (await as('POST', '/consents', ask)).json()
  const grant = { signer_role: 'patient', signer_name: 'Testa Ficticia', witness: 'Enfermera Ficticia' }
  now = new Date('2026-11-28T10:00:00Z')
  const res = await as('POST', `/consents/${consent.id}/grant`, grant)
  expect(res.json()).toMatchObject({
    status: 409,
    code: 'invalid_transition',
    detail: 'the consent expired at 2026-11-28T10:00:00.000Z',
  })
  expect((await as('GET', `/consents/${consent.id}`)).json()).toMatchObject({
    status: 'pending',
    evidence: null,
    document_id: null,
  })
  expect((await as('GET', `/documents?patient_id=${patient_id}`)).json().meta.total).toBe(0)
  // A millisecond earlier it still could have been.
  now = new Date('2026-11-28T09:59:59.999Z')
  expect((await as('POST', `/consents/${consent.id}/grant`, grant)).json()).toMatchObject({
    status: 'granted',
  })
})
