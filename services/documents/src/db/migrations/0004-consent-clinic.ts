import type { Migration } from '@clinic/platform'

/**
 * Who asked for a consent, frozen when it was asked (DESIGN.md section 16): the company's and the
 * center's names as the gateway's assertion carried them, and the time zone its times are written
 * in. Null names: a consent asked before this (its message, page and PDF say "the clinic").
 */
export const consentClinic = (): Migration => ({
  name: '0004_consent_clinic',
  async up(knex) {
    await knex.raw(`
      ALTER TABLE consents
        ADD COLUMN clinic_name varchar(200),
        ADD COLUMN center_name varchar(200),
        ADD COLUMN time_zone varchar(64) NOT NULL DEFAULT 'Europe/Madrid';
    `)
  },
})
