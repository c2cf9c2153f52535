import { createExam } from '../../src/domain/create-exam'
import type { FindingKind } from '../../src/domain/finding-rules'
import { addFinding } from '../../src/domain/add-finding'
import { listExams, rangeOf } from '../../src/domain/list-exams'
import { issuePrescription } from '../../src/domain/issue-prescription'
import { assemble, findingOf } from '../../src/domain/exam-contents'
import { getExam, getExamRecord } from '../../src/domain/get-exam'
import { amendExam } from '../../src/domain/amend-exam'
import { signExam } from '../../src/domain/sign-exam'
import { listMeasurements } from '../../src/domain/list-measurements'
import type { ListExamsInput, TrendInput } from '../../src/schemas/exam'
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

/** What is read back: one exam, the list, a patient's trend (DESIGN 14; docs/DESIGN.md "Trends"). */

const NOW = new Date('2026-11-20T10:00:00.000Z')
function setup(principal: Parameters<typeof ctxOf>[0] = {}) {
  const store = new FakeExamStore(() => NOW)
  const patients = new FakePatients()
  const ctx = ctxOf(principal)
  const company = ctx.auth.companyId
  const exam = async (
    o: { patient?: string; codalmacen?: string; performed_at?: string; practitioner?: string } = {},
  ) =>
    (
      await createExam(
        ctx,
        { store, patients, appointments: new FakeAppointments(), clock: () => NOW },
        {
          body: {
            patient_id: o.patient ?? patients.add(company),
            practitioner: o.practitioner ?? 'dr-ficticio',
            codalmacen: o.codalmacen ?? 'ALM1',
            performed_at: o.performed_at,
          },
          queryCenter: undefined,
          requestHash: 'h',
        },
      )
    ).body
  const add = async (examId: string, kind: FindingKind, body: Record<string, unknown>) =>
    (await addFinding(ctx, store, { examId, kind, body, queryCenter: undefined, requestHash: 'h' })).body
  const sign = (id: string) => signExam(ctx, store, { id, queryCenter: undefined, now: NOW })
  return { store, patients, ctx, company, exam, add, sign }
}

describe('getExam and getExamRecord', () => {
  it('answer the exam with its findings by kind and its prescriptions, and each finding’s version', async () => {
    const s = setup()
    const exam = await s.exam()
    const iop = await s.add(exam.id, 'iop', {
      eye: 'left',
      mmhg: 14,
      method: 'icare',
      measured_at: '2026-11-20T09:00:00Z',
    })
    const va = await s.add(exam.id, 'visual_acuity', {
      eye: 'right',
      kind: 'near',
      value: '0.5',
      notation: 'decimal',
    })
    await s.sign(exam.id)
    const { body: amended } = await amendExam(s.ctx, s.store, {
      id: exam.id,
      body: { reason: 'x', add: { diagnoses: [{ code: 'H40', system: 'icd10' }] } },
      queryCenter: undefined,
      requestHash: 'h',
    })
    const { body: p } = await issuePrescription(s.ctx, s.store, {
      examId: exam.id,
      body: { type: 'spectacles', lenses: [{ eye: 'left', sphere: -1 }] },
      queryCenter: undefined,
      now: NOW,
      requestHash: 'h',
    })
    const other = await s.exam()
    await s.add(other.id, 'iop', {
      eye: 'left',
      mmhg: 20,
      method: 'icare',
      measured_at: '2026-11-20T09:00:00Z',
    })

    const read = await getExam(s.ctx, s.store, { id: exam.id, queryCenter: undefined })
    expect(read).toMatchObject({ id: exam.id, status: 'signed', amendments: 1, version: 5 })
    expect(read.iop).toEqual([iop])
    expect(read.visual_acuity).toEqual([va])
    expect(read.refraction).toEqual([])
    expect(read.diagnoses).toEqual([expect.objectContaining({ code: 'H40', eye: 'not_applicable' })])
    expect(read.prescriptions).toEqual([p])
    const record = await getExamRecord(s.ctx, s.store, { id: exam.id, queryCenter: undefined })
    expect(record.exam).toEqual(read)
    expect(record.versions.addedIn).toEqual({ [iop.id]: 2, [va.id]: 3, [amended.diagnoses[0]!.id]: 5 })
  })

  it('are 404 for an unknown exam, another company’s, or one at a center the caller cannot see', async () => {
    const s = setup()
    const exam = await s.exam({ codalmacen: 'ALM2' })
    const read = (ctx: typeof s.ctx, id: string, queryCenter?: string) =>
      getExam(ctx, s.store, { id, queryCenter })
    expect(await problemOf(read(s.ctx, fakeId()))).toEqual({ code: 'not_found', detail: 'No such exam' })
    expect(await codeOf(read(ctxOf(), exam.id))).toBe('not_found')
    expect(await codeOf(read(s.ctx, exam.id, 'ALM1'))).toBe('not_found')
    expect(await codeOf(read(ctxOf({ companyId: s.company, allowedCenters: ['ALM1'] }), exam.id))).toBe(
      'not_found',
    )
    expect(await codeOf(read(s.ctx, exam.id, 'ALM2'))).toBe('ok')
  })
})

