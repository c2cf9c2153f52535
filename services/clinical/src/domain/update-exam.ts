import { VersionMismatch, ifMatchAllows, visibleCenters, visibleRow, type Ctx } from '@clinic/platform/core'
import { examUpdated } from '../events/exam-events'
import type { Exam, UpdateExamInput } from '../schemas/exam'
import { ExamSigned } from './errors'

import { NOT_FOUND, actorOf, checkAppointment, lockDraft, type ExamDeps } from './exam-rules'
import { withContents } from './exam-contents'

/**
 * PATCH of a draft: only the fields sent, If-Match against the locked version. A signed exam is
 * 409 exam_signed, whatever the body. A PATCH that changes nothing keeps the version.
 */
export async function updateExam(
  ctx: Ctx,
  deps: ExamDeps,
  input: { id: string; patch: UpdateExamInput; queryCenter: string | undefined; ifMatch: string | undefined },
): Promise<Exam> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  const patch = { ...input.patch }
  if (patch.performed_at) patch.performed_at = new Date(patch.performed_at).toISOString()
  if (patch.appointment_id) patch.appointment_id = patch.appointment_id.toLowerCase()
  const current = visibleRow(visible, await deps.store.findById(ctx.auth.companyId, input.id), NOT_FOUND)
  if (current.status === 'signed') throw new ExamSigned()
  if (patch.appointment_id && patch.appointment_id !== current.appointment_id)
    await checkAppointment(ctx, deps, patch.appointment_id, current.patient_id)

  const row = await deps.store.transaction(ctx.auth.companyId, async (tx) => {
    const exam = await lockDraft(ctx, tx, input.id, visible)
    if (input.ifMatch !== undefined && !ifMatchAllows(input.ifMatch, exam.version))
      throw new VersionMismatch()
    const changes = (Object.keys(patch) as Array<keyof UpdateExamInput>).filter(
      (k) => patch[k] !== undefined && patch[k] !== exam[k],
    )
    if (!changes.length) return exam
    const values = Object.fromEntries(changes.map((k) => [k, patch[k]]))
    const updated = await tx.update(exam.id, values)
    await tx.record(exam.id, {
      version: updated.version,
      action: 'updated',
      fields: changes,
      ...actorOf(ctx),
    })
    await tx.publish([examUpdated(ctx, updated, changes)])
    return updated
  })
  const [exam] = await withContents(ctx, deps.store, [row])
  return exam!
}
