import { commonTables, ensureRole, type Migration } from '@clinic/platform'

export const SCHEMA = 'audit'
/** The role the service runs as (SET ROLE on every connection): it may read and append, nothing more. */
export const WRITER_ROLE = 'clinic_audit_writer'

/** Applied in order, as the schema owner; never edited after they land. */
export const migrations: Migration[] = [
  {
    name: '0001_audit_events',
    async up(knex) {
      await ensureRole(knex, WRITER_ROLE)
      await commonTables.processedEvents(knex)
      await knex.raw(`
        -- One row per company: the end of its hash chain. Locked FOR UPDATE while an event is
        -- appended, so competing consumers take seq numbers one at a time per company.
        CREATE TABLE chain_heads (
          idempresa integer PRIMARY KEY,
          seq bigint NOT NULL,
          hash text NOT NULL,
          recorded_at timestamptz NOT NULL
        );

        -- Where a chain resumes after retention dropped its oldest partitions.
        CREATE TABLE retention_anchors (
          idempresa integer PRIMARY KEY,
          seq bigint NOT NULL,
          hash text NOT NULL,
          dropped_at timestamptz NOT NULL DEFAULT now()
        );

        -- Partitioned by month of recording: retention drops whole partitions, never rows.
        -- Keys lead with idempresa (distribution by company later) and include the partition key,
        -- as PostgreSQL requires; event ids are unique through processed_events.
        CREATE TABLE events (
          idempresa integer NOT NULL,
          seq bigint NOT NULL,
          id uuid NOT NULL,
          occurred_at timestamptz NOT NULL,
          recorded_at timestamptz NOT NULL,
          action text NOT NULL,
          outcome text NOT NULL CHECK (outcome IN ('success', 'failure')),
          resource_type text,
          resource_id text,
          codalmacen text,
          actor_user_id text,
          actor_username text,
          actor_token_id text,
          request_id text,
          source text NOT NULL,
          http jsonb,
          changes text[],
          prev_hash text NOT NULL,
          hash text NOT NULL,
          PRIMARY KEY (idempresa, seq, recorded_at),
          UNIQUE (idempresa, id, recorded_at)
        ) PARTITION BY RANGE (recorded_at);
        CREATE INDEX events_action ON events (idempresa, action, seq);
        CREATE INDEX events_resource ON events (idempresa, resource_type, resource_id, seq);
        CREATE INDEX events_username ON events (idempresa, actor_username, seq);
        CREATE INDEX events_outcome ON events (idempresa, outcome, seq);
        CREATE INDEX events_center ON events (idempresa, codalmacen, seq);
        CREATE INDEX events_occurred ON events (idempresa, occurred_at);

        CREATE FUNCTION events_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            RAISE EXCEPTION 'audit.events is append-only: % refused', TG_OP USING ERRCODE = 'insufficient_privilege';
          END $$;
        -- Row triggers on the parent are cloned to every partition, present and future.
        CREATE TRIGGER events_no_update_delete BEFORE UPDATE OR DELETE ON events
          FOR EACH ROW EXECUTE FUNCTION events_append_only();
        CREATE TRIGGER events_no_change BEFORE UPDATE OR DELETE OR TRUNCATE ON events
          FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();

        -- A safety net for rows outside every monthly partition.
        CREATE TABLE events_default PARTITION OF events DEFAULT;
        -- Statement triggers are not cloned: each partition gets its own TRUNCATE guard.
        CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events_default
          FOR EACH STATEMENT EXECUTE FUNCTION events_append_only();

        -- Creates the monthly partitions from this month to months_ahead months on. SECURITY DEFINER:
        -- the service role may add partitions (at start-up and periodically) without owning the table.
        CREATE FUNCTION ensure_event_partitions(months_ahead integer DEFAULT 1) RETURNS integer
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = ${SCHEMA}, pg_temp AS $$
        DECLARE
          month_start timestamp;
          part text;
          created integer := 0;
        BEGIN
          FOR i IN 0..greatest(0, least(months_ahead, 24)) LOOP
            month_start := date_trunc('month', now() AT TIME ZONE 'UTC') + make_interval(months => i);
            part := 'events_' || to_char(month_start, 'YYYY_MM');
            CONTINUE WHEN to_regclass('${SCHEMA}.' || part) IS NOT NULL;
            BEGIN
              EXECUTE format('CREATE TABLE ${SCHEMA}.%I PARTITION OF ${SCHEMA}.events FOR VALUES FROM (%L) TO (%L)',
                part, month_start AT TIME ZONE 'UTC', (month_start + interval '1 month') AT TIME ZONE 'UTC');
              EXECUTE format('CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON ${SCHEMA}.%I '
                'FOR EACH STATEMENT EXECUTE FUNCTION ${SCHEMA}.events_append_only()', part);
              created := created + 1;
            EXCEPTION
              WHEN duplicate_table THEN NULL; -- another instance made it meanwhile
              WHEN check_violation THEN
                RAISE WARNING 'partition % not created: the default partition holds rows of that month', part;
            END;
          END LOOP;
          RETURN created;
        END $$;
        SELECT ensure_event_partitions(1);

        REVOKE ALL ON events, events_default, chain_heads, retention_anchors, processed_events FROM PUBLIC;
        REVOKE ALL ON FUNCTION ensure_event_partitions(integer) FROM PUBLIC;
        GRANT USAGE ON SCHEMA ${SCHEMA} TO ${WRITER_ROLE};
        GRANT SELECT, INSERT ON events TO ${WRITER_ROLE};
        GRANT SELECT, INSERT, UPDATE ON chain_heads TO ${WRITER_ROLE};
        GRANT SELECT, INSERT ON processed_events TO ${WRITER_ROLE};
        GRANT SELECT ON retention_anchors TO ${WRITER_ROLE};
        GRANT EXECUTE ON FUNCTION ensure_event_partitions(integer) TO ${WRITER_ROLE};
      `)
      // The owner must be able to SET ROLE to the writer (a superuser always can).
      await knex.raw(`
        DO $$ BEGIN
          IF NOT pg_has_role(current_user, '${WRITER_ROLE}', 'MEMBER') THEN
            EXECUTE format('GRANT ${WRITER_ROLE} TO %I', current_user);
          END IF;
        END $$`)
    },
  },
]
