import type { Knex } from 'knex'
import pg from 'pg'
import { assertIdent, isUniqueViolation } from './connect'

/** `<DB_ROLE_PREFIX><role>` (naming.cjs, shared with the scripts and the e2e stack). */
export { stackDbRole } from '../../naming.cjs'

/** Creates a NOLOGIN role once per cluster; concurrent runs may race, which is fine. */
export async function ensureRole(knex: Knex, role: string): Promise<void> {
  await knex.raw(`
    DO $$ BEGIN
      CREATE ROLE ${assertIdent(role)} NOLOGIN;
    EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL;
    END $$`)
}

/** The user name a PostgreSQL URL logs in as. */
export const loginOf = (url: string): string => decodeURIComponent(new URL(url).username) || 'postgres'

/**
 * The login role a service runs as, made (or brought back in line) by the migration step with the
 * owner's connection: it may log in, holds the service's privileges through membership of
 * `memberOf` (the NOLOGIN role the migrations grant to), owns nothing, is no superuser and cannot
 * bypass row-level security, so `RESET ROLE` after an injection gains nothing. Its name and
 * password are those of the service's own `DATABASE_URL`.
 */
export async function ensureLoginRole(
  ownerUrl: string,
  serviceUrl: string,
  memberOf: string,
): Promise<string> {
  const url = new URL(serviceUrl)
  const login = assertIdent(loginOf(serviceUrl))
  if (login === loginOf(ownerUrl))
    throw new Error(`DATABASE_URL logs in as the owner (${login}): give the service a login role of its own`)
  const password = url.password ? ` PASSWORD ${pg.escapeLiteral(decodeURIComponent(url.password))}` : ''
  const limits = 'LOGIN INHERIT NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS'
  const client = new pg.Client({ connectionString: ownerUrl, application_name: `${login}-role` })
  await client.connect()
  try {
    // Replicas' migration steps take turns (the lock ends with the session).
    await client.query('SELECT pg_advisory_lock(hashtext($1))', [`clinic-role:${login}`])
    await client.query(`CREATE ROLE ${login} ${limits}${password}`).catch(async (err) => {
      // Made by an earlier run (42710), or by a replica's migration at the same moment (23505).
      if ((err as { code?: string }).code !== '42710' && !isUniqueViolation(err)) throw err
      await client.query(`ALTER ROLE ${login} ${limits}${password}`)
    })
    // Roles are cluster-wide and the lock above per database: another database's migration step
    // may be granting the same membership right now ("tuple concurrently updated"): once more.
    const grant = `GRANT ${assertIdent(memberOf)} TO ${login}`
    await client.query(grant).catch(() => client.query(grant))
  } finally {
    await client.end()
  }
  return login
}

/**
 * Fails unless `role` (the stack's NOLOGIN role, DB_ROLE_PREFIX included) may use `schema`: the
 * migrations granted to another name (DB_ROLE_PREFIX set or changed after the schema was made), so
 * the service would log in and be refused everything. Says so in one line instead.
 */
export async function assertSchemaRole(ownerUrl: string, role: string, schema: string): Promise<void> {
  const client = new pg.Client({ connectionString: ownerUrl, application_name: `${schema}-migrate` })
  await client.connect()
  try {
    const { rows } = await client.query<{ usage: boolean | null }>(
      `SELECT CASE WHEN EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)
              THEN has_schema_privilege($1, $2, 'USAGE') END AS usage`,
      [role, schema],
    )
    if (rows[0]?.usage !== true)
      throw new Error(
        `the role ${role} ${rows[0]?.usage === false ? 'has no grant on' : 'was never made for'} the schema ${schema}: ` +
          'its migrations ran under another DB_ROLE_PREFIX (choose the prefix before the first migration)',
      )
  } finally {
    await client.end()
  }
}
