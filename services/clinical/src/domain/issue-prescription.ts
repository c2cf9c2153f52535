import {
  ValidationFailed,
  idempotencyOf,
  uuidv7,
  visibleCenters,
  visibleRow,
  type Ctx,
  type StoredResponse,
} from '@clinic/platform/core'
import { prescriptionIssued } from '../events/exam-events'
import type { CreatePrescriptionInput, Prescription } from '../schemas/exam'
import { ExamNotSigned } from './errors'
import type { ExamStore } from './exam-store'
import { minusCylinder } from './finding-rules'

import { NOT_FOUND } from './exam-rules'
import { getPrescription } from './get-prescription'

/** Spectacles are valid two years by default, contact lenses one (DESIGN 14). */
const VALID_YEARS = { spectacles: 2, contact_lenses: 1 } as const

/** `date` plus whole years, as a date (29 February becomes 28 February, or 1 March, as Date rolls). */
function plusYears(date: Date, years: number): string {
  const d = new Date(Date.UTC(date.getUTCFullYear() + years, date.getUTCMonth(), date.getUTCDate()))
  return d.toISOString().slice(0, 10)
}

/**
 * A prescription from a signed exam (409 exam_not_signed for a draft: what is prescribed must be
 * final). Lenses are stored in minus-cylinder form, one per eye. Never edited: a new one replaces it.
 */
export async function issuePrescription(
  ctx: Ctx,
  store: ExamStore,
  input: {
    examId: string
    body: CreatePrescriptionInput
    queryCenter: string | undefined
    now: Date
    idempotencyKey?: string
    requestHash: string
  },
): Promise<StoredResponse<Prescription>> {
  const eyes = input.body.lenses.map((l) => l.eye)
  if (new Set(eyes).size !== eyes.length)
    throw new ValidationFailed([{ path: '/lenses', message: 'has one lens per eye at most' }])
  if (input.body.valid_until && input.body.valid_until < input.now.toISOString().slice(0, 10))
    throw new ValidationFailed([{ path: '/valid_until', message: 'must not be in the past' }])
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  const idempotency = idempotencyOf(ctx, {
    idempotencyKey: input.idempotencyKey,
    requestHash: input.requestHash,
  })
  const result =
    (await store.storedResponse<Prescription>(ctx.auth.companyId, idempotency)) ??
    (await store.idempotent(ctx.auth.companyId, idempotency, async (tx) => {
      const exam = visibleRow(visible, await tx.findById(input.examId, { forUpdate: true }), NOT_FOUND)
      if (exam.status !== 'signed') throw new ExamNotSigned()
      const p = await tx.insertPrescription({
        id: uuidv7(),
        exam_id: exam.id,
        patient_id: exam.patient_id,
        codalmacen: exam.codalmacen,
        type: input.body.type,
        lenses: input.body.lenses.map((l) => {
          const lens = minusCylinder(l)
          return {
            ...lens,
            add: lens.add ?? null,
            prism: lens.prism ?? null,
            base_curve_mm: l.base_curve_mm ?? null,
            diameter_mm: l.diameter_mm ?? null,
            brand: l.brand ?? null,
          }
        }),
        valid_until: input.body.valid_until ?? plusYears(input.now, VALID_YEARS[input.body.type]),
        notes: input.body.notes ?? null,
        issued_by: ctx.auth.username,
      })
      await tx.publish([prescriptionIssued(ctx, p)])
      return { body: p }
    }))
  if (result.replayed) await getPrescription(ctx, store, { id: result.body.id, queryCenter: undefined })
  return result
}
