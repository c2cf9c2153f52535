import { injectAs, testPrincipal } from '@clinic/platform/testing'
import { multipart, png, startApp, upload, type Harness } from '../helpers'

/**
 * A document's or a consent's `exam_id` and `appointment_id` are this patient's in this company
 * (DESIGN.md sections 15 and 16): asked of clinical and appointments, never taken on trust.
 */
let h: Harness
beforeAll(async () => {
  h = await startApp({ clock: () => new Date('2026-11-27T10:00:00Z') })
})
afterAll(() => h.close())

/** A company with two patients, an exam and an appointment of the first, and another company's. */
function world() {
  const p = testPrincipal()
  const other = testPrincipal()
  const patient = h.far.patient(p.companyId)
  const sibling = h.far.patient(p.companyId)
  const foreignPatient = h.far.patient(other.companyId)
  return {
    p,
    patient,
    exam: h.far.exam(p.companyId, patient),
    appointment: h.far.appointment(p.companyId, patient),
    siblingExam: h.far.exam(p.companyId, sibling),
    siblingAppointment: h.far.appointment(p.companyId, sibling),
    foreignExam: h.far.exam(other.companyId, foreignPatient),
    foreignAppointment: h.far.appointment(other.companyId, foreignPatient),
  }
}

const send = (p: ReturnType<typeof testPrincipal>, fields: Record<string, string>) =>
  upload(h.app, p, multipart({ category: 'imaging', ...fields }, { bytes: png() }))

describe('an upload', () => {
  it("takes an exam and an appointment of the patient's own", async () => {
    const w = world()
    const res = await send(w.p, { patient_id: w.patient, exam_id: w.exam, appointment_id: w.appointment })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ exam_id: w.exam, appointment_id: w.appointment })
  })

  it("refuses company B's exam, another patient's exam, and an exam nobody has: 422 unknown_exam", async () => {
    const w = world()
    for (const exam_id of [w.foreignExam, w.siblingExam, '0190c5a0-0000-7000-8000-00000000dead'])
      expect((await send(w.p, { patient_id: w.patient, exam_id })).json()).toMatchObject({
        status: 422,
        code: 'unknown_exam',
      })
  })

  it("refuses another patient's appointment and company B's: 422 unknown_appointment", async () => {
    const w = world()
    for (const appointment_id of [w.siblingAppointment, w.foreignAppointment])
      expect((await send(w.p, { patient_id: w.patient, appointment_id })).json()).toMatchObject({
        status: 422,
        code: 'unknown_appointment',
      })
    expect((await injectAs(h.app, w.p)('GET', '/documents')).json().meta.total).toBe(0)
  })
})

describe('a consent', () => {
  async function asked(w: ReturnType<typeof world>, body: Record<string, unknown>) {
    const as = injectAs(h.app, w.p)
    await as('POST', '/consents/templates', { key: 'k', language: 'es', title: 'T', body: 'Texto.' })
    return as('POST', '/consents', { patient_id: w.patient, template_key: 'k', send: false, ...body })
  }

  it("takes an exam and an appointment of the patient's own", async () => {
    const w = world()
    const res = await asked(w, { exam_id: w.exam, appointment_id: w.appointment })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ exam_id: w.exam, appointment_id: w.appointment })
  })

  it("refuses company B's exam and another patient's (unknown_exam), another patient's appointment (unknown_appointment)", async () => {
    const w = world()
    expect((await asked(w, { exam_id: w.foreignExam })).json()).toMatchObject({ code: 'unknown_exam' })
    expect((await asked(w, { exam_id: w.siblingExam })).json()).toMatchObject({ code: 'unknown_exam' })
    expect((await asked(w, { appointment_id: w.siblingAppointment })).json()).toMatchObject({
      status: 422,
      code: 'unknown_appointment',
    })
    expect((await injectAs(h.app, w.p)('GET', '/consents')).json().meta.total).toBe(0)
  })
})