describe('assemble and findingOf', () => {
  const row = { id: 'e1' } as Parameters<typeof assemble>[0]
  const record = (over: Partial<Parameters<typeof findingOf>[0]>) => ({
    id: 'f1',
    exam_id: 'e1',
    kind: 'iop' as const,
    eye: 'right',
    data: { mmhg: 12 },
    state: 'live' as const,
    recorded_at: NOW.toISOString(),
    recorded_by: 'test-user',
    added_in: 2,
    ...over,
  })

  it('puts each of the exam’s findings under its kind, its common fields over its data', () => {
    // A stored `data` never carries the common fields; if it did, the record's own win.
    const f = record({ data: { mmhg: 12, id: 'spoofed', state: 'spoofed', eye: 'left' } })
    expect(findingOf(f)).toEqual({
      mmhg: 12,
      id: 'f1',
      eye: 'right',
      state: 'live',
      recorded_at: NOW.toISOString(),
      recorded_by: 'test-user',
    })
    const exam = assemble(
      row,
      [f, record({ id: 'f2', exam_id: 'e2' }), record({ id: 'f3', kind: 'diagnoses' })],
      [{ exam_id: 'e2' } as never, { exam_id: 'e1', id: 'p1' } as never],
    )
    expect(exam.iop.map((x) => x.id)).toEqual(['f1'])
    expect(exam.diagnoses.map((x) => x.id)).toEqual(['f3'])
    expect([exam.visual_acuity, exam.refraction]).toEqual([[], []])
    expect(exam.prescriptions).toEqual([{ exam_id: 'e1', id: 'p1' }])
  })
})

