import { createExam } from '../../src/domain/create-exam'
import { addFinding } from '../../src/domain/add-finding'
import { getPrescription } from '../../src/domain/get-prescription'
import { issuePrescription } from '../../src/domain/issue-prescription'
import { signExam } from '../../src/domain/sign-exam'
import type { CreatePrescriptionInput } from '../../src/schemas/exam'
import {
  FakeAppointments,
  FakeExamStore,
  FakePatients,
  codeOf,
  ctxOf,
  fakeId,
  fieldErrorsOf,
  problemOf,
} from '../fakes'

/** Prescriptions from signed exams (DESIGN 14 "Prescriptions"; docs/DESIGN.md "Clinical records"). */

function setup(principal: Parameters<typeof ctxOf>[0] = {}, now = new Date('2026-11-20T10:00:00.000Z')) {
  const store = new FakeExamStore(() => now)
  const patients = new FakePatients()
  const ctx = ctxOf(principal)
  const company = ctx.auth.companyId
  const exam = async (o: { signed?: boolean; codalmacen?: string } = {}) => {
    const { body } = await createExam(
      ctx,
      { store, patients, appointments: new FakeAppointments(), clock: () => now },
      {
        body: {
          patient_id: patients.add(company),
          practitioner: 'dr-ficticio',
          codalmacen: o.codalmacen ?? 'ALM1',
        },
        queryCenter: undefined,
        requestHash: 'h',
      },
    )
    await addFinding(ctx, store, {
      examId: body.id,
      kind: 'diagnoses',
      body: { code: 'H52.1', system: 'icd10' },
      queryCenter: undefined,
      requestHash: 'h',
    })
    if (o.signed ?? true) await signExam(ctx, store, { id: body.id, queryCenter: undefined, now })
    return body
  }
  const issue = (
    examId: string,
    body: Partial<CreatePrescriptionInput>,
    o: { now?: Date; key?: string; hash?: string; queryCenter?: string } = {},
  ) =>
    issuePrescription(ctx, store, {
      examId,
      body: { type: 'spectacles', lenses: [{ eye: 'right', sphere: -1 }], ...body },
      queryCenter: o.queryCenter,
      now: o.now ?? now,
      idempotencyKey: o.key,
      requestHash: o.hash ?? 'h',
    })
  return { store, ctx, company, exam, issue }
}

