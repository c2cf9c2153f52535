import {
  findVisible,
  idempotencyOf,
  uuidv7,
  visibleCenters,
  type Ctx,
  type StoredResponse,
} from '@clinic/platform/core'
import { examUpdated } from '../events/exam-events'
import type { Finding } from '../schemas/findings'
import type { ExamStore } from './exam-store'
import { findingValues, type FindingKind } from './finding-rules'

import { NOT_FOUND, actorOf, lockDraft } from './exam-rules'
import { findingOf } from './exam-contents'

/**
 * Adds a finding to a draft exam (409 exam_signed once signed): stored as entered plus what the
 * service computes (findingValues), with who recorded it; the exam's version moves on. With an
 * `Idempotency-Key`, a retry answers the finding first added (the exam still visible), never a second.
 */
export async function addFinding(
  ctx: Ctx,
  store: ExamStore,
  input: {
    examId: string
    kind: FindingKind
    body: Record<string, unknown>
    queryCenter: string | undefined
    idempotencyKey?: string
    requestHash: string
  },
): Promise<StoredResponse<Finding>> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  const values = findingValues(input.kind, input.body)
  const idempotency = idempotencyOf(ctx, {
    idempotencyKey: input.idempotencyKey,
    requestHash: input.requestHash,
  })
  const result = await store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
    const exam = await lockDraft(ctx, tx, input.examId, visible)
    const touched = await tx.touch(exam.id)
    const finding = await tx.insertFinding(
      exam,
      { id: uuidv7(), kind: input.kind, eye: values.eye, data: values.data, addedIn: touched.version },
      ctx.auth.username,
    )
    await tx.record(exam.id, {
      version: touched.version,
      action: 'finding_added',
      fields: [input.kind],
      added: [finding.id],
      ...actorOf(ctx),
    })
    await tx.publish([examUpdated(ctx, touched, [input.kind])])
    return { body: findingOf(finding) }
  })
  if (result.replayed) await findVisible(ctx, store, input.examId, { notFound: NOT_FOUND })
  return result
}