describe('listExams', () => {
  const list = (s: ReturnType<typeof setup>, q: Partial<ListExamsInput>, ctx = s.ctx) =>
    listExams(ctx, s.store, { offset: 0, limit: 25, ...q } as ListExamsInput)

  it('lists newest first with contents, filtered by patient (any case), practitioner, status and performed_at', async () => {
    const s = setup()
    const patient = s.patients.add(s.company)
    const old = await s.exam({ patient, performed_at: '2025-01-10T09:00:00Z' })
    const recent = await s.exam({ patient, performed_at: '2026-05-10T09:00:00Z', practitioner: 'dra-lopez' })
    await s.exam({ performed_at: '2026-06-10T09:00:00Z' })
    await s.add(recent.id, 'iop', {
      eye: 'left',
      mmhg: 14,
      method: 'icare',
      measured_at: '2026-05-10T09:00:00Z',
    })
    await s.sign(recent.id)

    const byPatient = await list(s, { patient_id: patient.toUpperCase() })
    expect(byPatient.data.map((e) => e.id)).toEqual([recent.id, old.id])
    expect(byPatient.data[0]!.iop).toHaveLength(1)
    expect(byPatient.meta).toMatchObject({ total: 2 })
    expect((await list(s, { practitioner: 'dra-lopez' })).data.map((e) => e.id)).toEqual([recent.id])
    expect((await list(s, { status: 'draft', patient_id: patient })).data.map((e) => e.id)).toEqual([old.id])
    const window = await list(s, { from: '2025-06-01T02:00:00+02:00', to: '2026-06-10T09:00:00Z' })
    expect(window.data.map((e) => e.id)).toEqual([recent.id])
  })

  it('pages newest first by cursor: each page starts after the last one’s last exam', async () => {
    const s = setup()
    const patient = s.patients.add(s.company)
    const made = []
    for (const day of ['2026-03-01', '2026-01-01', '2026-02-01'])
      made.push(await s.exam({ patient, performed_at: `${day}T09:00:00Z` }))
    const seen: string[] = []
    let after: string | undefined
    for (let page = 0; page < 3; page++) {
      const res = await list(s, { patient_id: patient, limit: 1, ...(after ? { after } : {}) })
      expect(res.meta.total).toBe(3)
      seen.push(...res.data.map((e) => e.id))
      after = res.meta.next ?? undefined
    }
    expect(seen).toEqual([made[0]!.id, made[2]!.id, made[1]!.id])
    expect(after).toBeUndefined()
    // Two exams at the same instant: the greater id first.
    const twin = await s.exam({ patient, performed_at: '2026-03-01T09:00:00Z' })
    const first = await list(s, { patient_id: patient, limit: 1 })
    const second = await list(s, { patient_id: patient, limit: 1, after: first.meta.next! })
    expect([first.data[0]!.id, second.data[0]!.id]).toEqual([twin.id, made[0]!.id].sort().reverse())
  })

  it('shows a center-limited token its centers only; ?codalmacen= narrows, or is 403 outside the token', async () => {
    const s = setup()
    const a = await s.exam({ codalmacen: 'ALM1' })
    const b = await s.exam({ codalmacen: 'ALM2' })
    const limited = ctxOf({ companyId: s.company, allowedCenters: ['ALM1'] })
    expect((await list(s, {}, limited)).data.map((e) => e.id)).toEqual([a.id])
    expect((await list(s, { codalmacen: 'ALM2' })).data.map((e) => e.id)).toEqual([b.id])
    expect(await codeOf(list(s, { codalmacen: 'ALM2' }, limited))).toBe('center_forbidden')
  })

  it('is 400 naming /to when the range is empty or reversed', async () => {
    const s = setup()
    expect(
      await fieldErrorsOf(list(s, { from: '2026-01-01T00:00:00Z', to: '2026-01-01T01:00:00+01:00' })),
    ).toEqual([{ path: '/to', message: 'must be after from' }])
    expect(await problemOf(list(s, { from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' }))).toEqual({
      code: 'validation_failed',
      detail: 'The query string is not valid',
    })
  })
})

describe('rangeOf', () => {
  it('reads from and to as UTC instants, either alone', () => {
    expect(rangeOf({})).toEqual({ from: undefined, to: undefined })
    expect(rangeOf({ from: '2026-01-01T01:00:00+01:00' })).toEqual({
      from: '2026-01-01T00:00:00.000Z',
      to: undefined,
    })
    expect(rangeOf({ to: '2026-01-01T01:00:00+01:00' })).toEqual({
      from: undefined,
      to: '2026-01-01T00:00:00.000Z',
    })
    expect(rangeOf({ from: '2026-01-01T00:00:00Z', to: '2026-01-01T00:00:00.001Z' })).toEqual({
      from: '2026-01-01T00:00:00.000Z',
      to: '2026-01-01T00:00:00.001Z',
    })
  })
})

describe('listMeasurements', () => {
  const trend = (
    s: ReturnType<typeof setup>,
    patientId: string,
    query: Partial<TrendInput> = {},
    ctx = s.ctx,
  ) => listMeasurements(ctx, { store: s.store, patients: s.patients }, { patientId, query })

  /** A signed exam of `patient` at `center` with these findings. */
  async function signed(
    s: ReturnType<typeof setup>,
    patient: string,
    day: string,
    findings: Array<[FindingKind, Record<string, unknown>]>,
    center = 'ALM1',
  ) {
    const exam = await s.exam({ patient, codalmacen: center, performed_at: `${day}T09:00:00Z` })
    for (const [kind, body] of findings) await s.add(exam.id, kind, body)
    await s.sign(exam.id)
    return exam
  }
  type Entry = [FindingKind, Record<string, unknown>]
  const iop = (eye: string, mmhg: number, at: string, method = 'goldmann'): Entry => [
    'iop',
    { eye, mmhg, method, measured_at: at },
  ]
  const va = (eye: string, value: string, kind = 'best_corrected'): Entry => [
    'visual_acuity',
    { eye, kind, value, notation: 'snellen_m' },
  ]

  it('answers IOP by default, oldest first, with meta (limit 500 unless told)', async () => {
    const s = setup()
    const patient = s.patients.add(s.company)
    await signed(s, patient, '2025-03-01', [iop('right', 21, '2025-03-01T10:00:00Z')])
    await signed(s, patient, '2024-03-01', [iop('right', 19, '2024-03-01T10:00:00Z'), va('right', '6/9')])
    const res = await trend(s, patient.toUpperCase())
    expect(res.data.map((m) => m.mmhg)).toEqual([19, 21])
    expect(res.meta).toEqual({ total: 2, limit: 500 })
    expect((await trend(s, patient, { limit: 1 })).meta).toEqual({ total: 2, limit: 1 })
    expect((await trend(s, patient, { limit: 1 })).data.map((m) => m.mmhg)).toEqual([19])
  })

  it('answers acuity per eye; `both` is binocular acuity only; kind and dates narrow it', async () => {
    const s = setup()
    const patient = s.patients.add(s.company)
    await signed(s, patient, '2024-01-10', [va('right', '6/12'), va('left', '6/9'), va('both', '6/6')])
    await signed(s, patient, '2025-01-10', [va('both', '6/7.5'), va('both', '6/60', 'uncorrected')])
    const acuity = (q: Partial<TrendInput>) => trend(s, patient, { type: 'visual_acuity', ...q })
    expect((await acuity({ eye: 'both' })).data.map((m) => m.value)).toEqual(['6/6', '6/7.5', '6/60'])
    expect((await acuity({ eye: 'right' })).data.map((m) => [m.value, m.logmar])).toEqual([['6/12', 0.3]])
    expect((await acuity({})).meta.total).toBe(5)
    expect((await acuity({ eye: 'both', kind: 'uncorrected' })).data.map((m) => m.value)).toEqual(['6/60'])
    expect((await acuity({ from: '2025-01-01T00:00:00Z' })).data.map((m) => m.value)).toEqual([
      '6/7.5',
      '6/60',
    ])
    expect((await acuity({ to: '2025-01-01T00:00:00Z', eye: 'both' })).data.map((m) => m.value)).toEqual([
      '6/6',
    ])
    expect(await codeOf(acuity({ from: '2025-01-01T00:00:00Z', to: '2024-01-01T00:00:00Z' }))).toBe(
      'validation_failed',
    )
  })

  it('for IOP, kind is the method', async () => {
    const s = setup()
    const patient = s.patients.add(s.company)
    await signed(s, patient, '2025-01-10', [
      iop('left', 15, '2025-01-10T09:00:00Z', 'icare'),
      iop('left', 17, '2025-01-10T09:10:00Z'),
    ])
    expect((await trend(s, patient, { kind: 'icare' })).data.map((m) => m.mmhg)).toEqual([15])
  })

  it('with a company-wide token asks the patients service only when nothing came back', async () => {
    const s = setup()
    const patient = s.patients.add(s.company)
    await signed(s, patient, '2025-01-10', [iop('left', 15, '2025-01-10T09:00:00Z')])
    const calls = s.patients.calls
    s.patients.down = true
    expect((await trend(s, patient)).data).toHaveLength(1)
    expect(s.patients.calls).toBe(calls)
    expect(await codeOf(trend(s, patient, { type: 'visual_acuity' }))).toBe('upstream_unavailable')
    s.patients.down = false
    // Nothing measured: a known patient has an empty trend, an unknown one (another company's) is 404.
    expect(await trend(s, patient, { type: 'visual_acuity' })).toEqual({
      data: [],
      meta: { total: 0, limit: 500 },
    })
    expect(await problemOf(trend(s, s.patients.add(s.company + 1)))).toEqual({
      code: 'not_found',
      detail: 'No such patient',
    })
  })

  it('with a center-limited token asks every time: 404 unless the patient’s home center is the token’s', async () => {
    const s = setup()
    const alm1 = ctxOf({ companyId: s.company, allowedCenters: ['ALM1'] })
    const home1 = s.patients.add(s.company, 'ALM1')
    const home2 = s.patients.add(s.company, 'ALM2')
    const homeless = s.patients.add(s.company, null)
    for (const p of [home1, home2, homeless])
      for (const center of ['ALM1', 'ALM2'])
        await signed(
          s,
          p,
          center === 'ALM1' ? '2025-01-10' : '2025-02-10',
          [iop('right', 16, `2025-0${center === 'ALM1' ? 1 : 2}-10T09:00:00Z`)],
          center,
        )
    const calls = s.patients.calls
    const visible = await trend(s, home1, {}, alm1)
    expect(s.patients.calls).toBe(calls + 1)
    // The measurements are a list: the one taken at the hidden center is left out.
    expect(visible.data.map((m) => m.exam_id)).toHaveLength(1)
    expect(visible.meta.total).toBe(1)
    expect(await problemOf(trend(s, home2, {}, alm1))).toEqual({
      code: 'not_found',
      detail: 'No such patient',
    })
    expect(await codeOf(trend(s, home2, { codalmacen: 'ALM1' }, alm1))).toBe('not_found')
    expect(await codeOf(trend(s, homeless, {}, alm1))).toBe('not_found')
    expect(await codeOf(trend(s, home1, { codalmacen: 'ALM2' }, alm1))).toBe('center_forbidden')
    s.patients.down = true
    expect(await codeOf(trend(s, home1, {}, alm1))).toBe('upstream_unavailable')
    s.patients.down = false
    // The company-wide token sees both centers' measurements.
    expect((await trend(s, home2)).meta.total).toBe(2)
    expect((await trend(s, home2, { codalmacen: 'ALM2' })).meta.total).toBe(1)
  })
})
