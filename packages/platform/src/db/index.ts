// The knex side of the platform, by concern; `@clinic/platform/db` exports all of it.
export { createDb, isUniqueViolation, isoInstant, type DbOptions } from './connect'
export * from './migrate'
export * from './roles'
export * from './company'
export * from './prepared'
export * from './common-tables'
export * from './keyset'
export * from './tenant-repository'
