import { baseMigration, ensureRole, secureTenantTable, type Migration } from '@clinic/platform'

/**
 * The platform tables (outbox, processed_events, idempotency_keys) and the service role's rights on
 * them. The outbox relay and the consumer's duplicate check span companies, so only the
 * idempotency keys are a tenant table. A table of the service's own comes in a migration of its
 * own, secured the same way (secureTenantTable).
 */
export const base = (schema: string, appRoleName: string): Migration => ({
  name: '0001_base',
  async up(knex, stack) {
    const appRole = stack.role(appRoleName)
    await baseMigration(schema).up(knex, stack)
    await ensureRole(knex, appRole)
    await knex.raw(`
      GRANT USAGE ON SCHEMA ${schema} TO ${appRole};
      GRANT USAGE ON SEQUENCE outbox_id_seq TO ${appRole};
      GRANT SELECT, INSERT, UPDATE, DELETE ON outbox TO ${appRole};
      GRANT SELECT, INSERT ON processed_events TO ${appRole};
    `)
    await secureTenantTable(knex, 'idempotency_keys', {
      role: appRole,
      privileges: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    })
  },
})
