// Database roles in Compose: the schema owner's credentials (POSTGRES_USER of the postgres service,
// MIGRATION_DATABASE_URL) reach the migrate-<name> one-shots only; each service logs in with a
// DATABASE_URL of its own (a user that is not the owner, one per service), the same its migration
// gets so that it creates or ALTERs exactly that role.
import { SERVICES, parseUrl } from './lib.mjs'

/** services: the interpolated `services:`; envOf(service) its environment as an object. */
export function checkDatabaseRoles(services, envOf, problems) {
  const pg = envOf(services.postgres)
  const owner = pg.POSTGRES_USER ?? 'postgres'
  const ownerPassword = String(pg.POSTGRES_PASSWORD ?? '')
  const users = new Map()
  for (const s of SERVICES) {
    if (!services[s]) continue
    const e = envOf(services[s])
    if ('MIGRATION_DATABASE_URL' in e) problems.push(`${s}: MIGRATION_DATABASE_URL is for migrate-${s} only`)
    const url = parseUrl(e.DATABASE_URL)
    const user = url?.username
    if (!user) problems.push(`${s}: DATABASE_URL has no user of its own`)
    else if (user === owner) problems.push(`${s}: DATABASE_URL logs in as the owner ${owner}`)
    else if (users.has(user)) problems.push(`${s}: DATABASE_URL user ${user} is also ${users.get(user)}'s`)
    else users.set(user, s)
    // No owner credentials anywhere in a service's environment.
    for (const [k, v] of Object.entries(e))
      if (
        (ownerPassword && String(v).includes(ownerPassword)) ||
        (/^postgres/.test(String(v)) && parseUrl(String(v))?.username === owner)
      )
        problems.push(`${s}: ${k} carries the owner's credentials (POSTGRES_USER / POSTGRES_PASSWORD)`)

    const mig = services[`migrate-${s}`]
    if (!mig) continue
    const me = envOf(mig)
    const m = parseUrl(me.MIGRATION_DATABASE_URL)
    if (!m) problems.push(`migrate-${s}: MIGRATION_DATABASE_URL (the owner's) not set`)
    else if (m.username !== owner)
      problems.push(`migrate-${s}: MIGRATION_DATABASE_URL logs in as ${m.username}, not the owner ${owner}`)
    // The role the migration makes is the one the service logs in as (user and password).
    if (!me.DATABASE_URL || me.DATABASE_URL !== e.DATABASE_URL)
      problems.push(`migrate-${s}: DATABASE_URL differs from ${s}'s (it makes the role ${s} logs in as)`)
  }
}
