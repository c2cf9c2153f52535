import type { Knex } from 'knex'
import { assertIdent } from './connect'

/**
 * Tables every service with events or POSTs needs. Migrations call these; the tables stay in the
 * service's own schema.
 */
export const commonTables = {
  /** Events written in the same transaction as the change; the relay publishes them. */
  async outbox(knex: Knex, schema: string) {
    const s = assertIdent(schema)
    await knex.raw(`
      CREATE TABLE outbox (
        id bigserial PRIMARY KEY,
        event_id uuid NOT NULL UNIQUE,
        idempresa integer NOT NULL,
        type text NOT NULL,
        payload jsonb NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        published_at timestamptz
      );
      CREATE INDEX outbox_pending ON outbox (id) WHERE published_at IS NULL;
      CREATE FUNCTION outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN PERFORM pg_notify('outbox_${s}', ''); RETURN NULL; END $$;
      CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
        FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
    `)
  },
  /** Ids of consumed events, written in the same transaction as their effect. */
  async processedEvents(knex: Knex) {
    await knex.raw(`
      CREATE TABLE processed_events (
        event_id uuid PRIMARY KEY,
        processed_at timestamptz NOT NULL DEFAULT now()
      )`)
  },
  /** Stored first responses of POSTs sent with an Idempotency-Key, per company and token. */
  async idempotencyKeys(knex: Knex) {
    await knex.raw(`
      CREATE TABLE idempotency_keys (
        idempresa integer NOT NULL,
        token_id text NOT NULL,
        key text NOT NULL,
        request_hash text NOT NULL,
        status integer,
        body jsonb,
        location text,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (idempresa, token_id, key)
      );
      CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at)`)
  },
  /**
   * Upgrades an `idempotency_keys` table made when keys were per company to keys per
   * token; on a table made by `idempotencyKeys` today it changes nothing. Rows stored before name no
   * token and are dropped: a retry across the deploy creates again rather than replaying another
   * token's answer. A service whose first migration has landed calls this in a new one.
   */
  async idempotencyKeysPerToken(knex: Knex) {
    await knex.raw(`
      ALTER TABLE idempotency_keys ADD COLUMN IF NOT EXISTS token_id text;
      DELETE FROM idempotency_keys WHERE token_id IS NULL;
      ALTER TABLE idempotency_keys ALTER COLUMN token_id SET NOT NULL;
      ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
      ALTER TABLE idempotency_keys ADD PRIMARY KEY (idempresa, token_id, key)`)
  },
}
