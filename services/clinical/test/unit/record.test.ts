import { createExam } from '../../src/domain/create-exam'
import type { FindingKind } from '../../src/domain/finding-rules'
import { addFinding } from '../../src/domain/add-finding'
import { removeFinding } from '../../src/domain/remove-finding'
import { issuePrescription } from '../../src/domain/issue-prescription'
import { getExam } from '../../src/domain/get-exam'
import { amendExam } from '../../src/domain/amend-exam'
import { getExamHistory } from '../../src/domain/get-exam-history'
import { signExam } from '../../src/domain/sign-exam'
import type { AmendmentInput } from '../../src/schemas/findings'
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

/**
 * The record's life on the fake store: findings added and removed while a draft, signing, amendments
 * and the history (DESIGN 14 "Signing"; docs/DESIGN.md "Clinical records").
 */

const NOW = new Date('2026-11-20T10:00:00.000Z')
const IOP = {
  eye: 'right',
  mmhg: 17.5,
  method: 'goldmann',
  measured_at: '2026-11-20T09:15:00+01:00',
} as const
const ACUITY = { eye: 'both', kind: 'best_corrected', value: '6/9', notation: 'snellen_m' } as const
const DX = { code: 'H40.1', system: 'icd10', eye: 'left' } as const

function setup(principal: Parameters<typeof ctxOf>[0] = {}) {
  const store = new FakeExamStore(() => NOW)
  const patients = new FakePatients()
  const { ctx, lines } = loggingCtxOf(principal)
  const company = ctx.auth.companyId
  const deps = { store, patients, appointments: new FakeAppointments(), clock: () => NOW }
  const draft = async (codalmacen = 'ALM1') =>
    (
      await createExam(ctx, deps, {
        body: { patient_id: patients.add(company), practitioner: 'dr-ficticio', codalmacen },
        queryCenter: undefined,
        requestHash: 'h',
      })
    ).body
  const add = (examId: string, kind: FindingKind, body: Record<string, unknown>, key?: string) =>
    addFinding(ctx, store, {
      examId,
      kind,
      body,
      queryCenter: undefined,
      idempotencyKey: key,
      requestHash: 'h',
    })
  const remove = (examId: string, kind: FindingKind, findingId: string) =>
    removeFinding(ctx, store, { examId, kind, findingId, queryCenter: undefined })
  const sign = (id: string, queryCenter?: string) => signExam(ctx, store, { id, queryCenter, now: NOW })
  const amendment = (id: string, body: Partial<AmendmentInput>, o: { key?: string; hash?: string } = {}) =>
    amendExam(ctx, store, {
      id,
      body: { reason: 'motivo ficticio', ...body },
      queryCenter: undefined,
      idempotencyKey: o.key,
      requestHash: o.hash ?? 'h',
    })
  const amend = async (id: string, body: Partial<AmendmentInput>) => (await amendment(id, body)).body
  const history = async (id: string) =>
    (await getExamHistory(ctx, store, { id, queryCenter: undefined })).data
  const row = (id: string) => store.exams(company).find((e) => e.id === id)!
  return { store, ctx, lines, company, draft, add, remove, sign, amend, amendment, history, row }
}

