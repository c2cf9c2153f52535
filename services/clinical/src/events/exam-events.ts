import { makeEvent, type CloudEvent, type Ctx } from '@clinic/platform/core'
import type { ExamRow, Prescription } from '../schemas/exam'

export const SOURCE = 'clinic/clinical'

/** Thin, as every event: ids, center, status and version; never a finding's value nor notes. */
const examIds = (e: ExamRow) => ({
  id: e.id,
  patient_id: e.patient_id,
  codalmacen: e.codalmacen,
  practitioner: e.practitioner,
  status: e.status,
  amendments: e.amendments,
  version: e.version,
})
const envelope = (ctx: Ctx, subject: string, codalmacen: string) => ({
  source: SOURCE,
  subject,
  companyId: ctx.auth.companyId,
  codalmacen,
  ctx,
})

export const examCreated = (ctx: Ctx, e: ExamRow): CloudEvent<'clinical.exam.created'> =>
  makeEvent({ type: 'clinical.exam.created', ...envelope(ctx, e.id, e.codalmacen), data: examIds(e) })

/** `changes`: exam fields, or the finding kinds added or removed from the draft. */
export const examUpdated = (ctx: Ctx, e: ExamRow, changes: string[]): CloudEvent<'clinical.exam.updated'> =>
  makeEvent({
    type: 'clinical.exam.updated',
    ...envelope(ctx, e.id, e.codalmacen),
    data: { ...examIds(e), changes },
  })

export const examSigned = (ctx: Ctx, e: ExamRow): CloudEvent<'clinical.exam.signed'> =>
  makeEvent({
    type: 'clinical.exam.signed',
    ...envelope(ctx, e.id, e.codalmacen),
    data: { ...examIds(e), changes: ['status', 'signed_at', 'signed_by'] },
  })

/** `changes`: the finding kinds added or superseded (the reason stays in the record). */
export const examAmended = (ctx: Ctx, e: ExamRow, changes: string[]): CloudEvent<'clinical.exam.amended'> =>
  makeEvent({
    type: 'clinical.exam.amended',
    ...envelope(ctx, e.id, e.codalmacen),
    data: { ...examIds(e), changes },
  })

export const prescriptionIssued = (ctx: Ctx, p: Prescription): CloudEvent<'clinical.prescription.issued'> =>
  makeEvent({
    type: 'clinical.prescription.issued',
    ...envelope(ctx, p.id, p.codalmacen),
    data: {
      id: p.id,
      exam_id: p.exam_id,
      patient_id: p.patient_id,
      codalmacen: p.codalmacen,
      type: p.type,
      valid_until: p.valid_until,
      version: p.version,
    },
  })
