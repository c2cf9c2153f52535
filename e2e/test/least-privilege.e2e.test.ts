import { call, makeTenant, sql, stack } from '../src/client'

/**
 * DESIGN section 2: every service talks to PostgreSQL as its own login role, which owns nothing and
 * is no superuser; only the migration step used the owner's URL (the stack's DATABASE_URL).
 */
test('each running service is connected as its own unprivileged login role', async () => {
  // Traffic through every service, so each has connections open.
  const t = await makeTenant(['ALM1'])
  for (const path of ['/patients', '/appointments', '/comms/messages', '/audit/events'])
    expect((await call('GET', path, { token: t.token })).status).toBe(200)
  const rows = await sql<{ application_name: string; usename: string; rolsuper: boolean; owned: number }>(
    `SELECT DISTINCT a.application_name, a.usename::text, r.rolsuper,
            (SELECT count(*) FROM pg_class c WHERE c.relowner = r.oid)::int AS owned
       FROM pg_stat_activity a JOIN pg_roles r ON r.rolname = a.usename
      WHERE a.datname = current_database()
        AND a.application_name IN ('identity', 'patients', 'appointments', 'comms', 'audit')
      ORDER BY 1`,
  )
  expect(rows).toEqual(
    ['appointments', 'audit', 'comms', 'identity', 'patients'].map((schema) => ({
      application_name: schema,
      usename: `clinic_${schema === 'identity' ? 'gateway' : schema}`,
      rolsuper: false,
      owned: 0,
    })),
  )
  expect(stack().env.DATABASE_URL).toMatch(/^postgres/)
})
