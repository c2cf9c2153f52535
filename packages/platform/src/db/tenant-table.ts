import type { Knex } from 'knex'
import { assertIdent } from './connect'

/**
 * The row-level security test of every tenant table: the row's company is the one the transaction
 * set (setCompany, companyRead). Without a setting it is null and no row passes (fail closed).
 * Byte for byte the text of the landed migrations' policies, which keep their own copy (migrations
 * are never edited): platform test tenant-table compares the two as PostgreSQL stored them.
 */
export const TENANT_PREDICATE = `idempresa = nullif(current_setting('app.idempresa', true), '')::integer`

/** What a service role may be granted on a tenant table. */
export type TablePrivilege = 'SELECT' | 'INSERT' | 'UPDATE' | 'DELETE'

/**
 * Makes `table` (in the migration's schema) a tenant table: checks that `idempresa` leads its
 * primary key and every other key (unique, exclusion and foreign key constraints, unique indexes),
 * so the table can be distributed by company later (DESIGN section 9); enables and forces row-level
 * security with the one policy, TENANT_PREDICATE for reads and writes; grants `privileges` to the
 * service's role. A migration calls it right after it creates the table.
 */
export async function secureTenantTable(
  knex: Knex,
  table: string,
  grant: { role: string; privileges: readonly TablePrivilege[] },
): Promise<void> {
  const t = assertIdent(table)
  const role = assertIdent(grant.role)
  await assertCompanyKeys(knex, t)
  const privileges = [...new Set(grant.privileges)]
  if (!privileges.length) throw new Error(`secureTenantTable(${t}): grant the service's role something`)
  await knex.raw(`
    ALTER TABLE ${t} ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
    CREATE POLICY tenant_isolation ON ${t} USING (${TENANT_PREDICATE}) WITH CHECK (${TENANT_PREDICATE});
    GRANT ${privileges.join(', ')} ON ${t} TO ${role}`)
}

/** Throws naming every key of `table` that does not start with `idempresa`, or a missing primary key. */
async function assertCompanyKeys(knex: Knex, table: string): Promise<void> {
  const { rows } = await knex.raw<{ rows: Array<{ key: string; kind: string; first: string | null }> }>(
    `SELECT c.conname AS key, c.contype::text AS kind, a.attname AS first
       FROM pg_constraint c
       LEFT JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
      WHERE c.conrelid = ?::regclass AND c.contype IN ('p', 'u', 'x', 'f')
     UNION ALL
     -- Unique indexes made without a constraint (CREATE UNIQUE INDEX); an expression key has no column.
     SELECT i.indexrelid::regclass::text, 'i', a.attname
       FROM pg_index i
       LEFT JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
      WHERE i.indrelid = ?::regclass AND i.indisunique
        AND NOT EXISTS (SELECT 1 FROM pg_constraint k WHERE k.conindid = i.indexrelid)`,
    [table, table],
  )
  const problems = rows.filter((r) => r.first !== 'idempresa').map((r) => `${r.key} does not start with it`)
  if (!rows.some((r) => r.kind === 'p')) problems.unshift('no primary key')
  if (problems.length)
    throw new Error(`tenant table ${table}: idempresa must lead every key: ${problems.join('; ')}`)
}
