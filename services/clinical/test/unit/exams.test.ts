import { createExam } from '../../src/domain/create-exam'
import { updateExam } from '../../src/domain/update-exam'
import { type ExamDeps } from '../../src/domain/exam-rules'
import type { CreateExamInput } from '../../src/schemas/exam'
import {
  FakeAppointments,
  FakeExamStore,
  FakePatients,
  codeOf,
  ctxOf,
  fakeId,
  fieldErrorsOf,
  loggingCtxOf,
  problemOf,
} from '../fakes'

/** createExam and updateExam on the fake store, the directories as fakes of the two services. */

const NOW = new Date('2026-11-20T10:00:00.000Z')
function setup(principal: Parameters<typeof ctxOf>[0] = {}) {
  const store = new FakeExamStore(() => NOW)
  const patients = new FakePatients()
  const appointments = new FakeAppointments()
  const deps: ExamDeps = { store, patients, appointments, clock: () => NOW }
  const ctx = ctxOf(principal)
  const company = ctx.auth.companyId
  const create = (
    body: Partial<CreateExamInput>,
    o: { queryCenter?: string; key?: string; hash?: string } = {},
  ) =>
    createExam(ctx, deps, {
      body: { patient_id: body.patient_id ?? patients.add(company), practitioner: 'dr-ficticio', ...body },
      queryCenter: o.queryCenter,
      idempotencyKey: o.key,
      requestHash: o.hash ?? 'hash-1',
    })
  return { store, patients, appointments, deps, ctx, company, create }
}