describe('issuePrescription', () => {
  it('issues from a signed exam: its patient and center, lenses in minus-cylinder form, every default', async () => {
    const s = setup()
    const exam = await s.exam({ codalmacen: 'ALM2' })
    const { body: p } = await s.issue(exam.id, {
      lenses: [
        { eye: 'right', sphere: -1.5, cylinder: 0.5, axis: 170, add: 1.5 },
        {
          eye: 'left',
          sphere: -1.25,
          prism: { amount: 1, base: 'in' },
          base_curve_mm: 8.6,
          diameter_mm: 14.2,
          brand: 'Marca',
        },
      ],
      notes: 'antirreflejante',
    })
    expect(p).toEqual({
      id: expect.any(String),
      exam_id: exam.id,
      patient_id: exam.patient_id,
      codalmacen: 'ALM2',
      type: 'spectacles',
      lenses: [
        {
          eye: 'right',
          sphere: -1,
          cylinder: -0.5,
          axis: 80,
          add: 1.5,
          prism: null,
          base_curve_mm: null,
          diameter_mm: null,
          brand: null,
        },
        {
          eye: 'left',
          sphere: -1.25,
          cylinder: 0,
          axis: null,
          add: null,
          prism: { amount: 1, base: 'in' },
          base_curve_mm: 8.6,
          diameter_mm: 14.2,
          brand: 'Marca',
        },
      ],
      valid_until: '2028-11-20',
      notes: 'antirreflejante',
      issued_at: '2026-11-20T10:00:00.000Z',
      issued_by: s.ctx.auth.username,
      version: 1,
    })
    expect(s.store.events.at(-1)).toMatchObject({
      type: 'clinical.prescription.issued',
      subject: p.id,
      codalmacen: 'ALM2',
      data: { id: p.id, exam_id: exam.id, type: 'spectacles', valid_until: '2028-11-20' },
    })
  })

  it('is valid two years for spectacles and one for contact lenses, from the day it is issued', async () => {
    const s = setup()
    const exam = await s.exam()
    const on = new Date('2027-03-05T23:30:00.000Z')
    expect((await s.issue(exam.id, { type: 'spectacles' }, { now: on })).body.valid_until).toBe('2029-03-05')
    expect((await s.issue(exam.id, { type: 'contact_lenses' }, { now: on })).body.valid_until).toBe(
      '2028-03-05',
    )
    // 29 February rolls on to 1 March in a year without one.
    const leap = new Date('2028-02-29T08:00:00.000Z')
    expect((await s.issue(exam.id, { type: 'contact_lenses' }, { now: leap })).body.valid_until).toBe(
      '2029-03-01',
    )
    expect((await s.issue(exam.id, { type: 'spectacles' }, { now: leap })).body.valid_until).toBe(
      '2030-03-01',
    )
  })

  it('keeps a valid_until given, today included; one in the past is 400 naming it, writing nothing', async () => {
    const s = setup()
    const exam = await s.exam()
    expect((await s.issue(exam.id, { valid_until: '2027-01-31' })).body.valid_until).toBe('2027-01-31')
    expect((await s.issue(exam.id, { valid_until: '2026-11-20' })).body.valid_until).toBe('2026-11-20')
    expect(await fieldErrorsOf(s.issue(exam.id, { valid_until: '2026-11-19' }))).toEqual([
      { path: '/valid_until', message: 'must not be in the past' },
    ])
    expect((await s.store.contents(s.company, [exam.id])).prescriptions).toHaveLength(2)
  })

  it('has one lens per eye at most (400 naming /lenses)', async () => {
    const s = setup()
    const exam = await s.exam()
    expect(
      await fieldErrorsOf(
        s.issue(exam.id, {
          lenses: [
            { eye: 'left', sphere: -1 },
            { eye: 'left', sphere: -2 },
          ],
        }),
      ),
    ).toEqual([{ path: '/lenses', message: 'has one lens per eye at most' }])
  })

  it('is 409 exam_not_signed from a draft, 404 for an exam the caller cannot see', async () => {
    const s = setup({ allowedCenters: ['ALM1'] })
    const draft = await s.exam({ signed: false })
    expect(await codeOf(s.issue(draft.id, {}))).toBe('exam_not_signed')
    expect(await codeOf(s.issue(fakeId(), {}))).toBe('not_found')
    const signed = await s.exam()
    s.store.seed(s.company, {
      ...s.store.exams(s.company).find((e) => e.id === signed.id)!,
      codalmacen: 'ALM2',
    })
    expect(await codeOf(s.issue(signed.id, {}))).toBe('not_found')
    expect(s.store.events.map((e) => e.type)).not.toContain('clinical.prescription.issued')
  })

  it('issues once per Idempotency-Key: a retry answers the first; another body is a conflict', async () => {
    const s = setup()
    const exam = await s.exam()
    const first = await s.issue(exam.id, {}, { key: 'rx-1' })
    expect(await s.issue(exam.id, {}, { key: 'rx-1' })).toEqual({ body: first.body, replayed: true })
    expect(await codeOf(s.issue(exam.id, {}, { key: 'rx-1', hash: 'other' }))).toBe('idempotency_conflict')
    expect((await s.store.contents(s.company, [exam.id])).prescriptions).toHaveLength(1)
  })

  it('replays as 404 once the prescription is at a center the token cannot see', async () => {
    const s = setup({ allowedCenters: ['ALM1'] })
    const exam = await s.exam()
    await s.issue(exam.id, {}, { key: 'rx-1' })
    s.store.sideOf(s.company).prescriptions[0]!.codalmacen = 'ALM2'
    expect(await codeOf(s.issue(exam.id, {}, { key: 'rx-1' }))).toBe('not_found')
  })
})

describe('getPrescription', () => {
  it('answers a prescription of the company under its exam’s center rules', async () => {
    const s = setup()
    const exam = await s.exam({ codalmacen: 'ALM2' })
    const { body } = await s.issue(exam.id, {})
    expect(await getPrescription(s.ctx, s.store, { id: body.id, queryCenter: undefined })).toEqual(body)
    expect(await codeOf(getPrescription(s.ctx, s.store, { id: body.id, queryCenter: 'ALM1' }))).toBe(
      'not_found',
    )
    expect(
      await problemOf(getPrescription(s.ctx, s.store, { id: fakeId(), queryCenter: undefined })),
    ).toEqual({
      code: 'not_found',
      detail: 'No such prescription',
    })
    const limited = ctxOf({ companyId: s.company, allowedCenters: ['ALM1'] })
    expect(await codeOf(getPrescription(limited, s.store, { id: body.id, queryCenter: undefined }))).toBe(
      'not_found',
    )
    const other = ctxOf()
    expect(await codeOf(getPrescription(other, s.store, { id: body.id, queryCenter: undefined }))).toBe(
      'not_found',
    )
  })
})