describe('addFinding', () => {
  it('adds a finding to a draft as stored, who recorded it; the exam moves one version on', async () => {
    const s = setup()
    const exam = await s.draft()
    const { body } = await s.add(exam.id, 'iop', IOP)
    expect(body).toEqual({
      id: expect.any(String),
      eye: 'right',
      mmhg: 17.5,
      method: 'goldmann',
      measured_at: '2026-11-20T08:15:00.000Z',
      cct_um: null,
      state: 'live',
      recorded_at: NOW.toISOString(),
      recorded_by: s.ctx.auth.username,
    })
    expect(s.row(exam.id).version).toBe(2)
    expect((await s.history(exam.id)).at(-1)).toMatchObject({
      version: 2,
      action: 'finding_added',
      changes: { fields: ['iop'], added: [body.id], superseded: [] },
    })
    expect(s.store.events.at(-1)).toMatchObject({
      type: 'clinical.exam.updated',
      data: { version: 2, changes: ['iop'] },
    })
  })

  it('is 409 exam_signed once signed, and 404 for an exam the caller cannot see', async () => {
    const s = setup({ allowedCenters: ['ALM1'] })
    const exam = await s.draft()
    await s.add(exam.id, 'iop', IOP)
    await s.sign(exam.id)
    expect(await codeOf(s.add(exam.id, 'iop', IOP))).toBe('exam_signed')
    expect(await codeOf(s.add(fakeId(), 'iop', IOP))).toBe('not_found')
    const other = setup()
    const theirs = await other.draft('ALM2')
    expect(await codeOf(other.add(theirs.id, 'iop', IOP))).toBe('ok')
    expect(await codeOf(s.add(theirs.id, 'iop', IOP))).toBe('not_found')
  })

  it('adds once per Idempotency-Key: a retry answers the first finding, replayed', async () => {
    const s = setup()
    const exam = await s.draft()
    const first = await s.add(exam.id, 'iop', IOP, 'iop-1')
    const again = await s.add(exam.id, 'iop', IOP, 'iop-1')
    expect(again).toEqual({ body: first.body, replayed: true })
    expect((await s.store.contents(s.company, [exam.id])).findings).toHaveLength(1)
    expect(s.row(exam.id).version).toBe(2)
  })

  it('replays as 404 once the exam is at a center the token cannot see', async () => {
    const s = setup({ allowedCenters: ['ALM1'] })
    const exam = await s.draft()
    await s.add(exam.id, 'iop', IOP, 'iop-1')
    s.store.seed(s.company, { ...s.row(exam.id), codalmacen: 'ALM2' })
    expect(await problemOf(s.add(exam.id, 'iop', IOP, 'iop-1'))).toEqual({
      code: 'not_found',
      detail: 'No such exam',
    })
  })
})

describe('removeFinding', () => {
  it('deletes a draft’s finding (any case of its id), one version on, the history naming it', async () => {
    const s = setup()
    const exam = await s.draft()
    const { body } = await s.add(exam.id, 'iop', IOP)
    await s.remove(exam.id, 'iop', body.id.toUpperCase())
    expect((await s.store.contents(s.company, [exam.id])).findings).toEqual([])
    expect(s.row(exam.id).version).toBe(3)
    expect((await s.history(exam.id)).at(-1)).toMatchObject({
      version: 3,
      action: 'finding_removed',
      changes: { fields: ['iop'], added: [], superseded: [body.id] },
    })
    expect(s.store.events.map((e) => [e.type, (e.data as { version: number }).version])).toEqual([
      ['clinical.exam.created', 1],
      ['clinical.exam.updated', 2],
      ['clinical.exam.updated', 3],
    ])
    expect(s.store.events.at(-1)).toMatchObject({ data: { changes: ['iop'] } })
  })

  it('is 404 for a finding the exam does not have under that kind, before a signed exam’s 409', async () => {
    const s = setup()
    const exam = await s.draft()
    const { body } = await s.add(exam.id, 'iop', IOP)
    expect(await codeOf(s.remove(exam.id, 'diagnoses', body.id))).toBe('not_found')
    expect(await problemOf(s.remove(exam.id, 'iop', fakeId()))).toEqual({
      code: 'not_found',
      detail: 'No such finding in this exam',
    })
    const other = await s.draft()
    expect(await codeOf(s.remove(other.id, 'iop', body.id))).toBe('not_found')
    await s.sign(exam.id)
    expect(await codeOf(s.remove(exam.id, 'iop', fakeId()))).toBe('not_found')
    expect(await codeOf(s.remove(exam.id, 'iop', body.id))).toBe('exam_signed')
    expect((await s.store.contents(s.company, [exam.id])).findings).toHaveLength(1)
  })
})

