import type { Knex } from 'knex'

/** The company and its centers as FHIR's Organization and Location show them (routes/fhir.ts). */
export interface CompanyRecord {
  id: number
  name: string
  created_at: Date
}
export interface CenterRecord {
  code: string
  name: string
  created_at: Date
}

/** The identity schema's company row (null if it is gone). */
export async function companyRecord(knex: Knex, companyId: number): Promise<CompanyRecord | null> {
  return ((await knex('companies').where({ id: companyId }).first('id', 'name', 'created_at')) ??
    null) as CompanyRecord | null
}

/** The company's centers by code. */
export async function centerRecords(knex: Knex, companyId: number): Promise<CenterRecord[]> {
  return (await knex('centers')
    .where({ idempresa: companyId })
    .orderBy('code')
    .select('code', 'name', 'created_at')) as CenterRecord[]
}
