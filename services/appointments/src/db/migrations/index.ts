import { baseMigration, commonTables, ensureRole, isUniqueViolation, type Migration } from '@clinic/platform'
import { calendarMigration } from './calendar'
import { seriesWaitlistMigration } from './series-waitlist'

export const SCHEMA = 'appointments'
/** The role the service runs as (SET ROLE after connect); row-level security applies to it. */
export const APP_ROLE = 'clinic_appointments_app'
/** Counter rows per (company, center, status): a few slots, so busy centers do not queue on one row. */
export const COUNTER_SLOTS = 4

const TENANT = `idempresa = nullif(current_setting('app.idempresa', true), '')::integer`
/**
 * What the service role may do per table, and whether row-level security scopes the table to the
 * company in `app.idempresa`. The outbox relay publishes every company's events, so the outbox
 * (and the consumer's processed_events) have no policy.
 */
const SERVICE_ROLE_TABLES: Array<[table: string, privileges: string, tenant: boolean]> = [
  ['appointments', 'SELECT, INSERT, UPDATE', true],
  ['appointment_counts', 'SELECT, INSERT, UPDATE', true],
  ['idempotency_keys', 'SELECT, INSERT, UPDATE, DELETE', true],
  ['outbox', 'SELECT, INSERT, UPDATE, DELETE', false],
  ['processed_events', 'SELECT, INSERT', false],
]
/** Statuses that hold their slot; cancelled and no-show free it. Repeated in both constraints. */
const HOLDS_SLOT = `status NOT IN ('cancelled', 'no_show')`

