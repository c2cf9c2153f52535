import { baseMigration, ensureRole, type Migration } from '@clinic/platform'
import { deliveryTraces } from './delivery-traces'

export const SCHEMA = 'webhooks'
/** The role the service runs as (SET ROLE after connect); row-level security applies to it. */
export const APP_ROLE = 'clinic_webhooks_app'

const TENANT = `idempresa = nullif(current_setting('app.idempresa', true), '')::integer`
/**
 * What the service role may do per table, and whether row-level security scopes it to the company
 * in `app.idempresa`. The outbox relay and the consumer's duplicate check span companies.
 */
const SERVICE_ROLE_TABLES: Array<[table: string, privileges: string, tenant: boolean]> = [
  ['endpoints', 'SELECT, INSERT, UPDATE, DELETE', true],
  ['events', 'SELECT, INSERT', true],
  ['feed_heads', 'SELECT, INSERT, UPDATE', true],
  ['deliveries', 'SELECT, INSERT, UPDATE', true],
  ['idempotency_keys', 'SELECT, INSERT, UPDATE, DELETE', true],
  ['outbox', 'SELECT, INSERT, UPDATE, DELETE', false],
  ['processed_events', 'SELECT, INSERT', false],
]

/** Applied in order; never edited after they land. */
export const migrations: Migration[] = [
  baseMigration(SCHEMA),
  {
    name: '0002_webhooks',
    async up(knex) {
      await knex.raw(`
        CREATE TABLE endpoints (
          idempresa integer NOT NULL,
          id uuid NOT NULL,
          url varchar(2048) NOT NULL,
          event_types text[] NOT NULL,
          codalmacen varchar(10),
          description varchar(500),
          status text NOT NULL DEFAULT 'enabled' CHECK (status IN ('enabled', 'disabled')),
          disabled_reason varchar(500),
          -- The signing secret sealed with WEBHOOKS_SECRET_KEY (AES-256-GCM), never in clear.
          secret bytea NOT NULL,
          -- After a rotation the old secret signs too, until previous_secret_until.
          previous_secret bytea,
          previous_secret_until timestamptz(3),
          last_success_at timestamptz(3),
          created_at timestamptz(3) NOT NULL,
          updated_at timestamptz(3) NOT NULL,
          version integer NOT NULL DEFAULT 1,
          PRIMARY KEY (idempresa, id)
        );
        CREATE INDEX endpoints_by_created ON endpoints (idempresa, created_at, id);
        -- The change feed and what deliveries send: each event's thin payload, kept
        -- EVENTS_RETENTION_DAYS. seq orders a company's feed without gaps (feed_heads hands it out
        -- under a row lock, so a reader never sees seq n+1 before n commits); webhook.test events,
        -- which are not in the feed, have none.
        CREATE TABLE events (
          idempresa integer NOT NULL,
          id uuid NOT NULL,
          seq bigint,
          type text NOT NULL,
          codalmacen varchar(10),
          occurred_at timestamptz(3) NOT NULL,
          stored_at timestamptz(3) NOT NULL,
          data jsonb NOT NULL,
          PRIMARY KEY (idempresa, id)
        );
        CREATE UNIQUE INDEX events_feed ON events (idempresa, seq) WHERE seq IS NOT NULL;
        CREATE INDEX events_stored ON events (stored_at);
        CREATE TABLE feed_heads (
          idempresa integer PRIMARY KEY,
          last_seq bigint NOT NULL
        );
        -- One row per event and endpoint: the delivery log and the job itself. pending rows are
        -- due at next_attempt_at; a worker that takes one leases it until leased_until (a dead
        -- worker's lease runs out and the attempt is made again).
        CREATE TABLE deliveries (
          idempresa integer NOT NULL,
          id uuid NOT NULL,
          endpoint_id uuid NOT NULL,
          event_id uuid NOT NULL,
          event_type text NOT NULL,
          status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
          attempts integer NOT NULL DEFAULT 0,
          next_attempt_at timestamptz(3),
          leased_until timestamptz(3),
          last_status_code integer,
          last_error varchar(500),
          last_duration_ms integer,
          created_at timestamptz(3) NOT NULL,
          succeeded_at timestamptz(3),
          PRIMARY KEY (idempresa, id),
          FOREIGN KEY (idempresa, endpoint_id) REFERENCES endpoints ON DELETE CASCADE,
          FOREIGN KEY (idempresa, event_id) REFERENCES events ON DELETE CASCADE,
          CHECK ((status = 'pending') = (next_attempt_at IS NOT NULL))
        );
        CREATE INDEX deliveries_log ON deliveries (idempresa, endpoint_id, created_at DESC, id DESC);
        CREATE INDEX deliveries_due ON deliveries (idempresa, endpoint_id, next_attempt_at)
          WHERE status = 'pending';
        CREATE INDEX deliveries_leased ON deliveries (idempresa, endpoint_id)
          WHERE leased_until IS NOT NULL;
        CREATE INDEX deliveries_event ON deliveries (idempresa, event_id);
        -- An event is pending at most once per endpoint (a replay over a retry sends it once).
        CREATE UNIQUE INDEX deliveries_pending ON deliveries (idempresa, endpoint_id, event_id)
          WHERE status = 'pending';
      `)
    },
  },
  {
    name: '0003_row_level_security',
    async up(knex, stack) {
      const appRole = stack.role(APP_ROLE)
      await ensureRole(knex, appRole)
      await knex.raw(`GRANT USAGE ON SCHEMA ${SCHEMA} TO ${appRole}`)
      await knex.raw(`GRANT USAGE ON SEQUENCE outbox_id_seq TO ${appRole}`)
      for (const [table, privileges, tenant] of SERVICE_ROLE_TABLES) {
        await knex.raw(`GRANT ${privileges} ON ${table} TO ${appRole}`)
        if (tenant)
          await knex.raw(`
            ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY;
            ALTER TABLE ${table} FORCE ROW LEVEL SECURITY;
            CREATE POLICY tenant_isolation ON ${table} USING (${TENANT}) WITH CHECK (${TENANT});
          `)
      }
      // Cross-company on purpose, and only these two, run as the owner:
      // claim_deliveries hands due deliveries to a worker, each with what its attempt needs (the
      // event, the URL, the sealed secrets). It locks the endpoints it serves (NO KEY UPDATE: new
      // deliveries can still reference them), so two workers never count one endpoint's free
      // slots at once, and takes at most p_per_endpoint minus those in flight (leased) per
      // endpoint, oldest first, the endpoints with the oldest work first. Each endpoint's oldest
      // pending delivery is one probe of deliveries_due (LIMIT 1 in a LATERAL), whatever the
      // backlog (an EXISTS over the due deliveries was planned as a scan of all of them: 27 ms a
      // claim with 50,000 due, against 2.4 ms now; bench/webhooks.mjs). A claimed delivery's
      // next attempt is at the end of its lease: a worker that dies mid-attempt loses nothing.
      // purge_events drops what is past the feed's retention (and deliveries with it).
      await knex.raw(`
        CREATE FUNCTION claim_deliveries(p_now timestamptz, p_limit integer, p_per_endpoint integer,
          p_lease interval)
        RETURNS TABLE (idempresa integer, id uuid, attempts integer, leased_until timestamptz,
          event_id uuid, event_type text, occurred_at timestamptz, data jsonb, endpoint_id uuid,
          url text, secret bytea, previous_secret bytea, previous_secret_until timestamptz)
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = ${SCHEMA}, public
        AS $$
          WITH ready AS (
            SELECT e.idempresa, e.id, o.oldest
            FROM ${SCHEMA}.endpoints e
            CROSS JOIN LATERAL (
              SELECT d.next_attempt_at AS oldest FROM ${SCHEMA}.deliveries d
              WHERE d.idempresa = e.idempresa AND d.endpoint_id = e.id AND d.status = 'pending'
              ORDER BY d.next_attempt_at
              LIMIT 1
            ) o
            WHERE e.status = 'enabled' AND o.oldest <= p_now
          ), locked AS (
            SELECT e.idempresa, e.id, r.oldest FROM ${SCHEMA}.endpoints e
            JOIN ready r ON r.idempresa = e.idempresa AND r.id = e.id
            ORDER BY r.oldest
            LIMIT p_limit
            FOR NO KEY UPDATE OF e SKIP LOCKED
          ), picked AS (
            SELECT p.idempresa, p.id, p.next_attempt_at FROM locked l CROSS JOIN LATERAL (
              SELECT d.idempresa, d.id, d.next_attempt_at FROM ${SCHEMA}.deliveries d
              WHERE d.idempresa = l.idempresa AND d.endpoint_id = l.id AND d.status = 'pending'
                AND d.next_attempt_at <= p_now
              ORDER BY d.next_attempt_at
              LIMIT greatest(0, p_per_endpoint - (
                SELECT count(*) FROM ${SCHEMA}.deliveries f
                WHERE f.idempresa = l.idempresa AND f.endpoint_id = l.id AND f.leased_until > p_now))
            ) p
            ORDER BY p.next_attempt_at
            LIMIT p_limit
          ), claimed AS (
            UPDATE ${SCHEMA}.deliveries d
            SET attempts = d.attempts + 1, leased_until = p_now + p_lease, next_attempt_at = p_now + p_lease
            FROM picked WHERE d.idempresa = picked.idempresa AND d.id = picked.id
            RETURNING d.idempresa, d.id, d.attempts, d.leased_until, d.event_id, d.event_type, d.endpoint_id
          )
          SELECT c.idempresa, c.id, c.attempts, c.leased_until, c.event_id, c.event_type, ev.occurred_at,
            ev.data, c.endpoint_id, ep.url, ep.secret, ep.previous_secret, ep.previous_secret_until
          FROM claimed c
          JOIN ${SCHEMA}.events ev ON ev.idempresa = c.idempresa AND ev.id = c.event_id
          JOIN ${SCHEMA}.endpoints ep ON ep.idempresa = c.idempresa AND ep.id = c.endpoint_id
        $$;
        CREATE FUNCTION purge_events(p_before timestamptz) RETURNS bigint
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = ${SCHEMA}, public
        AS $$
          WITH gone AS (DELETE FROM ${SCHEMA}.events WHERE stored_at < p_before RETURNING 1)
          SELECT count(*) FROM gone
        $$;
        REVOKE ALL ON FUNCTION claim_deliveries(timestamptz, integer, integer, interval),
          purge_events(timestamptz) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION claim_deliveries(timestamptz, integer, integer, interval),
          purge_events(timestamptz) TO ${appRole};
      `)
    },
  },
  deliveryTraces(SCHEMA, APP_ROLE),
]
