import type { Migration } from '@clinic/platform'

/**
 * A reminder keeps the W3C `traceparent` of what scheduled it (the consumer's handling of the
 * appointment event): sending it is a span of that trace. claim_reminders returns the whole row
 * (`SETOF reminders`), so it hands the column to the worker as it is.
 */
export const reminderTraces: Migration = {
  name: '0008_reminder_traces',
  async up(knex) {
    await knex.raw(`ALTER TABLE reminders ADD COLUMN traceparent text`)
  },
}