describe('signExam', () => {
  it('signs: status, instant and signer; the findings reach the trend; history and event', async () => {
    const s = setup()
    const exam = await s.draft()
    await s.add(exam.id, 'iop', IOP)
    const signed = await s.sign(exam.id)
    expect(signed).toMatchObject({
      status: 'signed',
      signed_at: NOW.toISOString(),
      signed_by: s.ctx.auth.username,
      version: 3,
      amendments: 0,
      iop: [expect.objectContaining({ mmhg: 17.5, state: 'live' })],
    })
    expect((await s.history(exam.id)).at(-1)).toMatchObject({
      version: 3,
      action: 'signed',
      changes: { fields: ['status', 'signed_at', 'signed_by'] },
    })
    expect(s.store.events.at(-1)).toMatchObject({ type: 'clinical.exam.signed', data: { status: 'signed' } })
    const trend = await s.store.trend(s.company, {
      patientId: exam.patient_id,
      type: 'iop',
      eyes: null,
      centers: null,
      limit: 10,
    })
    expect(trend.rows.map((m) => [m.mmhg, m.performed_at])).toEqual([[17.5, exam.performed_at]])
  })

  it('is 409 exam_empty with no finding at all (one added and removed counts as none); it stays a draft', async () => {
    const s = setup()
    const exam = await s.draft()
    expect(await codeOf(s.sign(exam.id))).toBe('exam_empty')
    const { body } = await s.add(exam.id, 'diagnoses', DX)
    await s.remove(exam.id, 'diagnoses', body.id)
    expect(await codeOf(s.sign(exam.id))).toBe('exam_empty')
    expect(s.row(exam.id)).toMatchObject({ status: 'draft', signed_at: null, version: 3 })
    expect(s.store.events.map((e) => e.type)).not.toContain('clinical.exam.signed')
  })

  it('is 409 exam_signed the second time, 404 unseen, 403 for a center the token may not use', async () => {
    const s = setup({ allowedCenters: ['ALM1'] })
    const exam = await s.draft()
    await s.add(exam.id, 'iop', IOP)
    await s.sign(exam.id)
    expect(await codeOf(s.sign(exam.id))).toBe('exam_signed')
    expect(await codeOf(s.sign(fakeId()))).toBe('not_found')
    expect(await codeOf(s.sign(exam.id, 'ALM2'))).toBe('center_forbidden')
  })
})

