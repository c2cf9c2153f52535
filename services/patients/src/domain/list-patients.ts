import {
  ValidationFailed,
  decodeCursor,
  encodeCursor,
  isIsoInstant,
  isUuid,
  pageOf,
  visibleCenters,
  type Ctx,
  type Page,
} from '@clinic/platform/core'
import type { Patient, PatientSort } from '../schemas/patient'
import type { ListCursor, PatientStore } from './patient-store'

export interface ListPatients {
  offset: number
  limit: number
  after?: string
  codalmacen?: string
  q?: string
  sort: PatientSort
}

/** The sort values of a row, tagged with the sort so a cursor cannot be used with another one. */
export function cursorOf(sort: PatientSort, p: Patient): string {
  return sort === 'last_name'
    ? encodeCursor(['l', p.last_name, p.first_name, p.id])
    : encodeCursor(['c', p.created_at, p.id])
}

export function parseCursor(sort: PatientSort, cursor: string): ListCursor {
  const bad = () =>
    new ValidationFailed([{ path: '/after', message: 'is not a cursor from meta.next for this sort' }])
  const values = decodeCursor(cursor, sort === 'last_name' ? 4 : 3)
  if (!values.every((v) => typeof v === 'string')) throw bad()
  const v = values as string[]
  if (!isUuid(v[v.length - 1]!)) throw bad()
  if (sort === 'last_name' && v[0] === 'l') return { sort, last_name: v[1]!, first_name: v[2]!, id: v[3]! }
  // The instant exactly as the list wrote it: a forged one ('2026-02-30', year 275760) is a 400 here,
  // never a database error.
  if (sort === '-created_at' && v[0] === 'c' && isIsoInstant(v[1]))
    return { sort, created_at: v[1]!, id: v[2]! }
  throw bad()
}

/** Collapses spaces so "  ana   garcia " finds "Ana Garcia". */
export const normalizeQuery = (q: string | undefined) => {
  const s = q?.trim().replace(/\s+/g, ' ')
  return s ? s : undefined
}

export async function listPatients(
  ctx: Ctx,
  store: PatientStore,
  input: ListPatients,
): Promise<Page<Patient>> {
  if (input.after !== undefined && input.offset > 0)
    throw new ValidationFailed([{ path: '/offset', message: 'cannot be combined with after' }])
  const centers = visibleCenters(ctx.auth, input.codalmacen)
  const after = input.after === undefined ? undefined : parseCursor(input.sort, input.after)
  const { rows, total } = await store.list(ctx.auth.companyId, {
    centers,
    q: normalizeQuery(input.q),
    sort: input.sort,
    offset: input.offset,
    limit: input.limit + 1,
    after,
  })
  return pageOf(rows, {
    total,
    offset: input.offset,
    limit: input.limit,
    cursorOf: (p) => cursorOf(input.sort, p),
  })
}
