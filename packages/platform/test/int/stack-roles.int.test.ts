import { randomBytes } from 'node:crypto'
import pg from 'pg'
import { ensureLoginRole, ensureRole, migrate, stackDbRole, type Migration } from '@clinic/platform'
import {
  createTestDatabase,
  dropTestDatabase,
  newDbRolePrefix,
  removeDbRoles,
} from '@clinic/platform/testing'
import { databaseUrl } from './helpers'

/**
 * Roles, and who is a member of whom, are cluster-wide; privileges are per database. Two stacks on
 * one PostgreSQL (a test run beside `npm start`, staging beside production) each in a database of
 * their own must still share no role: the login roles and the NOLOGIN roles the migrations grant
 * to carry the stack's DB_ROLE_PREFIX, and a stack's teardown drops its own roles and no other's.
 */
jest.setTimeout(60_000)

// A name of this file's own, so that the unprefixed case below touches no real service's role.
const APP_ROLE = `clinic_things_${randomBytes(3).toString('hex')}_app`
const LOGIN_ROLE = APP_ROLE.replace(/_app$/, '')
const SCHEMA = 'things'

/** What a service's migrations do: make the stack's role, a table, grant it to the role. */
const migrations: Migration[] = [
  {
    name: '0001_things',
    async up(knex, stack) {
      const appRole = stack.role(APP_ROLE)
      await ensureRole(knex, appRole)
      await knex.raw(`
        CREATE TABLE things (id serial PRIMARY KEY, name text NOT NULL);
        GRANT USAGE ON SCHEMA ${SCHEMA} TO ${appRole};
        GRANT SELECT, INSERT ON things TO ${appRole};
        GRANT USAGE ON SEQUENCE things_id_seq TO ${appRole}`)
    },
  },
]

interface Stack {
  prefix: string
  /** The owner's URL of the stack's own database. */
  ownerUrl: string
  /** Its service's URL: `<prefix><login role>` on that database. */
  serviceUrl: string
}

const withUser = (url: string, user: string) => {
  const u = new URL(url)
  u.username = user
  return u.toString()
}
const onDatabase = (url: string, of: string) => {
  const u = new URL(url)
  u.pathname = new URL(of).pathname
  return u.toString()
}

/** A stack's migration step: migrate as the owner with its prefix, then make its login role. */
async function startStack(prefix: string): Promise<Stack> {
  const ownerUrl = await createTestDatabase(databaseUrl())
  const serviceUrl = withUser(ownerUrl, stackDbRole(LOGIN_ROLE, prefix))
  await migrate(ownerUrl, SCHEMA, migrations, { rolePrefix: prefix })
  await ensureLoginRole(ownerUrl, serviceUrl, stackDbRole(APP_ROLE, prefix))
  return { prefix, ownerUrl, serviceUrl }
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []) {
  const c = new pg.Client({ connectionString: url })
  await c.connect()
  try {
    return (await c.query<T>(sql, params)).rows
  } finally {
    await c.end()
  }
}
const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: { code?: string }) => err.code,
  )
/** The service of one stack writes and reads its things (in whichever database `url` names). */
const useThings = (url: string) =>
  outcome(query(url, `INSERT INTO ${SCHEMA}.things (name) VALUES ('x') RETURNING id`))

const rolesOf = async (prefix: string) =>
  (
    await query<{ rolname: string }>(
      databaseUrl(),
      'SELECT rolname FROM pg_roles WHERE starts_with(rolname, $1) ORDER BY 1',
      [prefix],
    )
  ).map((r) => r.rolname)

let a: Stack
let b: Stack
const leftovers: string[] = []
beforeAll(async () => {
  a = await startStack(newDbRolePrefix())
  b = await startStack(newDbRolePrefix())
})
afterAll(async () => {
  for (const url of leftovers) await dropTestDatabase(url).catch(() => undefined)
  for (const s of [a, b]) {
    if (!s) continue
    await dropTestDatabase(s.ownerUrl).catch(() => undefined)
    await removeDbRoles(databaseUrl(), s.prefix)
  }
})

test('two stacks on one cluster share no role: login or NOLOGIN', async () => {
  const mine = await rolesOf(a.prefix)
  const theirs = await rolesOf(b.prefix)
  expect(mine).toEqual([stackDbRole(LOGIN_ROLE, a.prefix), stackDbRole(APP_ROLE, a.prefix)].sort())
  expect(theirs).toEqual([stackDbRole(LOGIN_ROLE, b.prefix), stackDbRole(APP_ROLE, b.prefix)].sort())
  // Each login role is a member of its own stack's role only.
  const members = await query<{ login: string; member_of: string }>(
    databaseUrl(),
    `SELECT m.rolname AS login, g.rolname AS member_of
       FROM pg_auth_members x JOIN pg_roles m ON m.oid = x.member JOIN pg_roles g ON g.oid = x.roleid
      WHERE m.rolname = ANY($1) ORDER BY 1`,
    [[stackDbRole(LOGIN_ROLE, a.prefix), stackDbRole(LOGIN_ROLE, b.prefix)]],
  )
  expect(members).toEqual(
    [a, b]
      .map((s) => ({ login: stackDbRole(LOGIN_ROLE, s.prefix), member_of: stackDbRole(APP_ROLE, s.prefix) }))
      .sort((x, y) => (x.login < y.login ? -1 : 1)),
  )
  // Each works in its own database and gets nothing in the other's (CONNECT is PUBLIC's there).
  expect(await useThings(a.serviceUrl)).toBe('ok')
  expect(await useThings(b.serviceUrl)).toBe('ok')
  expect(await useThings(onDatabase(a.serviceUrl, b.ownerUrl))).toBe('42501')
  expect(await useThings(onDatabase(b.serviceUrl, a.ownerUrl))).toBe('42501')
})

