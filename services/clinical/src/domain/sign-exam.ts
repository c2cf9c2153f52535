import { visibleCenters, type Ctx } from '@clinic/platform/core'
import { examSigned } from '../events/exam-events'
import type { Exam } from '../schemas/exam'
import type { ExamStore } from './exam-store'
import { ExamEmpty } from './errors'

import { actorOf, lockDraft } from './exam-rules'
import { withContents } from './exam-contents'

/**
 * Signs a draft: from now on the exam and its findings never change (PATCH, a finding's POST or
 * DELETE answer 409 exam_signed); corrections are amendments. Signing a signed exam is 409 too, and
 * so is signing one with no finding at all (409 exam_empty).
 * The findings get the columns the trends read (the exam's time, center and patient are final now).
 */
export async function signExam(
  ctx: Ctx,
  store: ExamStore,
  input: { id: string; queryCenter: string | undefined; now: Date },
): Promise<Exam> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  const row = await store.transaction(ctx.auth.companyId, async (tx) => {
    const exam = await lockDraft(ctx, tx, input.id, visible)
    if (!(await tx.findings(exam.id)).length) throw new ExamEmpty()
    const signed = await tx.update(exam.id, {
      status: 'signed',
      signed_at: input.now.toISOString(),
      signed_by: ctx.auth.username,
    })
    await tx.markSigned(signed)
    await tx.record(exam.id, {
      version: signed.version,
      action: 'signed',
      fields: ['status', 'signed_at', 'signed_by'],
      ...actorOf(ctx),
    })
    await tx.publish([examSigned(ctx, signed)])
    return signed
  })
  ctx.log.info({ exam_id: row.id }, 'exam signed')
  const [exam] = await withContents(ctx, store, [row])
  return exam!
}