describe('amendExam', () => {
  async function signedWith(s: ReturnType<typeof setup>) {
    const exam = await s.draft()
    const iop = (await s.add(exam.id, 'iop', IOP)).body
    const dx = (await s.add(exam.id, 'diagnoses', DX)).body
    const signed = await s.sign(exam.id)
    return { exam: signed, iop, dx }
  }

  it('makes one version: amendments + 1, adds findings, supersedes others (still readable); history with the reason', async () => {
    const s = setup()
    const { exam, iop } = await signedWith(s)
    const amended = await s.amend(exam.id, {
      reason: 'presion mal transcrita',
      add: { iop: [{ ...IOP, mmhg: 15.5 }], visual_acuity: [ACUITY] },
      remove: [iop.id],
    })
    expect(amended).toMatchObject({ status: 'signed', amendments: 1, version: exam.version + 1 })
    expect(amended.iop).toEqual([
      expect.objectContaining({ id: iop.id, state: 'superseded', mmhg: 17.5 }),
      expect.objectContaining({ state: 'live', mmhg: 15.5 }),
    ])
    expect(amended.visual_acuity).toEqual([expect.objectContaining({ eye: 'both', logmar: 0.18 })])
    const added = [amended.visual_acuity[0]!.id, amended.iop[1]!.id]
    expect((await s.history(exam.id)).at(-1)).toMatchObject({
      version: exam.version + 1,
      action: 'amended',
      reason: 'presion mal transcrita',
      changes: { added, superseded: [iop.id] },
    })
    expect(new Set((await s.history(exam.id)).at(-1)!.changes.fields)).toEqual(
      new Set(['iop', 'visual_acuity']),
    )
    expect(s.store.events.at(-1)).toMatchObject({
      type: 'clinical.exam.amended',
      data: { amendments: 1, version: exam.version + 1 },
    })
    // What the amendment added carries its version (what FHIR calls `amended`), and reaches the trend.
    const { findings } = await s.store.contents(s.company, [exam.id])
    expect(findings.filter((f) => added.includes(f.id)).map((f) => f.added_in)).toEqual([
      exam.version + 1,
      exam.version + 1,
    ])
    const trend = await s.store.trend(s.company, {
      patientId: exam.patient_id,
      type: 'iop',
      eyes: null,
      centers: null,
      limit: 10,
    })
    expect(trend.rows.map((m) => m.mmhg)).toEqual([15.5])
  })

  it('answers the exam as it now stands, prescriptions included, not replayed', async () => {
    const s = setup()
    const { exam } = await signedWith(s)
    const { body: p } = await issuePrescription(s.ctx, s.store, {
      examId: exam.id,
      body: { type: 'spectacles', lenses: [{ eye: 'right', sphere: -1 }] },
      queryCenter: undefined,
      now: NOW,
      requestHash: 'h',
    })
    const result = await s.amendment(exam.id, { add: { iop: [IOP] } })
    expect(result.replayed).toBeUndefined()
    expect(result.body).toEqual(await getExam(s.ctx, s.store, { id: exam.id, queryCenter: undefined }))
    expect(result.body.prescriptions).toEqual([p])
  })

  it('is made once per Idempotency-Key: a retry answers the first amendment; another body is a conflict', async () => {
    const s = setup()
    const { exam, iop } = await signedWith(s)
    const body = { add: { visual_acuity: [ACUITY] }, remove: [iop.id] }
    const first = await s.amendment(exam.id, body, { key: 'amend-1' })
    // A later amendment changes the exam; the retry still answers the first one's exam.
    await s.amend(exam.id, { add: { iop: [IOP] } })
    const retry = await s.amendment(exam.id, body, { key: 'amend-1' })
    expect(retry).toEqual({ body: first.body, replayed: true })
    expect(await codeOf(s.amendment(exam.id, body, { key: 'amend-1', hash: 'other' }))).toBe(
      'idempotency_conflict',
    )
    expect(s.row(exam.id).amendments).toBe(2)
    expect(s.store.events.filter((e) => e.type === 'clinical.exam.amended')).toHaveLength(2)
    expect(s.lines.filter((l) => l.msg === 'exam amended')).toHaveLength(2)
  })

  it('replays as 404 once the exam is at a center the token cannot see', async () => {
    const s = setup({ allowedCenters: ['ALM1'] })
    const { exam } = await signedWith(s)
    await s.amendment(exam.id, { add: { iop: [IOP] } }, { key: 'amend-1' })
    s.store.seed(s.company, { ...s.row(exam.id), codalmacen: 'ALM2' })
    expect(await problemOf(s.amendment(exam.id, { add: { iop: [IOP] } }, { key: 'amend-1' }))).toEqual({
      code: 'not_found',
      detail: 'No such exam',
    })
  })

  it('names, in the history and the event, the kinds of what it superseded too', async () => {
    const s = setup()
    const { exam, dx } = await signedWith(s)
    await s.amend(exam.id, { remove: [dx.id], add: { iop: [IOP] } })
    expect((await s.history(exam.id)).at(-1)!.changes.fields.sort()).toEqual(['diagnoses', 'iop'])
    expect((s.store.events.at(-1)!.data as { changes: string[] }).changes.sort()).toEqual([
      'diagnoses',
      'iop',
    ])
  })

  it('supersedes a finding named twice (in any case) once', async () => {
    const s = setup()
    const { exam, iop } = await signedWith(s)
    await s.amend(exam.id, { remove: [iop.id, iop.id.toUpperCase()] })
    expect((await s.history(exam.id)).at(-1)!.changes).toEqual({
      fields: ['iop'],
      added: [],
      superseded: [iop.id],
    })
  })

  it('refuses, naming each, a finding of another exam and one already superseded; writes nothing', async () => {
    const s = setup()
    const { exam, iop, dx } = await signedWith(s)
    const other = await signedWith(s)
    await s.amend(exam.id, { remove: [dx.id] })
    const version = s.row(exam.id).version
    expect(await fieldErrorsOf(s.amend(exam.id, { remove: [iop.id, other.iop.id, dx.id] }))).toEqual([
      { path: '/remove/1', message: 'is not a finding of this exam' },
      { path: '/remove/2', message: 'is already superseded' },
    ])
    expect(s.row(exam.id)).toMatchObject({ version, amendments: 1 })
    expect((await s.store.contents(s.company, [exam.id])).findings.find((f) => f.id === iop.id)!.state).toBe(
      'live',
    )
    expect(
      (await s.store.contents(s.company, [other.exam.id])).findings.every((f) => f.state === 'live'),
    ).toBe(true)
  })

  it('adds or removes at least one finding, and is for signed exams only (400 either way)', async () => {
    const s = setup()
    const { exam } = await signedWith(s)
    expect(await fieldErrorsOf(s.amend(exam.id, {}))).toEqual([
      { path: '/add', message: 'an amendment adds or removes at least one finding' },
    ])
    expect(await fieldErrorsOf(s.amend(exam.id, { add: { iop: [] }, remove: [] }))).toEqual([
      expect.objectContaining({ path: '/add' }),
    ])
    const draft = await s.draft()
    expect(await fieldErrorsOf(s.amend(draft.id, { add: { iop: [IOP] } }))).toEqual([
      { path: '', message: expect.stringContaining('draft') },
    ])
    expect(await problemOf(s.amend(draft.id, { add: { iop: [IOP] } }))).toEqual({
      code: 'validation_failed',
      detail: 'Only a signed exam is amended',
    })
    expect(await codeOf(s.amend(fakeId(), { add: { iop: [IOP] } }))).toBe('not_found')
    expect(s.row(exam.id).amendments).toBe(0)
  })
})

