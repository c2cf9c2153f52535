import { apps, namesOf, resources } from '@clinic/platform/naming'
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
      .map((n) => ({ application_name: n.schema, usename: n.loginRole, rolsuper: false, owned: 0 }))
      .sort(byName),
  )
  // One role per service: no two share one.
  expect(new Set(rows.map((r) => r.usename)).size).toBe(apps.length)
  expect(stack().env.DATABASE_URL).toMatch(/^postgres/)
})
