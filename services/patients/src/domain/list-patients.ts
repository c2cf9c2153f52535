import { keyset, keysetPage, visibleCenters, type Ctx, type Page } from '@clinic/platform/core'
import type { Patient, PatientSort } from '../schemas/patient'
import type { PatientStore } from './patient-store'

/** The list's query; the route fills the defaults (offset 0, limit 25, sort last_name). */
export interface ListPatients {
  offset?: number
  limit?: number
  after?: string
  codalmacen?: string
  q?: string
  sort?: PatientSort
}

/** Each sort's order; the tag keeps a cursor of one sort from being used with the other. */
export const PATIENT_KEYSETS = {
  last_name: keyset({
    tag: 'l',
    order: 'asc',
    columns: [
      { name: 'last_name', kind: 'text' },
      { name: 'first_name', kind: 'text' },
      { name: 'id', kind: 'uuid' },
    ],
  }),
  '-created_at': keyset({
    tag: 'c',
    order: 'desc',
    columns: [
      { name: 'created_at', kind: 'instant' },
      { name: 'id', kind: 'uuid' },
    ],
  }),
} as const

/** The sort values of a row, tagged with the sort. */
export const cursorOf = (sort: PatientSort, p: Patient): string => PATIENT_KEYSETS[sort].cursorOf(p)

/** The position of a cursor of this sort (strict: a cursor is client input), with the sort. */
export const parseCursor = (sort: PatientSort, cursor: string) => ({
  sort,
  ...PATIENT_KEYSETS[sort].parse(cursor),
})

/** Collapses spaces so "  ana   garcia " finds "Ana Garcia". */
export const normalizeQuery = (q: string | undefined) => {
  const s = q?.trim().replace(/\s+/g, ' ')
  return s ? s : undefined
}

export function listPatients(ctx: Ctx, store: PatientStore, input: ListPatients): Promise<Page<Patient>> {
  const sort = input.sort ?? 'last_name'
  return keysetPage<Patient, string[] | null, string>(input, {
    keyset: PATIENT_KEYSETS[sort],
    filter: () => visibleCenters(ctx.auth, input.codalmacen),
    fetch: (centers, page) =>
      store.list(ctx.auth.companyId, { ...page, centers, q: normalizeQuery(input.q), sort }),
  })
}
