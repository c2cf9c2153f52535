// @clinic/platform/db: knex per service schema, migrations, common tables, Idempotency-Key.
export * from '../db'
export * from '../idempotency'
