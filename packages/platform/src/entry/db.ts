// @clinic/platform/db: knex per service schema, migrations, common tables, Idempotency-Key.
export * from '../db/index'
export * from '../idempotency'