/** Applied in order; never edited after they land. */
export const migrations: Migration[] = [
  baseMigration(SCHEMA),
  {
    name: '0002_appointments',
    async up(knex) {
      // Equality on integer, text and uuid inside a GiST exclusion constraint needs btree_gist.
      // Database-wide: another schema's migration (or test file) may create it at the same moment.
      await knex.raw('CREATE EXTENSION IF NOT EXISTS btree_gist WITH SCHEMA public').catch((err) => {
        if (!isUniqueViolation(err)) throw err
      })
      await knex.raw(`
        CREATE TABLE appointments (
          idempresa integer NOT NULL,
          id uuid NOT NULL,
          patient_id uuid NOT NULL,
          codalmacen varchar(10) NOT NULL,
          practitioner varchar(100) NOT NULL,
          -- Millisecond precision: what JSON carries, so keyset cursors round-trip exactly.
          starts_at timestamptz(3) NOT NULL,
          ends_at timestamptz(3) NOT NULL,
          time_zone varchar(64) NOT NULL DEFAULT 'Europe/Madrid',
          reason varchar(500),
          notes text,
          status text NOT NULL DEFAULT 'scheduled'
            CHECK (status IN ('scheduled', 'confirmed', 'checked_in', 'completed', 'cancelled', 'no_show')),
          cancellation_reason varchar(500),
          checked_in_at timestamptz(3),
          created_at timestamptz(3) NOT NULL DEFAULT now(),
          updated_at timestamptz(3) NOT NULL DEFAULT now(),
          version integer NOT NULL DEFAULT 1,
          PRIMARY KEY (idempresa, id),
          CONSTRAINT appointments_length CHECK (ends_at > starts_at AND ends_at <= starts_at + interval '12 hours'),
          CONSTRAINT appointments_cancellation_reason CHECK (status <> 'cancelled' OR cancellation_reason IS NOT NULL),
          CONSTRAINT appointments_checked_in_at
            CHECK ((checked_in_at IS NOT NULL) = (status IN ('checked_in', 'completed'))),
          -- No double booking, whatever the application does: half-open ranges, so 09:00-09:30 and
          -- 09:30-10:00 do not overlap. Cancelled and no-show appointments free their slot.
          CONSTRAINT appointments_practitioner_overlap EXCLUDE USING gist
            (idempresa WITH =, practitioner WITH =, tstzrange(starts_at, ends_at) WITH &&) WHERE (${HOLDS_SLOT}),
          CONSTRAINT appointments_patient_overlap EXCLUDE USING gist
            (idempresa WITH =, patient_id WITH =, tstzrange(starts_at, ends_at) WITH &&) WHERE (${HOLDS_SLOT})
        );
        -- A center's day (the front desk's most frequent call) is a range scan of the first; the
        -- others serve company-wide lists and the patient and practitioner filters. id breaks ties
        -- for the keyset cursor; -starts_at reads the same indexes backwards.
        CREATE INDEX appointments_center_day ON appointments (idempresa, codalmacen, starts_at, id);
        CREATE INDEX appointments_by_start ON appointments (idempresa, starts_at, id);
        CREATE INDEX appointments_by_patient ON appointments (idempresa, patient_id, starts_at, id);
        CREATE INDEX appointments_by_practitioner ON appointments (idempresa, practitioner, starts_at, id);

        -- Exact meta.total without count(*) for lists filtered by center and status only.
        CREATE TABLE appointment_counts (
          idempresa integer NOT NULL,
          codalmacen varchar(10) NOT NULL,
          status text NOT NULL,
          slot smallint NOT NULL,
          n bigint NOT NULL,
          PRIMARY KEY (idempresa, codalmacen, status, slot)
        );
        -- One upsert per changed row, in key order (a move between two counters never deadlocks
        -- against the opposite move). OLD is null on INSERT and NEW on DELETE.
        CREATE FUNCTION appointment_counts_track() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO ${SCHEMA}.appointment_counts AS c (idempresa, codalmacen, status, slot, n)
          SELECT d.idempresa, d.codalmacen, d.status, floor(random() * ${COUNTER_SLOTS}), sum(d.n)
          FROM (
            SELECT OLD.idempresa, OLD.codalmacen, OLD.status, -1 WHERE TG_OP <> 'INSERT'
            UNION ALL
            SELECT NEW.idempresa, NEW.codalmacen, NEW.status, 1 WHERE TG_OP <> 'DELETE'
          ) AS d (idempresa, codalmacen, status, n)
          GROUP BY d.idempresa, d.codalmacen, d.status HAVING sum(d.n) <> 0
          ORDER BY d.idempresa, d.codalmacen, d.status
          ON CONFLICT (idempresa, codalmacen, status, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
          RETURN NULL;
        END $$;
        CREATE TRIGGER appointment_counts_insert_delete AFTER INSERT OR DELETE ON appointments
          FOR EACH ROW EXECUTE FUNCTION appointment_counts_track();
        CREATE TRIGGER appointment_counts_update AFTER UPDATE OF codalmacen, status ON appointments
          FOR EACH ROW WHEN (OLD.codalmacen IS DISTINCT FROM NEW.codalmacen OR OLD.status IS DISTINCT FROM NEW.status)
          EXECUTE FUNCTION appointment_counts_track();
      `)
    },
  },
  {
    name: '0003_row_level_security',
    async up(knex, stack) {
      const appRole = stack.role(APP_ROLE)
      await ensureRole(knex, appRole)
      await knex.raw(`GRANT USAGE ON SCHEMA ${SCHEMA} TO ${appRole};
        GRANT USAGE ON SEQUENCE outbox_id_seq TO ${appRole}`)
      for (const [table, privileges, tenant] of SERVICE_ROLE_TABLES) {
        await knex.raw(`GRANT ${privileges} ON ${table} TO ${appRole}`)
        if (tenant)
          await knex.raw(`
            ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
            CREATE POLICY tenant_isolation ON ${table} USING (${TENANT}) WITH CHECK (${TENANT})`)
      }
    },
  },
  {
    // Keys per token: databases migrated before 0001 made them per token.
    name: '0004_idempotency_per_token',
    async up(knex) {
      await commonTables.idempotencyKeysPerToken(knex)
    },
  },
  calendarMigration(SCHEMA, APP_ROLE, TENANT),
  {
    // Availability's index range on the calendar, usable by the service role. Under row-level
    // security PostgreSQL only puts leakproof conditions into an index scan, and lower(anyrange)
    // is not leakproof: calendar_by_start (on lower(during)) was never used, every availability
    // statement read the whole calendar. A stored copy of lower(during) is compared with
    // timestamptz operators, which are leakproof.
    name: '0006_calendar_starts_at',
    async up(knex) {
      await knex.raw(`
        ALTER TABLE calendar ADD COLUMN starts_at timestamptz GENERATED ALWAYS AS (lower(during)) STORED;
        CREATE INDEX calendar_by_starts_at ON calendar (idempresa, starts_at);
        DROP INDEX calendar_by_start`)
    },
  },
  {
    // A claim's own statements (the purge of expired holds before it, the conflict a 409 explains)
    // read one practitioner's calendar near a time. With only leakproof conditions reaching an index
    // scan under row-level security, they read every claim the practitioner ever had through
    // calendar_overlap's (idempresa, practitioner), or every expired hold of the company; with this
    // index and starts_at bounds (a claim lasts at most 12 h), the few claims near that time.
    name: '0007_calendar_by_practitioner',
    async up(knex) {
      await knex.raw('CREATE INDEX calendar_by_practitioner ON calendar (idempresa, practitioner, starts_at)')
    },
  },
  {
    // FHIR searches (DESIGN.md section 19) page by last update, then id (fhirSearchPage): an index
    // range per company, as patients' 0007.
    name: '0008_fhir_search',
    async up(knex) {
      await knex.raw(`
        CREATE INDEX appointments_by_update ON appointments (idempresa, updated_at, id);
        CREATE INDEX practitioners_by_update ON practitioners (idempresa, updated_at, id)`)
    },
  },
  seriesWaitlistMigration(SCHEMA, APP_ROLE, TENANT),
]
