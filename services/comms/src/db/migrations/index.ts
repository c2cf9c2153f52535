import { commonTables, type Migration } from '@clinic/platform'

export const SCHEMA = 'comms'

/** Applied in order; never edited after they land. */
export const migrations: Migration[] = [
  {
    name: '0001_base',
    async up(knex) {
      await commonTables.outbox(knex, SCHEMA)
      await commonTables.processedEvents(knex)
      await commonTables.idempotencyKeys(knex)
    },
  },
]
