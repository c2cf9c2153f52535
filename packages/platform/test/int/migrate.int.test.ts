import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { ensureDatabase, migrate, type Migration } from '@clinic/platform'
import { dropTestDatabase } from '@clinic/platform/testing'
import { databaseUrl, dropSchema, schemaName, testMigrations } from './helpers'

jest.setTimeout(30_000)

const schemas: string[] = []
const databases: string[] = []

afterAll(async () => {
  for (const s of schemas) await dropSchema(s)
  for (const url of databases) await dropTestDatabase(url)
})

async function query<T extends pg.QueryResultRow>(sql: string, params: unknown[] = [], url = databaseUrl()) {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    return (await client.query<T>(sql, params)).rows
  } finally {
    await client.end()
  }
}

const tablesOf = async (schema: string) =>
  (
    await query<{ table_name: string }>(
      'SELECT table_name FROM information_schema.tables WHERE table_schema = $1 ORDER BY table_name',
      [schema],
    )
  ).map((r) => r.table_name)

/** Migrations that fail if run twice (CREATE TABLE without IF NOT EXISTS) and count their runs. */
function countedMigrations(schema: string) {
  const runs: string[] = []
  const list: Migration[] = testMigrations(schema).map((m) => ({
    name: m.name,
    async up(knex, stack) {
      runs.push(m.name)
      await m.up(knex, stack)
    },
  }))
  return { runs, list }
}

describe('migrate', () => {
  it('creates the schema and applies each migration once; a second run applies nothing', async () => {
    const schema = schemaName()
    schemas.push(schema)
    const { runs, list } = countedMigrations(schema)
    expect(await migrate(databaseUrl(), schema, list)).toEqual(['0001_base', '0002_effects'])
    expect(await tablesOf(schema)).toEqual(
      expect.arrayContaining([
        'effects',
        'idempotency_keys',
        'knex_migrations',
        'knex_migrations_lock',
        'outbox',
        'processed_events',
        'things',
      ]),
    )
    expect(await migrate(databaseUrl(), schema, list)).toEqual([])
    expect(runs).toEqual(['0001_base', '0002_effects'])
    // A later migration is applied on its own.
    const more: Migration = { name: '0003_more', up: (knex) => knex.raw('CREATE TABLE more_things (id int)') }
    expect(await migrate(databaseUrl(), schema, [...list, more])).toEqual(['0003_more'])
    expect(await tablesOf(schema)).toContain('more_things')
  })

  it('lets concurrent runs on a fresh schema all succeed, applying each migration once', async () => {
    // The race is on knex's own tables, created check-then-create: a few rounds make it likely.
    for (let round = 0; round < 4; round++) {
      const schema = schemaName()
      schemas.push(schema)
      const { runs, list } = countedMigrations(schema)
      const results = await Promise.all([
        migrate(databaseUrl(), schema, list),
        migrate(databaseUrl(), schema, list),
        migrate(databaseUrl(), schema, list),
      ])
      expect(runs.sort()).toEqual(['0001_base', '0002_effects'])
      expect(results.flat().sort()).toEqual(['0001_base', '0002_effects'])
      const applied = await query<{ name: string }>(`SELECT name FROM ${schema}.knex_migrations ORDER BY id`)
      expect(applied.map((r) => r.name)).toEqual(['0001_base', '0002_effects'])
    }
  })

  it('rolls back a failing migration and reports it', async () => {
    const schema = schemaName()
    schemas.push(schema)
    const bad: Migration[] = [
      { name: '0001_ok', up: (knex) => knex.raw('CREATE TABLE ok_table (id int)') },
      { name: '0002_bad', up: (knex) => knex.raw('CREATE TABLE ok_table (id int)') },
    ]
    await expect(migrate(databaseUrl(), schema, bad)).rejects.toThrow(/already exists/)
    // One transaction for the batch: nothing of it stays, and the lock is free for the next run.
    expect(await tablesOf(schema)).not.toContain('ok_table')
    expect(await migrate(databaseUrl(), schema, bad.slice(0, 1))).toEqual(['0001_ok'])
  })
})

describe('ensureDatabase', () => {
  const exists = async (name: string) =>
    (await query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).length === 1
  const urlFor = (name: string) => {
    const u = new URL(databaseUrl())
    u.pathname = `/${name}`
    return u.toString()
  }

  it('creates a missing database, and does nothing when it exists', async () => {
    const name = `clinic_test_ensure_${randomBytes(4).toString('hex')}`
    const url = urlFor(name)
    databases.push(url)
    expect(await exists(name)).toBe(false)
    await ensureDatabase(url)
    expect(await exists(name)).toBe(true)
    await query('CREATE TABLE kept (id int)', [], url)
    await ensureDatabase(url)
    expect(await query('SELECT count(*) FROM kept', [], url)).toEqual([{ count: 0 }])
  })

  it('copes with concurrent callers creating the same database', async () => {
    const name = `clinic_test_ensure_${randomBytes(4).toString('hex')}`
    const url = urlFor(name)
    databases.push(url)
    await Promise.all([ensureDatabase(url), ensureDatabase(url), ensureDatabase(url)])
    expect(await exists(name)).toBe(true)
  })
})
