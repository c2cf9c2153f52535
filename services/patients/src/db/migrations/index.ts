import { commonTables, ensureRole, isUniqueViolation, type Migration } from '@clinic/platform'
import type { Knex } from 'knex'

export const SCHEMA = 'patients'
/** The role the service runs as (SET ROLE after connect); row-level security applies to it. */
export const APP_ROLE = 'clinic_patients_app'
/** Counter rows per (company, center) of migration 0002: spreading writes over a few slots keeps inserts of one busy center from queueing on one row. */
export const COUNTER_SLOTS = 4
/**
 * The slots since migration 0006: with 4, a pool's ten concurrent creates in one center queued on
 * the counter rows' locks (and the waits cost PostgreSQL CPU); a list sums a few more tiny rows.
 */
export const COUNTER_SLOTS_SPREAD = 32

const TENANT = `idempresa = nullif(current_setting('app.idempresa', true), '')::integer`

async function createExtension(knex: Knex, name: string) {
  // Database-wide; another schema's migration may create it at the same moment.
  await knex.raw(`CREATE EXTENSION IF NOT EXISTS ${name} WITH SCHEMA public`).catch((err) => {
    if (!isUniqueViolation(err)) throw err
  })
}

/** Applied in order; never edited after they land. */
/**
 * The count triggers' functions, each adding to one of `slots` rows per center picked at random (so
 * concurrent writers of a center seldom wait on one row). Made by 0002, remade with more slots by 0006.
 */
const countFunctions = (slots: number) => `
        CREATE OR REPLACE FUNCTION patient_counts_insert() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE s smallint := floor(random() * ${slots});
        BEGIN
          INSERT INTO ${SCHEMA}.patient_counts AS c (idempresa, codalmacen, slot, n)
          SELECT idempresa, coalesce(codalmacen, ''), s, count(*) FROM new_rows
          GROUP BY 1, 2 ORDER BY 1, 2
          ON CONFLICT (idempresa, codalmacen, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
          RETURN NULL;
        END $$;
        CREATE OR REPLACE FUNCTION patient_counts_update() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE s smallint := floor(random() * ${slots});
        BEGIN
          INSERT INTO ${SCHEMA}.patient_counts AS c (idempresa, codalmacen, slot, n)
          SELECT idempresa, center, s, sum(d) FROM (
            SELECT idempresa, coalesce(codalmacen, '') AS center, 1 AS d FROM new_rows
            UNION ALL
            SELECT idempresa, coalesce(codalmacen, ''), -1 FROM old_rows
          ) x
          GROUP BY idempresa, center HAVING sum(d) <> 0
          ORDER BY idempresa, center
          ON CONFLICT (idempresa, codalmacen, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
          RETURN NULL;
        END $$;
        CREATE OR REPLACE FUNCTION patient_counts_delete() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE s smallint := floor(random() * ${slots});
        BEGIN
          INSERT INTO ${SCHEMA}.patient_counts AS c (idempresa, codalmacen, slot, n)
          SELECT idempresa, coalesce(codalmacen, ''), s, -count(*) FROM old_rows
          GROUP BY 1, 2 ORDER BY 1, 2
          ON CONFLICT (idempresa, codalmacen, slot) DO UPDATE SET n = c.n + EXCLUDED.n;
          RETURN NULL;
        END $$;
`

