import { commonTables, ensureRole, secureTenantTable, type Migration } from '@clinic/platform'

export const SCHEMA = 'audit'
/** The role the service runs as (SET ROLE on every connection): it may read and append, nothing more. */
export const WRITER_ROLE = 'clinic_audit_writer'

/** Applied in order, as the schema owner; never edited after they land. */
export const migrations: Migration[] = [
  {
    name: '0001_audit_events',
    async up(knex, stack) {
      const writerRole = stack.role(WRITER_ROLE)
      await ensureRole(knex, writerRole)
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
        GRANT USAGE ON SCHEMA ${SCHEMA} TO ${writerRole};
        GRANT SELECT, INSERT ON events TO ${writerRole};
        GRANT SELECT, INSERT, UPDATE ON chain_heads TO ${writerRole};
        GRANT SELECT, INSERT ON processed_events TO ${writerRole};
        GRANT SELECT ON retention_anchors TO ${writerRole};
        GRANT EXECUTE ON FUNCTION ensure_event_partitions(integer) TO ${writerRole};
      `)
      // The owner must be able to SET ROLE to the writer (a superuser always can).
      await knex.raw(`
        DO $$ BEGIN
          IF NOT pg_has_role(current_user, '${writerRole}', 'MEMBER') THEN
            EXECUTE format('GRANT ${writerRole} TO %I', current_user);
          END IF;
        END $$`)
    },
  },
  {
    name: '0002_chain_heads_by_function',
    async up(knex, stack) {
      const writerRole = stack.role(WRITER_ROLE)
      // The writer could UPDATE chain_heads, so moving a head back hid every later row from
      // verification. Now it may only read heads; two SECURITY DEFINER functions lock a head for
      // an append and move it forward by exactly one event that exists and links to it.
      await knex.raw(`
        REVOKE INSERT, UPDATE, DELETE ON chain_heads FROM ${writerRole};

        CREATE FUNCTION lock_chain_head(company integer)
        RETURNS TABLE (seq bigint, hash text, recorded_at timestamptz)
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = ${SCHEMA}, pg_temp AS $$
        BEGIN
          INSERT INTO ${SCHEMA}.chain_heads AS h (idempresa, seq, hash, recorded_at)
          VALUES (company, 0, repeat('0', 64), 'epoch')
          ON CONFLICT (idempresa) DO NOTHING;
          RETURN QUERY SELECT h.seq, h.hash, h.recorded_at FROM ${SCHEMA}.chain_heads h
            WHERE h.idempresa = company FOR UPDATE;
        END $$;

        CREATE FUNCTION advance_chain_head(company integer, new_seq bigint, new_hash text) RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = ${SCHEMA}, pg_temp AS $$
        DECLARE
          head ${SCHEMA}.chain_heads;
          linked integer;
          at timestamptz;
        BEGIN
          SELECT * INTO head FROM ${SCHEMA}.chain_heads h WHERE h.idempresa = company FOR UPDATE;
          IF NOT FOUND OR new_seq <> head.seq + 1 THEN
            RAISE EXCEPTION 'chain head of company % moves only to seq %', company, coalesce(head.seq, 0) + 1
              USING ERRCODE = 'check_violation';
          END IF;
          SELECT count(*), max(e.recorded_at) INTO linked, at FROM ${SCHEMA}.events e
            WHERE e.idempresa = company AND e.seq = new_seq AND e.hash = new_hash AND e.prev_hash = head.hash;
          IF linked <> 1 THEN
            RAISE EXCEPTION 'chain head of company % moves only to one event linked to it', company
              USING ERRCODE = 'check_violation';
          END IF;
          UPDATE ${SCHEMA}.chain_heads SET seq = new_seq, hash = new_hash, recorded_at = at
            WHERE idempresa = company;
        END $$;

        REVOKE ALL ON FUNCTION lock_chain_head(integer) FROM PUBLIC;
        REVOKE ALL ON FUNCTION advance_chain_head(integer, bigint, text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION lock_chain_head(integer) TO ${writerRole};
        GRANT EXECUTE ON FUNCTION advance_chain_head(integer, bigint, text) TO ${writerRole};
      `)
    },
  },
  {
    // Batched appends: the head moves once past several events, each checked to link to the one
    // before it, the first to the head, the last being new_seq / new_hash.
    name: '0003_advance_chain_head_past_a_run',
    async up(knex, stack) {
      const writerRole = stack.role(WRITER_ROLE)
      await knex.raw(`
        CREATE FUNCTION advance_chain_head_to(company integer, new_seq bigint, new_hash text) RETURNS void
        LANGUAGE plpgsql SECURITY DEFINER SET search_path = ${SCHEMA}, pg_temp AS $$
        DECLARE
          head ${SCHEMA}.chain_heads;
          r record;
          expected bigint;
          last_hash text;
          at timestamptz;
        BEGIN
          SELECT * INTO head FROM ${SCHEMA}.chain_heads h WHERE h.idempresa = company FOR UPDATE;
          IF NOT FOUND OR new_seq <= head.seq THEN
            RAISE EXCEPTION 'chain head of company % moves only forward', company
              USING ERRCODE = 'check_violation';
          END IF;
          expected := head.seq + 1;
          last_hash := head.hash;
          FOR r IN SELECT e.seq, e.hash, e.prev_hash, e.recorded_at FROM ${SCHEMA}.events e
                    WHERE e.idempresa = company AND e.seq > head.seq AND e.seq <= new_seq ORDER BY e.seq LOOP
            IF r.seq <> expected OR r.prev_hash <> last_hash THEN
              RAISE EXCEPTION 'chain head of company % moves only over linked events', company
                USING ERRCODE = 'check_violation';
            END IF;
            expected := expected + 1;
            last_hash := r.hash;
            at := r.recorded_at;
          END LOOP;
          IF expected <> new_seq + 1 OR last_hash <> new_hash THEN
            RAISE EXCEPTION 'chain head of company % moves only to the last event linked to it', company
              USING ERRCODE = 'check_violation';
          END IF;
          UPDATE ${SCHEMA}.chain_heads SET seq = new_seq, hash = new_hash, recorded_at = at
            WHERE idempresa = company;
        END $$;
        REVOKE ALL ON FUNCTION advance_chain_head_to(integer, bigint, text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION advance_chain_head_to(integer, bigint, text) TO ${writerRole};
      `)
    },
  },
  {
    // The trail under row-level security like every other tenant table: the writer appends and
    // reads one company at a time (app.idempresa per company, see appendEvents). On the parent
    // only: the writer has no privilege on the partitions themselves, so it reaches rows through
    // the parent and its policy alone.
    name: '0004_events_row_level_security',
    async up(knex, stack) {
      const writerRole = stack.role(WRITER_ROLE)
      await secureTenantTable(knex, 'events', { role: writerRole, privileges: ['SELECT', 'INSERT'] })
    },
  },
  {
    // FHIR AuditEvent searches (DESIGN.md section 19) page by recording time, then id (the trail
    // never changes: recorded_at is each event's last update). On the parent: every partition,
    // present and future, gets it.
    name: '0005_fhir_search',
    async up(knex) {
      await knex.raw('CREATE INDEX events_by_recorded ON events (idempresa, recorded_at, id)')
    },
  },
]
