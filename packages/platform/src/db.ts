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
}

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
  /** Stored first responses of POSTs sent with an Idempotency-Key. */
  async idempotencyKeys(knex: Knex) {
    await knex.raw(`
      CREATE TABLE idempotency_keys (
        idempresa integer NOT NULL,
        key text NOT NULL,
        request_hash text NOT NULL,
        status integer,
        body jsonb,
        location text,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (idempresa, key)
      );
      CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)`)
  },
}