test("why the NOLOGIN roles carry the prefix too: one granted by two stacks lets each reach the other's database", async () => {
  // Login roles of their own, the group role shared (prefixed logins, unprefixed migrations).
  const shared = stackDbRole(APP_ROLE)
  const [x, y] = [newDbRolePrefix(), newDbRolePrefix()]
  const stacks = []
  for (const prefix of [x, y]) {
    const ownerUrl = await createTestDatabase(databaseUrl())
    leftovers.push(ownerUrl)
    const serviceUrl = withUser(ownerUrl, stackDbRole(LOGIN_ROLE, prefix))
    await migrate(ownerUrl, SCHEMA, migrations)
    await ensureLoginRole(ownerUrl, serviceUrl, shared)
    stacks.push({ ownerUrl, serviceUrl })
  }
  try {
    // x's login reaches y's table: the membership is cluster-wide, the grant is y's.
    expect(await useThings(onDatabase(stacks[0]!.serviceUrl, stacks[1]!.ownerUrl))).toBe('ok')
  } finally {
    for (const s of stacks) await dropTestDatabase(s.ownerUrl)
    for (const prefix of [x, y]) await removeDbRoles(databaseUrl(), prefix)
    await query(databaseUrl(), `DROP ROLE IF EXISTS ${shared}`)
  }
})

test("tearing one stack down drops its roles, even with grants in a database still there, and leaves the other's working", async () => {
  // b's roles hold privileges in a database that stays (another of its databases, kept for a look
  // afterwards): DROP ROLE alone would fail with "some objects depend on it".
  const kept = await createTestDatabase(databaseUrl())
  leftovers.push(kept)
  await migrate(kept, SCHEMA, migrations, { rolePrefix: b.prefix })
  await query(kept, `ALTER TABLE ${SCHEMA}.things OWNER TO ${stackDbRole(APP_ROLE, b.prefix)}`)

  await dropTestDatabase(b.ownerUrl)
  const dropped = await removeDbRoles(databaseUrl(), b.prefix)

  expect(dropped).toEqual([stackDbRole(LOGIN_ROLE, b.prefix), stackDbRole(APP_ROLE, b.prefix)].sort())
  expect(await rolesOf(b.prefix)).toEqual([])
  // The kept database is still there, its table now the caller's, no grant to a dropped role.
  const [table] = await query<{ me: string; mine: boolean; grantees: string[] }>(
    kept,
    `SELECT current_user AS me, relowner = (SELECT oid FROM pg_roles WHERE rolname = current_user) AS mine,
            array(SELECT DISTINCT (aclexplode(relacl)).grantee::regrole::text) AS grantees
       FROM pg_class WHERE oid = '${SCHEMA}.things'::regclass`,
  )
  // No grant left to anyone but the owner (a dropped role's would show as its bare oid).
  expect(table).toEqual({ me: table!.me, mine: true, grantees: [table!.me] })
  // a's roles are all there and its service still works, in its database only.
  expect(await rolesOf(a.prefix)).toEqual(
    [stackDbRole(LOGIN_ROLE, a.prefix), stackDbRole(APP_ROLE, a.prefix)].sort(),
  )
  expect(await useThings(a.serviceUrl)).toBe('ok')
  expect(await query(a.serviceUrl, `SELECT count(*)::int AS n FROM ${SCHEMA}.things`)).toEqual([{ n: 2 }])
  // Nothing left to remove: a second teardown is no error.
  await expect(removeDbRoles(databaseUrl(), b.prefix)).resolves.toEqual([])
})

test('a stack without a prefix (npm start) names its roles as deploy does, and removes none', async () => {
  expect(stackDbRole(APP_ROLE)).toBe(APP_ROLE)
  await expect(removeDbRoles(databaseUrl(), '')).rejects.toThrow(/only a prefixed stack/)
  expect(() => stackDbRole(APP_ROLE, 'Bad-')).toThrow(/DB_ROLE_PREFIX/)
  await expect(migrate(a.ownerUrl, SCHEMA, migrations, { rolePrefix: 'x' })).rejects.toThrow(/DB_ROLE_PREFIX/)
})
