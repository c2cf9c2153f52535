import type { Knex } from 'knex'
import pg from 'pg'
import { stackDbRole } from '../../naming.cjs'
import { assertIdent, createDb, isUniqueViolation } from './connect'

/** What a migration is told about the stack it runs for. */
export interface MigrationContext {
  /**
   * The stack's name of a role the migration creates or grants to (`<DB_ROLE_PREFIX><role>`):
   * roles are cluster-wide, so two stacks on one PostgreSQL never grant to the same one.
   */
  role(name: string): string
}

export interface Migration {
  name: string
  up(knex: Knex, stack: MigrationContext): Promise<void>
  down?(knex: Knex, stack: MigrationContext): Promise<void>
}

/**
 * Runs a service's migrations (a static list, so they work from TypeScript and from dist), naming
 * the roles they grant to after `rolePrefix` (the stack's DB_ROLE_PREFIX; none by default).
 */
export async function migrate(
  url: string,
  schema: string,
  migrations: Migration[],
  { rolePrefix = '' }: { rolePrefix?: string } = {},
): Promise<string[]> {
  const stack: MigrationContext = { role: (name) => assertIdent(stackDbRole(name, rolePrefix)) }
  stackDbRole('', rolePrefix) // a bad prefix fails here, before any migration runs
  const knex = createDb(url, { schema, poolMax: 2 })
  const latest = () =>
    knex.migrate.latest({
      schemaName: schema,
      tableName: 'knex_migrations',
      migrationSource: {
        getMigrations: async () => migrations,
        getMigrationName: (m: Migration) => m.name,
        getMigration: async (m: Migration) => ({
          up: (k: Knex) => m.up(k, stack),
          down: (k: Knex) => (m.down ? m.down(k, stack) : Promise.resolve()),
        }),
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
