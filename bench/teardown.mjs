// `node bench/teardown.mjs <database URL> <DB_ROLE_PREFIX>`: what lib.mjs runs as a bench exits.
// Drops the bench's database, then its database roles (`<prefix>clinic_*`), which are cluster-wide
// and would outlive it (packages/platform/src/testing/databases.ts removeDbRoles).
import pg from 'pg'
import { platformTesting } from './lib.mjs'

const [databaseUrl, prefix] = process.argv.slice(2)
const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1))
if (!/^clinic_bench_[a-z0-9_]+$/.test(name)) throw new Error(`refusing to drop ${name}`)
const adminUrl = new URL(databaseUrl)
adminUrl.pathname = '/postgres'
const admin = new pg.Client({ connectionString: adminUrl.toString() })
await admin.connect()
try {
  await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
} finally {
  await admin.end()
}
await platformTesting().removeDbRoles(databaseUrl, prefix)
