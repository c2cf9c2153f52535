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
function assertIdent(name: string) {
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

export interface Migration {
  name: string
  up(knex: Knex): Promise<void>
  down?(knex: Knex): Promise<void>
}

/** Runs a service's migrations (a static list, so they work from TypeScript and from dist). */
export async function migrate(url: string, schema: string, migrations: Migration[]): Promise<string[]> {
  const knex = createDb(url, { schema, poolMax: 2 })
  const latest = () =>
    knex.migrate.latest({
      schemaName: schema,
      tableName: 'knex_migrations',
      migrationSource: {
        getMigrations: async () => migrations,
        getMigrationName: (m: Migration) => m.name,
        getMigration: async (m: Migration) => ({ up: m.up, down: m.down ?? (async () => undefined) }),
      },
    }) as Promise<[number, string[]]>
  // knex creates its own tables check-then-create: two first runs at once collide there, or leave two
  // rows in knex_migrations_lock, after which every run reports MigrationLocked. One run per schema.
  const lock = new pg.Client({ connectionString: url, application_name: `${schema}-migrate` })
  lock.on('error', () => undefined) // a lost lock connection fails the queries below instead
  try {
    await lock.connect()
    await lock.query('SELECT pg_advisory_lock(hashtext($1))', [`clinic-migrate:${schema}`])
    await knex.raw(`CREATE SCHEMA IF NOT EXISTS ${assertIdent(schema)}`).catch((err) => {
      if (!isUniqueViolation(err)) throw err // two replicas creating it at once
    })
    // Replicas (and parallel test files) may start together: wait for the one holding the lock.
    for (let attempt = 0; ; attempt++) {
      try {
        const [, applied] = await latest()
        return applied
      } catch (err) {
        if (!(err instanceof Error && err.name === 'MigrationLocked') || attempt > 300) throw err
        await new Promise((r) => setTimeout(r, 100))
      }
    }
  } finally {
    await lock.end().catch(() => undefined) // releases the advisory lock
    await knex.destroy()
  }
}

/** Creates the database named in the URL if it does not exist yet. */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url)
  const name = decodeURIComponent(target.pathname.slice(1))
  const admin = new URL(url)
  admin.pathname = '/postgres'
  const client = new pg.Client({ connectionString: admin.toString() })
  await client.connect()
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])
    if (!rowCount) {
      try {
        await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`)
      } catch (err) {
        // Created meanwhile: 42P04, or 23505 on pg_database when the two creates overlap.
        if ((err as { code?: string }).code !== '42P04' && !isUniqueViolation(err)) throw err
      }
    }
  } finally {
    await client.end()
  }
}

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
 * A transaction in which row-level security sees one company: `app.idempresa` (what the services'
 * policies compare with `idempresa`) is set transaction-local, so it never outlives the
 * transaction on a pooled connection. Repositories run every statement inside one.
 */
export function companyTransaction<T>(
  knex: Knex,
  companyId: number,
  fn: (trx: Knex.Transaction) => Promise<T>,
  config?: Knex.TransactionConfig,
): Promise<T> {
  return knex.transaction(async (trx) => {
    await setCompany(trx, companyId)
    return fn(trx)
  }, config)
}

/**
 * The setting first, then the part. A statement that sets `app.idempresa` and reads under row-level
 * security must not let PostgreSQL run any of the read before the setting: the row of the setting
 * (`c`) is computed on its own (OFFSET 0 keeps it from being folded into the read), and each part
 * refers to it inside itself and is fenced too (OFFSET 0), so it runs laterally, after it. Without
 * the fences the planner lifted the policy's test (`idempresa = current_setting(...)`, which it
 * derives as a constant condition when the query filters `idempresa = ?`) above the whole
 * statement, or ran an aggregate first: the read saw no rows (it fails closed, never open).
 */
const SETTING = `(SELECT set_config('app.idempresa', ?, true) AS tenant OFFSET 0) c`
// Always true (set_config returns the value): it only makes the part depend on the setting's row.
const afterSetting = (part: Knex.QueryBuilder) => part.clone().whereRaw('c.tenant IS NOT NULL')

/**
 * One read under the company's row-level security in one round trip: `set_config` and the query
 * in a single statement, which is its own transaction, so the setting ends with it (no BEGIN,
 * no COMMIT).
 */
export async function companyRead<T>(knex: Knex, companyId: number, query: Knex.QueryBuilder): Promise<T[]> {
  const { rows } = await knex.raw<{ rows: T[] }>(
    `SELECT q.* FROM ${SETTING} CROSS JOIN LATERAL (SELECT * FROM ? s OFFSET 0) q`,
    [String(companyId), afterSetting(query)],
  )
  return rows
}

/** Row `id` of the company in `table` (those columns) in one round trip (companyRead), or null. */
export async function companyRowById<T>(
  knex: Knex,
  companyId: number,
  table: string,
  id: string,
  columns: readonly string[],
): Promise<T | null> {
  const [row] = await companyRead<T>(
    knex,
    companyId,
    knex(table)
      .where({ idempresa: companyId, id })
      .select([...columns])
      .limit(1),
  )
  return row ?? null
}

/**
 * A list's statement: one page and its exact total under the company's row-level security, in one
 * statement (one snapshot, one round trip, its own transaction), as companyRead. `total` is a
 * query of one row with a column `n`; `orderBy` restates the page's order for the outer query (SQL
 * keeps no order through a join otherwise), over the page's columns as `p.<column>`. The total
 * comes back even when the page is empty, on a row of nulls.
 */
export function companyPageStatement(
  knex: Knex,
  companyId: number,
  q: { page: Knex.QueryBuilder; total: Knex.QueryBuilder; orderBy: string },
): Knex.Raw {
  return knex.raw(
    `SELECT t.n AS page_total, p.* FROM ${SETTING}
       CROSS JOIN LATERAL (SELECT * FROM ? s OFFSET 0) t
       LEFT JOIN LATERAL (SELECT * FROM ? s OFFSET 0) p ON true
     ORDER BY ${q.orderBy}`,
    [String(companyId), afterSetting(q.total), afterSetting(q.page)],
  )
}

/** Runs companyPageStatement: the page's rows (`id` not null) and the total. */
export async function companyPage<T extends { id: unknown }>(
  knex: Knex,
  companyId: number,
  q: { page: Knex.QueryBuilder; total: Knex.QueryBuilder; orderBy: string },
): Promise<{ rows: T[]; total: number }> {
  const { rows } = await companyPageStatement(knex, companyId, q)
  const list = rows as Array<T & { page_total: unknown }>
  return {
    rows: list.filter((r) => r.id !== null),
    total: Number(list[0]?.page_total ?? 0),
  }
}

/** Sets `app.idempresa` for the rest of this transaction: what the row-level security policies check. */
export const setCompany = (trx: Knex.Transaction, companyId: number) =>
  trx.raw(`select set_config('app.idempresa', ?, true)`, [String(companyId)])

export const isUniqueViolation = (err: unknown, constraint?: string): boolean =>
  (err as { code?: string }).code === '23505' &&
  (constraint === undefined || (err as { constraint?: string }).constraint === constraint)

/**
 * Tables every service with events or POSTs needs. Migrations call these; the tables stay in the
 * service's own schema.
 */
export const commonTables = {
  /** Events written in the same transaction as the change; the relay publishes them. */
  async outbox(knex: Knex, schema: string) {
    const s = assertIdent(schema)
    await knex.raw(`
      CREATE TABLE outbox (
        id bigserial PRIMARY KEY,
        event_id uuid NOT NULL UNIQUE,
        idempresa integer NOT NULL,
        type text NOT NULL,
        payload jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        published_at timestamptz
      );
      CREATE INDEX outbox_pending ON outbox (id) WHERE published_at IS NULL;
      CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_notify('outbox_${s}', ''); RETURN NULL; END $$;
      CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
        FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
    `)
  },
  /** Ids of consumed events, written in the same transaction as their effect. */
  async processedEvents(knex: Knex) {
    await knex.raw(`
      CREATE TABLE processed_events (
        event_id uuid PRIMARY KEY,
        processed_at timestamptz NOT NULL DEFAULT now()
      )`)
  },
  /** Stored first responses of POSTs sent with an Idempotency-Key, per company and token. */
  async idempotencyKeys(knex: Knex) {
    await knex.raw(`
      CREATE TABLE idempotency_keys (
        idempresa integer NOT NULL,
        token_id text NOT NULL,
        key text NOT NULL,
        request_hash text NOT NULL,
        status integer,
        body jsonb,
        location text,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (idempresa, token_id, key)
      );
      CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)`)
  },
  /**
   * Upgrades an `idempotency_keys` table made when keys were per company (issue 12) to keys per
   * token; on a table made by `idempotencyKeys` today it changes nothing. Rows stored before name no
   * token and are dropped: a retry across the deploy creates again rather than replaying another
   * token's answer. A service whose first migration has landed calls this in a new one.
   */
  async idempotencyKeysPerToken(knex: Knex) {
    await knex.raw(`
      ALTER TABLE idempotency_keys ADD COLUMN IF NOT EXISTS token_id text;
      DELETE FROM idempotency_keys WHERE token_id IS NULL;
      ALTER TABLE idempotency_keys ALTER COLUMN token_id SET NOT NULL;
      ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
      ALTER TABLE idempotency_keys ADD PRIMARY KEY (idempresa, token_id, key)`)
  },
}
