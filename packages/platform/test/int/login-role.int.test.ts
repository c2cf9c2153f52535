import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { createDb, ensureLoginRole, ensureRole, migrate, type Migration } from '@clinic/platform'
import { databaseUrl, dropSchema, schemaName } from './helpers'

/**
 * Least privilege (DESIGN section 2): a service logs in as a role of its own that the migration step
 * makes; it holds the service's grants and nothing else, so an injection that runs `RESET ROLE` or
 * `SET ROLE postgres` gains nothing, and a service given the owner's URL refuses to serve.
 */
jest.setTimeout(30_000)

const schema = schemaName()
const group = `${schema}_app`
const login = `${schema}_login`
const other = schemaName()
const serviceUrl = (() => {
  const u = new URL(databaseUrl())
  u.username = login
  u.password = `pw-${randomBytes(6).toString('hex')}$$'?`
  return u.toString()
})()

const migrations: Migration[] = [
  {
    name: '0001_things',
    async up(knex) {
      await ensureRole(knex, group)
      await knex.raw(`
        CREATE TABLE things (id serial PRIMARY KEY, name text NOT NULL);
        GRANT USAGE ON SCHEMA ${schema} TO ${group};
        GRANT SELECT, INSERT ON things TO ${group};
        GRANT USAGE ON SEQUENCE things_id_seq TO ${group}`)
    },
  },
]

async function asService<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: serviceUrl })
  await c.connect()
  try {
    await c.query(`SET search_path TO ${schema}`)
    return await fn(c)
  } finally {
    await c.end()
  }
}
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: { code?: string }) => err.code,
  )

beforeAll(async () => {
  await migrate(databaseUrl(), schema, migrations)
  await migrate(databaseUrl(), other, [
    { name: '0001_secret', up: (k) => k.raw('CREATE TABLE secrets (v text)') },
  ])
  await ensureLoginRole(databaseUrl(), serviceUrl, group)
})
afterAll(async () => {
  await dropSchema(schema)
  await dropSchema(other)
  const c = new pg.Client({ connectionString: databaseUrl() })
  await c.connect()
  await c.query(`DROP ROLE IF EXISTS ${login}`)
  await c.query(`DROP ROLE IF EXISTS ${group}`)
  await c.end()
})

test('the login role does its work through its grants, with the password of its URL', async () => {
  const rows = await asService(async (c) => {
    await c.query(`INSERT INTO things (name) VALUES ('a')`)
    return (await c.query('SELECT current_user, session_user FROM things')).rows
  })
  expect(rows).toEqual([{ current_user: login, session_user: login }])
})

test('it is no superuser, bypasses no row-level security and owns nothing', async () => {
  const c = new pg.Client({ connectionString: databaseUrl() })
  await c.connect()
  const { rows } = await c.query(
    `SELECT rolsuper, rolbypassrls, rolcreaterole, rolcreatedb,
            (SELECT count(*) FROM pg_class WHERE relowner = r.oid)::int AS owned
       FROM pg_roles r WHERE rolname = $1`,
    [login],
  )
  await c.end()
  expect(rows).toEqual([
    { rolsuper: false, rolbypassrls: false, rolcreaterole: false, rolcreatedb: false, owned: 0 },
  ])
})

test('RESET ROLE, SET ROLE to the owner, DDL and other schemas gain an injection nothing', async () => {
  const outcome = await asService(async (c) => ({
    reset: await codeOf(c.query('RESET ROLE; SELECT * FROM things')),
    setOwner: await codeOf(c.query('SET ROLE postgres')),
    drop: await codeOf(c.query('DROP TABLE things')),
    update: await codeOf(c.query(`UPDATE things SET name = 'b'`)),
    otherSchema: await codeOf(c.query(`SELECT * FROM ${other}.secrets`)),
    createRole: await codeOf(c.query(`CREATE ROLE x_${schema} SUPERUSER`)),
  }))
  // The role's own grants still hold after RESET ROLE (that is the point: there is nothing above
  // them); everything else is refused: 42501 insufficient privilege.
  expect(outcome).toEqual({
    reset: 'ok',
    setOwner: '42501',
    drop: '42501',
    update: '42501',
    otherSchema: '42501',
    createRole: '42501',
  })
})

test('running it again keeps the role as it is (replicas, every release)', async () => {
  await expect(ensureLoginRole(databaseUrl(), serviceUrl, group)).resolves.toBe(login)
  await expect(asService((c) => c.query('SELECT 1 FROM things'))).resolves.toBeTruthy()
})

test("the owner's URL is refused as a service's own", async () => {
  await expect(ensureLoginRole(databaseUrl(), databaseUrl(), group)).rejects.toThrow(/owner/)
})

test('a service connected as a superuser does not serve', async () => {
  const knex = createDb(databaseUrl(), { schema, refusePrivileged: true, poolMax: 1 })
  await expect(knex.raw('select 1')).rejects.toThrow(/superuser/)
  await knex.destroy()
  const own = createDb(serviceUrl, { schema, refusePrivileged: true, poolMax: 1 })
  await expect(own.raw('select count(*) from things')).resolves.toBeTruthy()
  await own.destroy()
})