describe('getExamHistory', () => {
  it('lists every version oldest first: who, what; 404 for an exam the caller cannot see', async () => {
    const s = setup({ allowedCenters: ['ALM1'] })
    const exam = await s.draft()
    await s.add(exam.id, 'iop', IOP)
    await s.sign(exam.id)
    const history = await s.history(exam.id)
    expect(history.map((h) => [h.version, h.action])).toEqual([
      [1, 'created'],
      [2, 'finding_added'],
      [3, 'signed'],
    ])
    expect(history[0]).toMatchObject({
      by: { user_id: s.ctx.auth.userId, username: 'test-user' },
      reason: null,
    })
    expect(await problemOf(s.history(fakeId()))).toEqual({ code: 'not_found', detail: 'No such exam' })
    s.store.seed(s.company, { ...s.row(exam.id), codalmacen: 'ALM2' })
    expect(await codeOf(s.history(exam.id))).toBe('not_found')
  })
})

describe('what signing and amending log', () => {
  it('the exam’s id (and amendments), never a finding’s value or the reason', async () => {
    const s = setup()
    const exam = await s.draft()
    await s.add(exam.id, 'iop', IOP)
    await s.sign(exam.id)
    await s.amend(exam.id, { reason: 'motivo ficticio', add: { iop: [{ ...IOP, mmhg: 15.5 }] } })
    expect(s.lines.map(({ msg, exam_id, amendments }) => ({ msg, exam_id, amendments }))).toEqual([
      { msg: 'exam created', exam_id: exam.id, amendments: undefined },
      { msg: 'exam signed', exam_id: exam.id, amendments: undefined },
      { msg: 'exam amended', exam_id: exam.id, amendments: 1 },
    ])
    expect(JSON.stringify(s.lines)).not.toMatch(/17\.5|15\.5|motivo/)
  })
})
