import { DB_ROLE_PREFIX } from '../naming.cjs'
import { exitOnConfigError, loadConfig, v } from './config'
import {
  assertSchemaRole,
  ensureDatabase,
  ensureLoginRole,
  migrate,
  stackDbRole,
  type Migration,
} from './db/index'

// A service's database settings and its migration step (`node dist/db/migrate.js`), which alone
// holds the schema owner's credentials.

/** The part of every service's configuration that is the same everywhere (DESIGN.md section 6). */
export const databaseConfig = {
  DATABASE_URL: v.url({
    default: 'postgres://postgres@127.0.0.1:5432/clinic',
    protocols: ['postgres:', 'postgresql:'],
    secret: true,
  }),
  /**
   * The stack's prefix of its database roles: the NOLOGIN role a service's migrations grant to and
   * it runs as is `<prefix><role>`, and so is its login role (the name its DATABASE_URL logs in as).
   * Roles are cluster-wide: stacks sharing one PostgreSQL (test stacks, staging beside production)
   * each need their own. Empty by default (`npm start`, one stack per cluster).
   */
  DB_ROLE_PREFIX: v.string({
    default: '',
    pattern: {
      re: DB_ROLE_PREFIX,
      says: 'empty, or lowercase letters, digits and _, starting with a letter and ending in _',
    },
  }),
}
/** The migration step's: the owner's URL, and the service's own (whose login role it makes). */
export const migrationConfig = {
  ...databaseConfig,
  /** The schema owner's credentials: only the migration step has them. Unset: DATABASE_URL's. */
  MIGRATION_DATABASE_URL: v.url({ optional: true, protocols: ['postgres:', 'postgresql:'], secret: true }),
}

/**
 * A service's db/migrate.ts: creates the database if needed and migrates the service's schema as
 * the owner (MIGRATION_DATABASE_URL), granting to the stack's `appRole` (DB_ROLE_PREFIX before it);
 * then makes the login role of the service's DATABASE_URL, a member of that role and nothing more.
 */
export function runMigrations(schema: string, migrations: Migration[], appRole: string): void {
  const main = async () => {
    const { DATABASE_URL, MIGRATION_DATABASE_URL, DB_ROLE_PREFIX } = loadConfig(migrationConfig)
    const owner = MIGRATION_DATABASE_URL ?? DATABASE_URL
    const role = stackDbRole(appRole, DB_ROLE_PREFIX)
    await ensureDatabase(owner)
    const applied = await migrate(owner, schema, migrations, { rolePrefix: DB_ROLE_PREFIX })
    process.stdout.write(`${schema}: ${applied.length ? `applied ${applied.join(', ')}` : 'up to date'}\n`)
    await assertSchemaRole(owner, role, schema)
    if (MIGRATION_DATABASE_URL) {
      const login = await ensureLoginRole(owner, DATABASE_URL, role)
      process.stdout.write(`${schema}: the service logs in as ${login} (member of ${role})\n`)
    }
  }
  main().catch((err) => {
    exitOnConfigError(err)
    process.stderr.write(`${schema} migrations failed: ${(err as Error).message}\n`)
    process.exit(1)
  })
}