export const migrations: Migration[] = [
  {
    name: '0001_base',
    async up(knex) {
      await commonTables.outbox(knex, SCHEMA)
      await commonTables.idempotencyKeys(knex)
    },
  },
  {
    name: '0002_patients',
    async up(knex) {
      await createExtension(knex, 'pg_trgm')
      await createExtension(knex, 'btree_gin')
      await knex.raw(`
        CREATE TABLE patients (
          idempresa integer NOT NULL,
          id uuid NOT NULL,
          codalmacen varchar(10),
          first_name text COLLATE "es-x-icu" NOT NULL,
          last_name text COLLATE "es-x-icu" NOT NULL,
          birth_date date NOT NULL,
          sex text CHECK (sex IN ('female', 'male', 'other', 'unknown')),
          national_id varchar(32),
          email varchar(254),
          phone varchar(16),
          address jsonb,
          preferred_channel text CHECK (preferred_channel IN ('email', 'sms')),
          language varchar(35) NOT NULL DEFAULT 'es',
          requires_legal_guardian boolean NOT NULL DEFAULT false,
          guardian jsonb,
          notes text,
          -- Millisecond precision: the -created_at cursor carries the value through JSON exactly.
          created_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
          updated_at timestamptz NOT NULL DEFAULT date_trunc('milliseconds', now()),
          version integer NOT NULL DEFAULT 1,
          PRIMARY KEY (idempresa, id),
          CHECK (NOT requires_legal_guardian OR (guardian->>'name' IS NOT NULL AND
            (coalesce(guardian->>'email', '') <> '' OR coalesce(guardian->>'phone', '') <> '')))
        );
        CREATE UNIQUE INDEX patients_national_id ON patients (idempresa, national_id) WHERE national_id IS NOT NULL;
        -- Lists: every sort, company-wide and per center, with the id tie-breaker of the keyset cursor.
        CREATE INDEX patients_by_name ON patients (idempresa, last_name, first_name, id);
        CREATE INDEX patients_center_by_name ON patients (idempresa, codalmacen, last_name, first_name, id);
        CREATE INDEX patients_by_created ON patients (idempresa, created_at DESC, id DESC);
        CREATE INDEX patients_center_by_created ON patients (idempresa, codalmacen, created_at DESC, id DESC);
        -- q: substring of "first last first" (either name order), case-insensitive, within one company.
        CREATE INDEX patients_name_trgm ON patients
          USING gin (idempresa, (first_name || ' ' || last_name || ' ' || first_name) gin_trgm_ops);

        -- Exact meta.total without count(*): rows per (company, center, slot), '' for no center,
        -- kept by statement triggers in the same transaction as the change.
        CREATE TABLE patient_counts (
          idempresa integer NOT NULL,
          codalmacen varchar(10) NOT NULL,
          slot smallint NOT NULL,
          n bigint NOT NULL,
          PRIMARY KEY (idempresa, codalmacen, slot)
        );

      `)
      // A transition table exists only for the events that define it, so one trigger per event.
      await knex.raw(`
        ${countFunctions(COUNTER_SLOTS)}
        CREATE TRIGGER patient_counts_insert AFTER INSERT ON patients
          REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION patient_counts_insert();
        CREATE TRIGGER patient_counts_update AFTER UPDATE ON patients
          REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION patient_counts_update();
        CREATE TRIGGER patient_counts_delete AFTER DELETE ON patients
          REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION patient_counts_delete();
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
        GRANT SELECT, INSERT, UPDATE ON patients, patient_counts TO ${appRole};
        GRANT SELECT, INSERT, UPDATE, DELETE ON idempotency_keys TO ${appRole};
        -- The outbox relay reads every company's pending events, so the outbox has no policy.
        GRANT SELECT, INSERT, UPDATE, DELETE ON outbox TO ${appRole};
        GRANT USAGE ON SEQUENCE outbox_id_seq TO ${appRole};
      `)
      for (const table of ['patients', 'patient_counts', 'idempotency_keys'])
        await knex.raw(`
          ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY;
          ALTER TABLE ${table} FORCE ROW LEVEL SECURITY;
          CREATE POLICY tenant_isolation ON ${table} USING (${TENANT}) WITH CHECK (${TENANT});
        `)
    },
  },
  {
    name: '0004_name_search',
    async up(knex, stack) {
      const appRole = stack.role(APP_ROLE)
      // Under row-level security the planner may not push a non-leakproof qual (ILIKE, ||) into an
      // index scan, so `q` fell back to scanning the whole company. This function runs as its owner
      // (the migration role, which bypasses RLS as a superuser or BYPASSRLS role) and so can use the
      // trigram index; it filters by the same app.idempresa setting the policies use, so the second
      // wall still holds. Run by an owner subject to RLS it stays correct, only slower.
      await knex.raw(`
        CREATE FUNCTION search_patients(pattern text, exact text) RETURNS SETOF patients
        LANGUAGE sql STABLE SECURITY DEFINER ROWS 1000
        SET search_path = ${SCHEMA}, public
        AS $$
          SELECT * FROM ${SCHEMA}.patients
          WHERE idempresa = nullif(current_setting('app.idempresa', true), '')::integer
            AND ((first_name || ' ' || last_name || ' ' || first_name) ILIKE pattern OR national_id = exact)
        $$;
        REVOKE ALL ON FUNCTION search_patients(text, text) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION search_patients(text, text) TO ${appRole};
      `)
    },
  },
  {
    name: '0005_idempotency_per_token',
    async up(knex) {
      // Keys were per company, so another user of the company could replay a stored answer.
      await commonTables.idempotencyKeysPerToken(knex)
    },
  },
  {
    name: '0006_counter_slots_spread',
    async up(knex) {
      // The count triggers of 0002, the same but for the number of slots (COUNTER_SLOTS_SPREAD).
      // Existing rows keep their slots: a total is the sum over whatever slots a center has.
      await knex.raw(countFunctions(COUNTER_SLOTS_SPREAD))
    },
  },
  {
    name: '0007_fhir_search',
    async up(knex) {
      // FHIR searches (DESIGN.md section 19) page by last update; the center-limited ones by center too.
      await knex.raw(`
        CREATE INDEX patients_by_updated ON patients (idempresa, updated_at, id);
        CREATE INDEX patients_center_by_updated ON patients (idempresa, codalmacen, updated_at, id);
      `)
    },
  },
]
