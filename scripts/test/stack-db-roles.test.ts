import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import path from 'node:path'
import { promisify } from 'node:util'
import { createDb } from '@clinic/platform'
import {
  createTestDatabase,
  dropTestDatabase,
  newDbRolePrefix,
  removeDbRoles,
} from '@clinic/platform/testing'
import { apps, namesOf, stackDbRole } from '../../packages/platform/naming.cjs'
import { serviceEnv } from '../service-env.cjs'

/**
 * Two stacks on one PostgreSQL, as the e2e stacks, the faults harness and the benches run them side
 * by side: every service's migration step from the build (`services/<name>/dist/db/migrate.js`)
 * with the environment service-env.cjs gives it, each stack in a database and under a
 * DB_ROLE_PREFIX of its own. Roles are cluster-wide: the stacks must share none, neither a login
 * role nor a NOLOGIN role the migrations grant to, and tearing one down (its database, then its
 * roles) must leave the other's working.
 */
jest.setTimeout(240_000)

const exec = promisify(execFile)
const ROOT = path.resolve(__dirname, '../..')
const base = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'

interface Stack {
  prefix: string
  ownerUrl: string
}

/** `npm run migrate` for one stack: each service's step, owner's URL in, its own login made. */
async function migrateStack(prefix: string): Promise<Stack> {
  const ownerUrl = await createTestDatabase(base)
  for (const { name } of apps) {
    const script = path.join(ROOT, 'services', name, 'dist', 'db', 'migrate.js')
    if (!existsSync(script)) throw new Error(`${script} is missing: build first (tsc -b)`)
    await exec(process.execPath, [script], {
      env: { ...process.env, ...serviceEnv(name, { DATABASE_URL: ownerUrl, DB_ROLE_PREFIX: prefix }) },
    })
  }
  return { prefix, ownerUrl }
}

async function rows<T>(url: string, sql: string, bindings: unknown[] = []): Promise<T[]> {
  const knex = createDb(url, { schema: 'public', poolMax: 1 })
  try {
    return (await knex.raw(sql, bindings as never[])).rows as T[]
  } finally {
    await knex.destroy()
  }
}

/** Each login role of `prefix`: the roles it is a member of, whether it may log in. */
const loginsOf = (prefix: string) =>
  rows<{ login: string; can_login: boolean; member_of: string[]; member_of_can_login: boolean[] }>(
    base,
    `SELECT m.rolname AS login, m.rolcanlogin AS can_login,
            array_agg(g.rolname::text ORDER BY g.rolname) AS member_of,
            array_agg(g.rolcanlogin ORDER BY g.rolname) AS member_of_can_login
       FROM pg_roles m JOIN pg_auth_members a ON a.member = m.oid JOIN pg_roles g ON g.oid = a.roleid
      WHERE m.rolname = ANY(?) GROUP BY 1, 2 ORDER BY 1`,
    [apps.map((s) => stackDbRole(namesOf(s).loginRole, prefix))],
  )
const rolesOf = async (prefix: string) =>
  (
    await rows<{ rolname: string }>(base, 'SELECT rolname FROM pg_roles WHERE starts_with(rolname, ?)', [
      prefix,
    ])
  ).map((r) => r.rolname)

/** In the database of `url`: may each login role of `prefix` use its service's schema? */
const schemaUse = async (url: string, prefix: string) =>
  Object.fromEntries(
    (
      await rows<{ service: string; usage: boolean }>(
        url,
        `SELECT s.service, has_schema_privilege(s.login, s.schema, 'USAGE') AS usage
           FROM unnest(?::text[], ?::text[], ?::text[]) AS s(service, login, schema) ORDER BY 1`,
        [
          apps.map((s) => s.name),
          apps.map((s) => stackDbRole(namesOf(s).loginRole, prefix)),
          apps.map((s) => namesOf(s).schema),
        ],
      )
    ).map((r) => [r.service, r.usage]),
  )
const everyService = (value: boolean) => Object.fromEntries(apps.map((s) => [s.name, value]))

let a: Stack
let b: Stack | undefined
beforeAll(async () => {
  ;[a, b] = await Promise.all([migrateStack(newDbRolePrefix()), migrateStack(newDbRolePrefix())])
})
afterAll(async () => {
  for (const s of [a, b]) {
    if (!s) continue
    await dropTestDatabase(s.ownerUrl).catch(() => undefined)
    await removeDbRoles(base, s.prefix)
  }
})

test("every service of each stack logs in as the stack's own role, a member of one NOLOGIN role of the stack's own", async () => {
  for (const s of [a, b!]) {
    const logins = await loginsOf(s.prefix)
    expect(logins.map((l) => l.login)).toEqual(
      apps.map((app) => stackDbRole(namesOf(app).loginRole, s.prefix)).sort(),
    )
    for (const l of logins) {
      expect([l.login, l.can_login, l.member_of.length, l.member_of_can_login]).toEqual([
        l.login,
        true,
        1,
        [false],
      ])
      expect(l.member_of[0]!.startsWith(s.prefix)).toBe(true)
    }
    // A login and a NOLOGIN role per service, all under the stack's prefix.
    expect((await rolesOf(s.prefix)).length).toBe(2 * apps.length)
  }
  const [mine, theirs] = [await rolesOf(a.prefix), await rolesOf(b!.prefix)]
  expect(mine.filter((r) => theirs.includes(r))).toEqual([])
})

test("each stack's services reach their schema in its database only", async () => {
  expect(await schemaUse(a.ownerUrl, a.prefix)).toEqual(everyService(true))
  expect(await schemaUse(b!.ownerUrl, b!.prefix)).toEqual(everyService(true))
  expect(await schemaUse(a.ownerUrl, b!.prefix)).toEqual(everyService(false))
  expect(await schemaUse(b!.ownerUrl, a.prefix)).toEqual(everyService(false))
})

test("tearing one stack down removes its roles and leaves the other's working", async () => {
  const gone = b!
  await dropTestDatabase(gone.ownerUrl)
  const dropped = await removeDbRoles(base, gone.prefix)
  b = undefined
  expect(dropped.length).toBe(2 * apps.length)
  expect(await rolesOf(gone.prefix)).toEqual([])

  expect((await rolesOf(a.prefix)).length).toBe(2 * apps.length)
  expect(await schemaUse(a.ownerUrl, a.prefix)).toEqual(everyService(true))
  // The patients service as it runs: its login, SET ROLE to its stack's role, a query.
  const patients = createDb(
    serviceEnv('patients', { DATABASE_URL: a.ownerUrl, DB_ROLE_PREFIX: a.prefix }).DATABASE_URL!,
    {
      schema: 'patients',
      role: stackDbRole('clinic_patients_app', a.prefix),
      poolMax: 1,
      refusePrivileged: true,
    },
  )
  try {
    expect((await patients.raw('SELECT current_user, count(*)::int AS n FROM patients')).rows).toEqual([
      { current_user: stackDbRole('clinic_patients_app', a.prefix), n: 0 },
    ])
  } finally {
    await patients.destroy()
  }
})
