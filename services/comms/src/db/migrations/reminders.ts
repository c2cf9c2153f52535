import type { Migration } from '@clinic/platform'

const TENANT = `idempresa = nullif(current_setting('app.idempresa', true), '')::integer`

/**
 * DESIGN.md section 12: reminder policies and scheduled reminders, consent per channel and address,
 * the daily messaging counters, the uses of patient links; `suppressed` messages and the guardian
 * override on messages. Given the schema and role names by the list (index.ts), which imports this.
 */
export const remindersConsentLimits = (SCHEMA: string, APP_ROLE_NAME: string): Migration => ({
  name: '0004_reminders_consent_limits',
  async up(knex, stack) {
    const APP_ROLE = stack.role(APP_ROLE_NAME)
    await knex.raw(`
      ALTER TABLE messages DROP CONSTRAINT messages_status_check;
      ALTER TABLE messages ADD CONSTRAINT messages_status_check CHECK (status IN
        ('queued', 'sending', 'sent', 'failed', 'delivered', 'undelivered', 'suppressed'));
      ALTER TABLE messages ADD COLUMN override_guardian boolean NOT NULL DEFAULT false;
      -- The hourly limit per recipient address counts this company's recent messages to it.
      CREATE INDEX messages_address ON messages (idempresa, recipient_address, created_at);

      CREATE TABLE reminder_policies (
        idempresa integer PRIMARY KEY,
        enabled boolean NOT NULL DEFAULT false,
        offsets text[] NOT NULL DEFAULT '{}',
        quiet_start char(5),
        quiet_end char(5),
        confirm_links boolean NOT NULL DEFAULT true,
        updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
        version integer NOT NULL DEFAULT 1,
        CHECK ((quiet_start IS NULL) = (quiet_end IS NULL))
      );

      -- One row per appointment, offset and start time: a reminder is sent at most once for each.
      -- The row is also the job: the worker claims due rows (claim_reminders) with a lease.
      CREATE TABLE reminders (
        idempresa integer NOT NULL,
        id uuid NOT NULL,
        appointment_id uuid NOT NULL,
        patient_id uuid NOT NULL,
        codalmacen varchar(10),
        offset_iso text NOT NULL,
        starts_at timestamptz NOT NULL,
        time_zone text NOT NULL,
        -- The appointment's version the row was reconciled with: an older event changes nothing.
        appointment_version integer NOT NULL,
        due_at timestamptz NOT NULL,
        status text NOT NULL DEFAULT 'scheduled'
          CHECK (status IN ('scheduled', 'sent', 'cancelled', 'skipped', 'suppressed')),
        confirm_link boolean NOT NULL DEFAULT true,
        message_id uuid,
        reason text,
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at timestamptz NOT NULL,
        created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
        updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
        version integer NOT NULL DEFAULT 1,
        PRIMARY KEY (idempresa, id),
        UNIQUE (idempresa, appointment_id, offset_iso, starts_at)
      );
      CREATE INDEX reminders_due ON reminders (next_attempt_at) WHERE status = 'scheduled';
      CREATE INDEX reminders_appointment ON reminders (idempresa, appointment_id, due_at);
      CREATE INDEX reminders_by_due ON reminders (idempresa, due_at DESC, id DESC);

      -- Consent per company, channel and address (a guardian's phone may serve several children).
      CREATE TABLE preferences (
        idempresa integer NOT NULL,
        channel text NOT NULL CHECK (channel IN ('email', 'sms')),
        address text NOT NULL,
        opted_out boolean NOT NULL,
        source text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
        version integer NOT NULL DEFAULT 1,
        PRIMARY KEY (idempresa, channel, address)
      );

      -- Messages queued per company, channel and UTC day (COMMS_DAILY_*_LIMIT), counted in the
      -- transaction that queues them.
      CREATE TABLE daily_counts (
        idempresa integer NOT NULL,
        channel text NOT NULL CHECK (channel IN ('email', 'sms')),
        day date NOT NULL,
        count integer NOT NULL DEFAULT 0,
        PRIMARY KEY (idempresa, channel, day)
      );

      -- A patient link is used once: its token id is recorded with what it did.
      CREATE TABLE link_uses (
        idempresa integer NOT NULL,
        token_id uuid NOT NULL,
        appointment_id uuid NOT NULL,
        action text NOT NULL CHECK (action IN ('confirm', 'cancel')),
        used_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
        PRIMARY KEY (idempresa, token_id)
      );
    `)
    for (const table of ['reminder_policies', 'reminders', 'preferences', 'daily_counts', 'link_uses'])
      await knex.raw(`
        GRANT SELECT, INSERT, UPDATE, DELETE ON ${table} TO ${APP_ROLE};
        ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY;
        ALTER TABLE ${table} FORCE ROW LEVEL SECURITY;
        CREATE POLICY tenant_isolation ON ${table} USING (${TENANT}) WITH CHECK (${TENANT});
      `)
    // Cross-company on purpose: the worker claims every company's due reminders (a lease: a worker
    // that dies holding them loses none, they are claimed again when it runs out), and an inbound
    // STOP names a phone number, not a company (every company that has written to it keeps it).
    await knex.raw(`
      -- plpgsql with EXECUTE: planned for each call's limit (a SQL function with SET is planned once,
      -- generically, and scanned the whole table: 12-28 ms a claim at 50,000 rows, bench/reminders.mjs).
      CREATE FUNCTION claim_reminders(p_now timestamptz, p_limit integer, p_lease interval)
      RETURNS SETOF reminders
      LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = ${SCHEMA}, public
      AS $$
      BEGIN
        RETURN QUERY EXECUTE '
          UPDATE ${SCHEMA}.reminders r
          SET attempts = r.attempts + 1, next_attempt_at = $1 + $3
          FROM (
            SELECT idempresa, id FROM ${SCHEMA}.reminders
            WHERE status = ''scheduled'' AND next_attempt_at <= $1
            ORDER BY next_attempt_at
            LIMIT $2
            FOR UPDATE SKIP LOCKED
          ) due
          WHERE r.idempresa = due.idempresa AND r.id = due.id
          RETURNING r.*' USING p_now, p_limit, p_lease;
      END
      $$;
      CREATE FUNCTION set_consent_everywhere(p_channel text, p_address text, p_opted_out boolean,
        p_source text)
      RETURNS SETOF preferences
      LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = ${SCHEMA}, public
      AS $$
        INSERT INTO ${SCHEMA}.preferences AS p (idempresa, channel, address, opted_out, source)
        SELECT DISTINCT m.idempresa, p_channel, p_address, p_opted_out, p_source
        FROM ${SCHEMA}.messages m
        WHERE m.channel = p_channel AND m.recipient_address = p_address
        UNION
        SELECT q.idempresa, p_channel, p_address, p_opted_out, p_source
        FROM ${SCHEMA}.preferences q WHERE q.channel = p_channel AND q.address = p_address
        ON CONFLICT (idempresa, channel, address) DO UPDATE
          SET opted_out = excluded.opted_out, source = excluded.source,
            updated_at = date_trunc('milliseconds', now()), version = p.version + 1
          WHERE p.opted_out IS DISTINCT FROM excluded.opted_out
        RETURNING p.*
      $$;
      CREATE INDEX messages_address_any ON messages (channel, recipient_address);
      REVOKE ALL ON FUNCTION claim_reminders(timestamptz, integer, interval),
        set_consent_everywhere(text, text, boolean, text) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION claim_reminders(timestamptz, integer, interval),
        set_consent_everywhere(text, text, boolean, text) TO ${APP_ROLE};
    `)
  },
})
