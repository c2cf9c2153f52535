import { NotFound, visibleCenters, visibleRow, type Ctx } from '@clinic/platform/core'
import { examUpdated } from '../events/exam-events'
import type { ExamStore } from './exam-store'
import { type FindingKind } from './finding-rules'
import { ExamSigned } from './errors'

import { NOT_FOUND, actorOf } from './exam-rules'

/** Removes a finding of a draft exam (a draft is not yet a record); signed: 409 exam_signed. */
export async function removeFinding(
  ctx: Ctx,
  store: ExamStore,
  input: { examId: string; kind: FindingKind; findingId: string; queryCenter: string | undefined },
): Promise<void> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  const findingId = input.findingId.toLowerCase()
  await store.transaction(ctx.auth.companyId, async (tx) => {
    // An unknown finding is 404 whatever the exam's state; a known one of a signed exam is 409.
    const exam = visibleRow(visible, await tx.findById(input.examId, { forUpdate: true }), NOT_FOUND)
    const findings = await tx.findings(exam.id)
    if (!findings.some((f) => f.id === findingId && f.kind === input.kind))
      throw new NotFound('No such finding in this exam')
    if (exam.status === 'signed') throw new ExamSigned()
    await tx.deleteFinding(exam.id, input.kind, findingId)
    const touched = await tx.touch(exam.id)
    await tx.record(exam.id, {
      version: touched.version,
      action: 'finding_removed',
      fields: [input.kind],
      superseded: [findingId],
      ...actorOf(ctx),
    })
    await tx.publish([examUpdated(ctx, touched, [input.kind])])
  })
}
