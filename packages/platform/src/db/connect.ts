import knexFactory, { type Knex } from 'knex'
import pg from 'pg'
import type { Logger } from 'pino'

// Counts come back as strings by default (int8); 53 bits are plenty for row counts.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v))
// `date` columns stay 'YYYY-MM-DD' strings: no time zone shifts.
pg.types.setTypeParser(pg.types.builtins.DATE, (v: string) => v)

export interface DbOptions {
  /** The service's own schema; it is first on the search_path. */
  schema: string
  /** A role to SET on every connection (least privilege at run time; migrations run as the owner). */
  role?: string
  poolMax?: number
  applicationName?: string
  /** Where knex reports its warnings (else they would go to the console). */
  log?: Logger
  /**
   * Refuse connections made as a superuser or a role that bypasses row-level security: a service
   * at run time connects as its own login role (`ensureLoginRole`), never as the owner.
   */
  refusePrivileged?: boolean
}

// Raised by PostgreSQL on every new connection of a privileged login, so a service configured with
// the owner's URL never serves (readiness stays 503 and the log says why).
const REFUSE_PRIVILEGED = `DO $$ BEGIN
  IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = session_user AND (rolsuper OR rolbypassrls)) THEN
    RAISE EXCEPTION 'DATABASE_URL logs in as %, a superuser: services connect as their own login role (the owner''s URL is MIGRATION_DATABASE_URL, for migrations only)', session_user;
  END IF; END $$`

const ident = /^[a-z_][a-z0-9_]*$/
export function assertIdent(name: string) {
  if (!ident.test(name)) throw new Error(`not a safe SQL identifier: ${name}`)
  return name
}

/** A knex instance for one service's schema. Each service makes its own; none is shared. */
export function createDb(url: string, opts: DbOptions): Knex {
  const schema = assertIdent(opts.schema)
  const setup = [`SET search_path TO ${schema}, public`, "SET TIME ZONE 'UTC'"]
  if (opts.role) setup.push(`SET ROLE ${assertIdent(opts.role)}`)
  if (opts.refusePrivileged) setup.unshift(REFUSE_PRIVILEGED)
  return knexFactory({
    client: 'pg',
    connection: { connectionString: url, application_name: opts.applicationName ?? schema },
    pool: {
      min: 0,
      max: opts.poolMax ?? 10,
      afterCreate: (conn: pg.Client, done: (err: Error | null, conn: pg.Client) => void) => {
        conn.query(setup.join('; '), (err: Error | null) => done(err, conn))
      },
    },
    acquireConnectionTimeout: 10_000,
    log: {
      warn: (m: unknown) => opts.log?.warn({ knex: String(m) }, 'knex warning'),
      error: (m: unknown) => opts.log?.error({ knex: String(m) }, 'knex error'),
      deprecate: (m: unknown) => opts.log?.warn({ knex: String(m) }, 'knex deprecation'),
      debug: () => undefined,
    },
  })
}

export const isUniqueViolation = (err: unknown, constraint?: string): boolean =>
  (err as { code?: string }).code === '23505' &&
  (constraint === undefined || (err as { constraint?: string }).constraint === constraint)

/** A timestamptz as the API shows it, RFC 3339 in UTC (node-pg reads it as a Date); anything else as it is. */
export const isoInstant = <T>(v: T | Date): T | string => (v instanceof Date ? v.toISOString() : v)
