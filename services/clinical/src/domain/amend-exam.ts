import {
  ValidationFailed,
  findVisible,
  idempotencyOf,
  uuidv7,
  visibleCenters,
  visibleRow,
  type Ctx,
  type FieldError,
  type StoredResponse,
} from '@clinic/platform/core'
import { examAmended } from '../events/exam-events'
import type { Exam } from '../schemas/exam'
import type { AmendmentInput } from '../schemas/findings'
import type { ExamStore } from './exam-store'
import { FINDING_KINDS, findingValues, type FindingKind } from './finding-rules'

import { NOT_FOUND, actorOf } from './exam-rules'
import { assemble } from './exam-contents'

/**
 * An amendment of a signed exam: one new version with its reason, adding findings and superseding
 * live ones (they stay readable). Amendments queue on the exam's row lock, so two racing ones
 * leave two versions, each applied to what the other left (a finding one superseded cannot be
 * superseded again by the other: 400 naming it). With an `Idempotency-Key`, a retry answers the
 * exam as the first amendment left it (the exam still visible), never a second amendment.
 */
export async function amendExam(
  ctx: Ctx,
  store: ExamStore,
  input: {
    id: string
    body: AmendmentInput
    queryCenter: string | undefined
    idempotencyKey?: string
    requestHash: string
  },
): Promise<StoredResponse<Exam>> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  const additions = FINDING_KINDS.flatMap((kind) =>
    (input.body.add?.[kind] ?? []).map((body) => ({
      kind,
      values: findingValues(kind, body as Record<string, unknown>),
    })),
  )
  const remove = [...new Set((input.body.remove ?? []).map((id) => id.toLowerCase()))]

  const idempotency = idempotencyOf(ctx, {
    idempotencyKey: input.idempotencyKey,
    requestHash: input.requestHash,
  })
  const result = await store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
    const exam = visibleRow(visible, await tx.findById(input.id, { forUpdate: true }), NOT_FOUND)
    if (exam.status !== 'signed')
      throw new ValidationFailed(
        [{ path: '', message: 'the exam is a draft: change it directly, amendments are for signed exams' }],
        'Only a signed exam is amended',
      )
    if (!additions.length && !remove.length)
      throw new ValidationFailed([
        { path: '/add', message: 'an amendment adds or removes at least one finding' },
      ])
    const findings = await tx.findings(exam.id)
    const errors: FieldError[] = []
    remove.forEach((id, i) => {
      const f = findings.find((x) => x.id === id)
      if (!f) errors.push({ path: `/remove/${i}`, message: 'is not a finding of this exam' })
      else if (f.state !== 'live') errors.push({ path: `/remove/${i}`, message: 'is already superseded' })
    })
    if (errors.length) throw new ValidationFailed(errors)

    const amended = await tx.touch(exam.id, { amendments: exam.amendments + 1 })
    const superseded = await tx.supersede(exam.id, remove, amended.version)
    const added: string[] = []
    for (const a of additions) {
      const f = await tx.insertFinding(
        amended,
        { id: uuidv7(), kind: a.kind, eye: a.values.eye, data: a.values.data, addedIn: amended.version },
        ctx.auth.username,
      )
      added.push(f.id)
    }
    await tx.markSigned(amended)
    const kinds = new Set<FindingKind>(additions.map((a) => a.kind))
    for (const f of findings) if (superseded.includes(f.id)) kinds.add(f.kind)
    await tx.record(exam.id, {
      version: amended.version,
      action: 'amended',
      reason: input.body.reason,
      fields: [...kinds],
      added,
      superseded,
      ...actorOf(ctx),
    })
    await tx.publish([examAmended(ctx, amended, [...kinds])])
    // The answer as of this version, stored with the key: what a retry is answered.
    return { body: assemble(amended, await tx.findings(exam.id), await tx.prescriptions(exam.id)) }
  })
  if (result.replayed) {
    await findVisible(ctx, store, input.id, { queryCenter: input.queryCenter, notFound: NOT_FOUND })
    return result
  }
  ctx.log.info({ exam_id: result.body.id, amendments: result.body.amendments }, 'exam amended')
  return result
}
