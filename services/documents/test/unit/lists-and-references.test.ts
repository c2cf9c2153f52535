import { DOCUMENT_KEYSET, listDocuments } from '../../src/domain/list-documents'
import { checkReferences } from '../../src/domain/references'
import { FakeDocumentStore, FakeRecords, NOW, codeOf, ctxOf, fakeId } from '../fakes'

describe('listDocuments: what it asks the store for', () => {
  function setup(principal: Parameters<typeof ctxOf>[0] = {}) {
    const store = new FakeDocumentStore()
    const ctx = ctxOf(principal)
    return { store, ctx, company: ctx.auth.companyId }
  }

  it('available documents of every center by default, a page of 25 (and one more to know of a next)', async () => {
    const { store, ctx, company } = setup()
    const docs = [store.add(company), store.add(company)]
    const page = await listDocuments(ctx, store, {})
    expect(page.data.map((d) => d.id)).toEqual(docs.map((d) => d.id))
    expect(page.meta).toMatchObject({ total: 2, offset: 0, limit: 25 })
    expect(store.filters).toEqual([
      {
        centers: null,
        patientId: undefined,
        category: undefined,
        examId: undefined,
        appointmentId: undefined,
        status: 'available',
        offset: 0,
        limit: 26,
        after: undefined,
      },
    ])
  })

  it('its filters as asked, ids in lower case; deleted ones only when asked for', async () => {
    const { store, ctx } = setup()
    const [patient, exam, appointment] = [fakeId(), fakeId(), fakeId()]
    await listDocuments(ctx, store, {
      patient_id: patient.toUpperCase(),
      category: 'imaging',
      exam_id: exam.toUpperCase(),
      appointment_id: appointment.toUpperCase(),
      status: 'deleted',
      codalmacen: 'ALM2',
      offset: 5,
      limit: 10,
    } as never)
    expect(store.filters[0]).toEqual({
      centers: ['ALM2'],
      patientId: patient,
      category: 'imaging',
      examId: exam,
      appointmentId: appointment,
      status: 'deleted',
      offset: 5,
      limit: 11,
      after: undefined,
    })
  })

  it("a token's centers, else 400/403 for a center that is not the company's or not the token's", async () => {
    const { store, ctx } = setup({ allowedCenters: ['ALM1'] })
    await listDocuments(ctx, store, {})
    expect(store.filters[0]!.centers).toEqual(['ALM1'])
    expect(await codeOf(listDocuments(ctx, store, { codalmacen: 'ALM2' } as never))).toBe('center_forbidden')
    expect(await codeOf(listDocuments(ctx, store, { codalmacen: 'ALM9' } as never))).toBe('unknown_center')
    expect(store.filters).toHaveLength(1)
  })

  it('pages newest first by created_at and id, through a cursor of its own', async () => {
    const { store, ctx } = setup()
    const row = { created_at: NOW.toISOString(), id: fakeId() }
    const after = DOCUMENT_KEYSET.cursorOf(row)
    await listDocuments(ctx, store, { after } as never)
    expect(store.filters[0]!.after).toEqual(row)
    expect(DOCUMENT_KEYSET.order).toBe('desc')
    expect(DOCUMENT_KEYSET.columns.map((c) => [c.name, c.kind])).toEqual([
      ['created_at', 'instant'],
      ['id', 'uuid'],
    ])
  })
})

describe("checkReferences: an appointment and an exam of this patient's", () => {
  function setup() {
    const ctx = ctxOf()
    const company = ctx.auth.companyId
    const appointments = new FakeRecords()
    const exams = new FakeRecords()
    const patient = fakeId()
    const check = (refs: { appointmentId?: string | null; examId?: string | null }) =>
      checkReferences(ctx, { appointments, exams }, patient, refs)
    return { ctx, company, appointments, exams, patient, check }
  }

  it('asks nobody when neither is given', async () => {
    const { check, appointments, exams } = setup()
    expect(await codeOf(check({}))).toBe('ok')
    expect(await codeOf(check({ appointmentId: null, examId: null }))).toBe('ok')
    expect(await codeOf(check({ appointmentId: '', examId: '' }))).toBe('ok')
    expect([appointments.asked, exams.asked]).toEqual([[], []])
  })

  it("takes the patient's own, whatever case its service writes the patient id in", async () => {
    const { check, appointments, exams, company, patient } = setup()
    const appointmentId = appointments.add(company, patient.toUpperCase())
    const examId = exams.add(company, patient)
    expect(await codeOf(check({ appointmentId, examId }))).toBe('ok')
    expect([appointments.asked, exams.asked]).toEqual([[appointmentId], [examId]])
  })

  it("422 for another patient's, another company's or an unknown one; the appointment first; both asked at once", async () => {
    const { check, appointments, exams, company } = setup()
    const sibling = fakeId()
    const foreign = ctxOf().auth.companyId
    for (const appointmentId of [
      appointments.add(company, sibling),
      appointments.add(foreign, sibling),
      fakeId(),
    ])
      expect(await codeOf(check({ appointmentId }))).toBe('unknown_appointment')
    for (const examId of [exams.add(company, sibling), exams.add(foreign, sibling), fakeId()])
      expect(await codeOf(check({ examId }))).toBe('unknown_exam')
    exams.asked.length = 0
    expect(await codeOf(check({ appointmentId: fakeId(), examId: fakeId() }))).toBe('unknown_appointment')
    expect(exams.asked).toHaveLength(1)
  })
})
