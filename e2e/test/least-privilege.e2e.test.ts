import { apps, namesOf, resources, stackDbRole } from '@clinic/platform/naming'
import { call, makeTenant, sql, stack } from '../src/client'

/**
 * DESIGN section 2: every service talks to PostgreSQL as its own login role, which owns nothing and
 * is no superuser; only the migration step used the owner's URL (the stack's DATABASE_URL). The
 * services, their schemas (each connection's application_name) and login roles come from
 * packages/platform/services.json through naming.cjs.
 */
test('each running service is connected as its own unprivileged login role', async () => {
  // Traffic through every service, so each has connections open.
  const t = await makeTenant(['ALM1'])
  for (const s of resources) expect((await call('GET', s.list_path, { token: t.token })).status).toBe(200)
  const names = apps.map((s) => namesOf(s))
  const byName = (a: { application_name: string }, b: { application_name: string }) =>
    a.application_name < b.application_name ? -1 : a.application_name > b.application_name ? 1 : 0
  const rows = await sql<{ application_name: string; usename: string; rolsuper: boolean; owned: number }>(
    `SELECT DISTINCT a.application_name, a.usename::text, r.rolsuper,
            (SELECT count(*) FROM pg_class c WHERE c.relowner = r.oid)::int AS owned
       FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename
      WHERE a.datname = current_database()
        AND a.application_name = ANY($1::text[])`,
    [names.map((n) => n.schema)],
  )
  expect(rows.sort(byName)).toEqual(
    names
      .map((n) => ({
        application_name: n.schema,
        // The stack's own (DB_ROLE_PREFIX): no other stack on this PostgreSQL shares it.
        usename: stackDbRole(n.loginRole, stack().env.DB_ROLE_PREFIX),
        rolsuper: false,
        owned: 0,
      }))
      .sort(byName),
  )
  // One role per service: no two share one.
  expect(new Set(rows.map((r) => r.usename)).size).toBe(apps.length)
  expect(stack().env.DATABASE_URL).toMatch(/^postgres/)
})

test("each login role's privileges come from one NOLOGIN role of this stack's own", async () => {
  const prefix = stack().env.DB_ROLE_PREFIX!
  expect(prefix).toMatch(/^t[0-9a-f]{8}_$/)
  const logins = apps.map((s) => stackDbRole(namesOf(s).loginRole, prefix))
  const rows = await sql<{ login: string; member_of: string; can_login: boolean }>(
    `SELECT m.rolname::text AS login, g.rolname::text AS member_of, g.rolcanlogin AS can_login
       FROM pg_auth_members a
       JOIN pg_roles m ON m.oid = a.member
       JOIN pg_roles g ON g.oid = a.roleid
      WHERE m.rolname = ANY($1::text[])`,
    [logins],
  )
  // Membership is cluster-wide: a role another stack granted to would carry that stack's grants
  // in its database too. Each is `<prefix>...`, NOLOGIN, and no two services share one.
  expect(rows.map((r) => r.login).sort()).toEqual([...logins].sort())
  for (const r of rows) expect([r.member_of.startsWith(prefix), r.can_login]).toEqual([true, false])
  expect(new Set(rows.map((r) => r.member_of)).size).toBe(apps.length)
})
