import { ValidationFailed, keyset, keysetPage, visibleCenters, type Ctx } from '@clinic/platform/core'
import type { Page } from '@clinic/platform/core'
import type { Exam, ListExamsInput } from '../schemas/exam'
import type { ExamStore } from './exam-store'
import { withContents } from './exam-contents'

/** Newest first: what a clinician opens is the last visit. */
export const EXAM_KEYSET = keyset({
  order: 'desc',
  columns: [
    { name: 'performed_at', kind: 'instant' },
    { name: 'id', kind: 'uuid' },
  ],
})

/** `from`/`to` on performed_at, half-open, as UTC instants. */
export function rangeOf(input: { from?: string; to?: string }): { from?: string; to?: string } {
  const from = input.from === undefined ? undefined : new Date(input.from)
  const to = input.to === undefined ? undefined : new Date(input.to)
  if (from && to && to <= from)
    throw new ValidationFailed(
      [{ path: '/to', message: 'must be after from' }],
      'The query string is not valid',
    )
  return { from: from?.toISOString(), to: to?.toISOString() }
}

export async function listExams(ctx: Ctx, store: ExamStore, input: ListExamsInput): Promise<Page<Exam>> {
  const page = await keysetPage(input, {
    keyset: EXAM_KEYSET,
    filter: () => ({
      ...rangeOf(input),
      centers: visibleCenters(ctx.auth, input.codalmacen),
      patientId: input.patient_id?.toLowerCase(),
      practitioner: input.practitioner,
      status: input.status,
    }),
    fetch: (filter, p) => store.list(ctx.auth.companyId, { ...filter, ...p }),
  })
  return { ...page, data: await withContents(ctx, store, page.data) }
}