describe('createExam', () => {
  it('opens a draft, version 1, with its defaults, a history row and clinical.exam.created', async () => {
    const { store, company, create, ctx } = setup()
    const { body, replayed } = await create({ codalmacen: 'ALM2' })
    expect(replayed).toBeUndefined()
    expect(body).toEqual({
      id: expect.any(String),
      patient_id: body.patient_id,
      codalmacen: 'ALM2',
      practitioner: 'dr-ficticio',
      appointment_id: null,
      performed_at: NOW.toISOString(),
      kind: 'comprehensive',
      chief_complaint: null,
      notes: null,
      status: 'draft',
      signed_at: null,
      signed_by: null,
      amendments: 0,
      created_at: NOW.toISOString(),
      updated_at: NOW.toISOString(),
      version: 1,
      visual_acuity: [],
      iop: [],
      refraction: [],
      diagnoses: [],
      prescriptions: [],
    })
    expect(await store.history(company, body.id)).toEqual([
      expect.objectContaining({
        version: 1,
        action: 'created',
        by: { user_id: ctx.auth.userId, username: ctx.auth.username },
      }),
    ])
    expect(store.events.map((e) => [e.type, e.subject, e.idempresa, e.codalmacen])).toEqual([
      ['clinical.exam.created', body.id, company, 'ALM2'],
    ])
  })

  it('keeps what the body says: kind, complaint, notes, and performed_at as a UTC instant', async () => {
    const { create } = setup()
    const { body } = await create({
      kind: 'follow_up',
      chief_complaint: 'vision borrosa',
      notes: 'nota ficticia',
      performed_at: '2026-11-19T09:30:00+01:00',
    })
    expect(body).toMatchObject({
      kind: 'follow_up',
      chief_complaint: 'vision borrosa',
      notes: 'nota ficticia',
      performed_at: '2026-11-19T08:30:00.000Z',
    })
  })

  it('takes the center from the body, else the query, else the patient’s home center', async () => {
    const { patients, company, create } = setup()
    const home2 = patients.add(company, 'ALM2')
    expect(
      (await create({ patient_id: home2, codalmacen: 'ALM1' }, { queryCenter: 'ALM2' })).body.codalmacen,
    ).toBe('ALM1')
    expect((await create({ patient_id: home2 }, { queryCenter: 'ALM1' })).body.codalmacen).toBe('ALM1')
    expect((await create({ patient_id: home2 })).body.codalmacen).toBe('ALM2')
  })

  it('is 400 naming /codalmacen when none is given and the patient has no home center, writing nothing', async () => {
    const { store, patients, company, create } = setup()
    const homeless = patients.add(company, null)
    expect(await fieldErrorsOf(create({ patient_id: homeless }))).toEqual([
      { path: '/codalmacen', message: expect.stringContaining('no home center') },
    ])
    expect(store.exams(company)).toEqual([])
    expect(store.events).toEqual([])
    // Naming a center is enough.
    expect((await create({ patient_id: homeless, codalmacen: 'ALM1' })).body.codalmacen).toBe('ALM1')
  })

  it('checks the center against the company and the token', async () => {
    const { create } = setup({ allowedCenters: ['ALM1'] })
    expect(await codeOf(create({ codalmacen: 'ALM9' }))).toBe('unknown_center')
    expect(await codeOf(create({ codalmacen: 'ALM2' }))).toBe('center_forbidden')
    expect(await codeOf(create({ codalmacen: 'ALM1' }))).toBe('ok')
  })

  it('is 422 unknown_patient for a patient the patients service does not know in this company', async () => {
    const { store, patients, company, create } = setup()
    const elsewhere = patients.add(company + 1)
    expect(await codeOf(create({ patient_id: elsewhere }))).toBe('unknown_patient')
    expect(store.exams(company)).toEqual([])
  })

  it('reads ids in any case: the patient and the appointment are stored lower case', async () => {
    const { patients, appointments, company, create } = setup()
    const patient = patients.add(company)
    const appointment = appointments.add(company, patient)
    const { body } = await create({
      patient_id: patient.toUpperCase(),
      appointment_id: appointment.toUpperCase(),
    })
    expect([body.patient_id, body.appointment_id]).toEqual([patient, appointment])
  })

  it('is 422 unknown_appointment for an unknown appointment or another patient’s, writing nothing', async () => {
    const { store, patients, appointments, company, create } = setup()
    const patient = patients.add(company)
    const other = patients.add(company)
    expect(await codeOf(create({ patient_id: patient, appointment_id: fakeId() }))).toBe(
      'unknown_appointment',
    )
    const theirs = appointments.add(company, other)
    expect(await codeOf(create({ patient_id: patient, appointment_id: theirs }))).toBe('unknown_appointment')
    // The appointments service answers in upper case too: still the same patient.
    const own = appointments.add(company, patient.toUpperCase())
    expect(await codeOf(create({ patient_id: patient, appointment_id: own }))).toBe('ok')
    expect(store.exams(company)).toHaveLength(1)
  })

  it('asks the appointments service only when an appointment is named', async () => {
    const { appointments, create } = setup()
    appointments.down = true
    expect(await codeOf(create({}))).toBe('ok')
    expect(appointments.calls).toBe(0)
  })

  it('is 503 and writes nothing when the patients service cannot answer', async () => {
    const { store, patients, company, create } = setup()
    const patient = patients.add(company)
    patients.down = true
    expect(await codeOf(create({ patient_id: patient }))).toBe('upstream_unavailable')
    expect(store.exams(company)).toEqual([])
  })

  describe('with an Idempotency-Key', () => {
    it('creates once: a retry answers the first exam, replayed, without asking the patients service', async () => {
      const { store, patients, company, create } = setup()
      const patient = patients.add(company)
      const first = await create({ patient_id: patient }, { key: 'exam-1' })
      const calls = patients.calls
      const again = await create({ patient_id: patient }, { key: 'exam-1' })
      expect(again).toEqual({ body: first.body, replayed: true })
      expect(patients.calls).toBe(calls)
      expect(store.exams(company)).toHaveLength(1)
      expect(store.events).toHaveLength(1)
      // Without a key each request is its own exam.
      await create({ patient_id: patient })
      await create({ patient_id: patient })
      expect(store.exams(company)).toHaveLength(3)
    })

    it('is 409 idempotency_conflict for the same key with another body', async () => {
      const { store, company, create } = setup()
      await create({}, { key: 'exam-1', hash: 'hash-1' })
      expect(await codeOf(create({}, { key: 'exam-1', hash: 'hash-2' }))).toBe('idempotency_conflict')
      expect(store.exams(company)).toHaveLength(1)
    })

    it('replays as 404 once the exam is at a center the token cannot see', async () => {
      const { store, company, create } = setup({ allowedCenters: ['ALM1'] })
      const { body } = await create({ codalmacen: 'ALM1' }, { key: 'exam-1' })
      store.seed(company, { ...store.exams(company)[0]!, codalmacen: 'ALM2' })
      expect(await problemOf(create({ codalmacen: 'ALM1' }, { key: 'exam-1' }))).toEqual({
        code: 'not_found',
        detail: 'No such exam',
      })
      expect(body.codalmacen).toBe('ALM1')
    })
  })
})

