import { baseMigration, ensureRole, type Migration } from '@clinic/platform'
import { messageDeliveryJobs } from './delivery-jobs'
import { earlyReceiptsByCompany } from './early-receipts'
import { fhirSearch } from './fhir-search'
import { normalisedAddresses } from './normalised-addresses'
import { reminderTraces } from './reminder-traces'
import { remindersConsentLimits } from './reminders'

export const SCHEMA = 'comms'
/** The role the service runs as (SET ROLE after connect); row-level security applies to it. */
export const APP_ROLE = 'clinic_comms_app'

/** The first key of the per-sid advisory lock the receipt functions share (any constant int4). */
const RECEIPT_LOCK = 740_713
/** The first key of the per-sender advisory lock of inbound SMS keywords (any constant int4). */
const KEYWORD_LOCK = 740_715

const TENANT = `idempresa = nullif(current_setting('app.idempresa', true), '')::integer`

/** Applied in order; never edited after they land (these have not shipped yet). */
export const migrations: Migration[] = [
  baseMigration(SCHEMA),
  {
    name: '0002_messages',
    async up(knex) {
      await knex.raw(`
        CREATE TABLE messages (
          idempresa integer NOT NULL,
          id uuid NOT NULL,
          patient_id uuid NOT NULL,
          appointment_id uuid,
          codalmacen varchar(10),
          channel text NOT NULL CHECK (channel IN ('email', 'sms')),
          recipient_role text NOT NULL CHECK (recipient_role IN ('patient', 'guardian')),
          recipient_name text NOT NULL,
          recipient_address text NOT NULL,
          language varchar(35) NOT NULL DEFAULT 'es',
          subject text,
          body text NOT NULL,
          template text,
          status text NOT NULL DEFAULT 'queued'
            CHECK (status IN ('queued', 'sending', 'sent', 'failed', 'delivered', 'undelivered')),
          attempts integer NOT NULL DEFAULT 0,
          last_error text,
          provider_id text,
          created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
          claimed_at timestamptz,
          sent_at timestamptz,
          updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
          version integer NOT NULL DEFAULT 1,
          PRIMARY KEY (idempresa, id)
        );
        CREATE INDEX messages_by_created ON messages (idempresa, created_at DESC, id DESC);
        CREATE INDEX messages_patient ON messages (idempresa, patient_id, created_at DESC);
        CREATE INDEX messages_appointment ON messages (idempresa, appointment_id) WHERE appointment_id IS NOT NULL;
        CREATE INDEX messages_center ON messages (idempresa, codalmacen, created_at DESC);
        CREATE INDEX messages_status ON messages (idempresa, status, created_at DESC);
        CREATE INDEX messages_sending ON messages (claimed_at) WHERE status = 'sending';
        CREATE INDEX messages_provider ON messages (provider_id) WHERE provider_id IS NOT NULL;
        -- Twilio receipts that arrived before the worker recorded their sid (no company, no patient
        -- data; only the receipt functions below touch it).
        CREATE TABLE early_receipts (
          sid text PRIMARY KEY,
          status text NOT NULL CHECK (status IN ('delivered', 'undelivered')),
          error text,
          received_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX early_receipts_received ON early_receipts (received_at);
      `)
    },
  },
  {
    name: '0003_row_level_security',
    async up(knex, stack) {
      const appRole = stack.role(APP_ROLE)
      await ensureRole(knex, appRole)
      await knex.raw(`
        GRANT USAGE ON SCHEMA ${SCHEMA} TO ${appRole};
        GRANT SELECT, INSERT, UPDATE ON messages TO ${appRole};
        GRANT SELECT, INSERT, UPDATE, DELETE ON idempotency_keys, processed_events TO ${appRole};
        -- The outbox relay reads every company's pending events, so the outbox has no policy.
        GRANT SELECT, INSERT, UPDATE, DELETE ON outbox TO ${appRole};
        GRANT USAGE ON SEQUENCE outbox_id_seq TO ${appRole};
      `)
      for (const table of ['messages', 'idempotency_keys'])
        await knex.raw(`
          ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY;
          ALTER TABLE ${table} FORCE ROW LEVEL SECURITY;
          CREATE POLICY tenant_isolation ON ${table} USING (${TENANT}) WITH CHECK (${TENANT});
        `)
      // Cross-company on purpose, and only these: the stale-send sweep and the Twilio receipts
      // (which name a provider sid, not a company). They run as the owner and return what changed.
      await knex.raw(`
        CREATE FUNCTION fail_stale_sending(stale_minutes integer, reason text) RETURNS SETOF messages
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = ${SCHEMA}, public
        AS $$
          UPDATE ${SCHEMA}.messages SET status = 'failed', last_error = reason,
            updated_at = now(), version = version + 1
          WHERE status = 'sending' AND claimed_at < now() - make_interval(mins => stale_minutes)
          RETURNING *
        $$;
        -- Twilio receipts. delivered and undelivered are final (Twilio's own lifecycle ends at either,
        -- and callbacks may arrive out of order): only sent moves, never out of delivered. A receipt can
        -- beat the worker's commit of the sid (the callback races the Messages API answer): it is kept
        -- in early_receipts and applied by the worker's finish (apply_early_receipt). Both sides take
        -- the same per-sid lock, so one of them always sees the other's write.
        CREATE FUNCTION apply_receipt(p_sid text, p_status text, p_error text) RETURNS SETOF messages
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = ${SCHEMA}, public
        AS $$
        BEGIN
          PERFORM pg_advisory_xact_lock(${RECEIPT_LOCK}, hashtext(p_sid));
          RETURN QUERY
            UPDATE ${SCHEMA}.messages m SET status = p_status,
              last_error = coalesce(p_error, m.last_error), updated_at = now(), version = m.version + 1
            WHERE m.provider_id = p_sid AND m.channel = 'sms' AND m.status = 'sent'
            RETURNING m.*;
          IF NOT FOUND AND NOT EXISTS (SELECT 1 FROM ${SCHEMA}.messages m WHERE m.provider_id = p_sid) THEN
            -- Receipts of sids never recorded (a send whose outcome was lost) do not pile up.
            DELETE FROM ${SCHEMA}.early_receipts e WHERE e.received_at < now() - interval '1 day';
            INSERT INTO ${SCHEMA}.early_receipts (sid, status, error) VALUES (p_sid, p_status, p_error)
              ON CONFLICT (sid) DO NOTHING;
          END IF;
        END
        $$;
        CREATE FUNCTION apply_early_receipt(p_sid text) RETURNS SETOF messages
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = ${SCHEMA}, public
        AS $$
        DECLARE r ${SCHEMA}.early_receipts;
        BEGIN
          PERFORM pg_advisory_xact_lock(${RECEIPT_LOCK}, hashtext(p_sid));
          DELETE FROM ${SCHEMA}.early_receipts e WHERE e.sid = p_sid RETURNING e.* INTO r;
          IF r.sid IS NULL THEN
            RETURN;
          END IF;
          RETURN QUERY
            UPDATE ${SCHEMA}.messages m SET status = r.status,
              last_error = coalesce(r.error, m.last_error), updated_at = now(), version = m.version + 1
            WHERE m.provider_id = p_sid AND m.channel = 'sms' AND m.status = 'sent'
            RETURNING m.*;
        END
        $$;
        REVOKE ALL ON FUNCTION fail_stale_sending(integer, text), apply_receipt(text, text, text),
          apply_early_receipt(text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION fail_stale_sending(integer, text), apply_receipt(text, text, text),
          apply_early_receipt(text) TO ${appRole};
      `)
    },
  },
  remindersConsentLimits(SCHEMA, APP_ROLE),
  earlyReceiptsByCompany(SCHEMA, APP_ROLE, RECEIPT_LOCK),
  messageDeliveryJobs(SCHEMA, APP_ROLE),
  normalisedAddresses(SCHEMA, APP_ROLE, KEYWORD_LOCK),
  reminderTraces,
  fhirSearch,
]