describe('updateExam', () => {
  async function draft(s: ReturnType<typeof setup>, body: Partial<CreateExamInput> = {}) {
    return (await s.create({ codalmacen: 'ALM1', ...body })).body
  }
  const patch = (
    s: ReturnType<typeof setup>,
    id: string,
    p: object,
    o: { ifMatch?: string; queryCenter?: string } = {},
  ) => updateExam(s.ctx, s.deps, { id, patch: p, queryCenter: o.queryCenter, ifMatch: o.ifMatch })

  it('writes the fields sent, one version on, with a history row and clinical.exam.updated naming them', async () => {
    const s = setup()
    const exam = await draft(s, { notes: 'antes' })
    const updated = await patch(s, exam.id, { notes: 'despues', chief_complaint: 'picor' })
    expect(updated).toMatchObject({ notes: 'despues', chief_complaint: 'picor', version: 2, iop: [] })
    const [, h] = await s.store.history(s.company, exam.id)
    expect(h).toMatchObject({
      version: 2,
      action: 'updated',
      changes: { fields: ['notes', 'chief_complaint'] },
    })
    expect(s.store.events.at(-1)).toMatchObject({
      type: 'clinical.exam.updated',
      subject: exam.id,
      data: { version: 2, changes: ['notes', 'chief_complaint'] },
    })
  })

  it('changes nothing for a PATCH that changes nothing: same version, no history row, no event', async () => {
    const s = setup()
    const exam = await draft(s, { notes: 'igual', performed_at: '2026-11-19T08:30:00Z' })
    // The same instant in another offset is the same performed_at.
    const same = await patch(s, exam.id, { notes: 'igual', performed_at: '2026-11-19T09:30:00+01:00' })
    expect(same).toEqual(exam)
    expect(await patch(s, exam.id, {})).toEqual(exam)
    expect(await s.store.history(s.company, exam.id)).toHaveLength(1)
    expect(s.store.events).toHaveLength(1)
    // Only the field that changed is named.
    await patch(s, exam.id, { notes: 'igual', kind: 'screening' })
    expect((await s.store.history(s.company, exam.id)).at(-1)!.changes.fields).toEqual(['kind'])
  })

  it('honours If-Match: a stale version is 412 and writes nothing; the current one or * passes', async () => {
    const s = setup()
    const exam = await draft(s)
    expect(await codeOf(patch(s, exam.id, { notes: 'x' }, { ifMatch: '"2"' }))).toBe('version_mismatch')
    expect(s.store.exams(s.company)[0]!.version).toBe(1)
    expect((await patch(s, exam.id, { notes: 'x' }, { ifMatch: '"1"' })).version).toBe(2)
    expect((await patch(s, exam.id, { notes: 'y' }, { ifMatch: '*' })).version).toBe(3)
  })

  it('is 409 exam_signed for a signed exam, whatever the body', async () => {
    const s = setup()
    const exam = await draft(s)
    s.store.seed(s.company, {
      ...s.store.exams(s.company)[0]!,
      status: 'signed',
      signed_at: NOW.toISOString(),
    })
    expect(await codeOf(patch(s, exam.id, { notes: 'x' }))).toBe('exam_signed')
    expect(await codeOf(patch(s, exam.id, {}))).toBe('exam_signed')
  })

  it('ignores a field sent as undefined', async () => {
    const s = setup()
    const exam = await draft(s, { notes: 'igual' })
    expect(await patch(s, exam.id, { notes: undefined })).toEqual(exam)
  })

  it('is 409 exam_signed for a signed exam before any appointment is asked about', async () => {
    const s = setup()
    const exam = await draft(s)
    s.store.seed(s.company, {
      ...s.store.exams(s.company)[0]!,
      status: 'signed',
      signed_at: NOW.toISOString(),
    })
    const theirs = s.appointments.add(s.company, s.patients.add(s.company))
    expect(await codeOf(patch(s, exam.id, { appointment_id: theirs }))).toBe('exam_signed')
    expect(s.appointments.calls).toBe(0)
  })

  it('is 404 for an unknown exam and for one at a center the caller cannot see', async () => {
    const s = setup({ allowedCenters: ['ALM1'] })
    const exam = await draft(s)
    expect(await problemOf(patch(s, fakeId(), { notes: 'x' }))).toEqual({
      code: 'not_found',
      detail: 'No such exam',
    })
    s.store.seed(s.company, { ...s.store.exams(s.company)[0]!, codalmacen: 'ALM2' })
    expect(await codeOf(patch(s, exam.id, { notes: 'x' }))).toBe('not_found')
  })

  it('checks a new appointment (the exam’s patient’s), lower case; an unchanged one is not asked again', async () => {
    const s = setup()
    const patient = s.patients.add(s.company)
    const own = s.appointments.add(s.company, patient)
    const exam = await draft(s, { patient_id: patient, appointment_id: own })
    const theirs = s.appointments.add(s.company, s.patients.add(s.company))
    expect(await codeOf(patch(s, exam.id, { appointment_id: theirs }))).toBe('unknown_appointment')
    s.appointments.down = true
    expect((await patch(s, exam.id, { appointment_id: own.toUpperCase(), notes: 'x' })).appointment_id).toBe(
      own,
    )
    s.appointments.down = false
    const another = s.appointments.add(s.company, patient)
    expect((await patch(s, exam.id, { appointment_id: another.toUpperCase() })).appointment_id).toBe(another)
  })
})

describe('what createExam logs', () => {
  it('the exam’s id once, not replayed, nothing of the patient', async () => {
    const { ctx, lines } = loggingCtxOf()
    const store = new FakeExamStore(() => NOW)
    const patients = new FakePatients()
    const deps: ExamDeps = { store, patients, appointments: new FakeAppointments(), clock: () => NOW }
    const patient = patients.add(ctx.auth.companyId)
    const input = {
      body: { patient_id: patient, practitioner: 'dr-ficticio', chief_complaint: 'dolor ficticio' },
      queryCenter: undefined,
      idempotencyKey: 'log-1',
      requestHash: 'h',
    }
    const { body } = await createExam(ctx, deps, input)
    await createExam(ctx, deps, input)
    // A replay answered from the stored response created nothing: nothing to log.
    expect(lines.map((l) => [l.msg, l.exam_id, l.replayed])).toEqual([['exam created', body.id, false]])
    expect(JSON.stringify(lines)).not.toMatch(new RegExp(`${patient}|dolor`))
  })
})
