import type { Migration } from '@clinic/platform'

/**
 * Practitioners, time off and the calendar (DESIGN.md section 11).
 *
 * The calendar holds every span of time a practitioner is taken: each appointment that holds its
 * slot (kept by a trigger on `appointments`) and each hold. One exclusion constraint on it refuses
 * any overlap of two of them, so a hold blocks a booking exactly as an appointment does, and a race
 * between holds and bookings is decided by the database, not by a read-then-write check.
 *
 * An expired hold blocks nothing even before anything removes it: every write that claims time
 * first deletes the expired holds of that practitioner that overlap it (under the calendar's
 * advisory lock), and every read compares `expires_at` with the clock. Each new hold also sweeps a
 * few of the company's other expired holds away. No timer is needed.
 */
export function calendarMigration(schema: string, appRoleName: string, tenant: string): Migration {
  return {
    name: '0005_practitioners_calendar',
    async up(knex, stack) {
      const appRole = stack.role(appRoleName)
      await knex.raw(`
        CREATE TABLE practitioners (
          idempresa integer NOT NULL,
          id varchar(64) NOT NULL CHECK (id ~ '^[a-z0-9][a-z0-9-]{0,63}$'),
          name varchar(200) NOT NULL,
          time_zone varchar(64) NOT NULL DEFAULT 'Europe/Madrid',
          slot_minutes smallint NOT NULL DEFAULT 20 CHECK (slot_minutes BETWEEN 5 AND 240 AND slot_minutes % 5 = 0),
          -- [{codalmacen, weekday, start "HH:MM", end "HH:MM"}] in time_zone; checked by the service.
          working_hours jsonb NOT NULL DEFAULT '[]',
          active boolean NOT NULL DEFAULT true,
          created_at timestamptz(3) NOT NULL DEFAULT now(),
          updated_at timestamptz(3) NOT NULL DEFAULT now(),
          version integer NOT NULL DEFAULT 1,
          PRIMARY KEY (idempresa, id)
        );

        CREATE TABLE time_off (
          idempresa integer NOT NULL,
          id uuid NOT NULL,
          practitioner varchar(64) NOT NULL,
          starts_at timestamptz(3) NOT NULL,
          ends_at timestamptz(3) NOT NULL,
          reason varchar(500),
          created_at timestamptz(3) NOT NULL DEFAULT now(),
          PRIMARY KEY (idempresa, id),
          FOREIGN KEY (idempresa, practitioner) REFERENCES practitioners (idempresa, id),
          CHECK (ends_at > starts_at)
        );
        CREATE INDEX time_off_by_practitioner ON time_off USING gist
          (idempresa, practitioner, tstzrange(starts_at, ends_at));

        CREATE TABLE calendar (
          idempresa integer NOT NULL,
          -- The appointment's id, or the hold's.
          id uuid NOT NULL,
          kind text NOT NULL CHECK (kind IN ('appointment', 'hold')),
          practitioner varchar(100) NOT NULL,
          codalmacen varchar(10) NOT NULL,
          during tstzrange NOT NULL,
          patient_id uuid,
          expires_at timestamptz(3),
          created_at timestamptz(3) NOT NULL DEFAULT now(),
          PRIMARY KEY (idempresa, id),
          CHECK ((kind = 'hold') = (expires_at IS NOT NULL)),
          CHECK (NOT isempty(during) AND NOT lower_inf(during) AND NOT upper_inf(during)),
          -- As appointments: at most 12 h (availability's index range relies on it).
          CHECK (upper(during) <= lower(during) + interval '12 hours'),
          CONSTRAINT calendar_overlap EXCLUDE USING gist
            (idempresa WITH =, practitioner WITH =, during WITH &&)
        );
        -- Availability reads a company's claims near a stretch of time, every practitioner at once:
        -- a claim lasts at most 12 h, so those meeting [from, to) start in [from - 12 h, to).
        CREATE INDEX calendar_by_start ON calendar (idempresa, lower(during));
        -- Each new hold sweeps away some of the company's expired ones.
        CREATE INDEX calendar_hold_expiry ON calendar (idempresa, expires_at) WHERE kind = 'hold';

        -- The slot of every appointment that holds one, whatever writes it.
        CREATE FUNCTION calendar_track() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF TG_OP = 'UPDATE' THEN
            DELETE FROM ${schema}.calendar WHERE idempresa = OLD.idempresa AND id = OLD.id;
          END IF;
          IF NEW.status NOT IN ('cancelled', 'no_show') THEN
            INSERT INTO ${schema}.calendar (idempresa, id, kind, practitioner, codalmacen, during, patient_id)
            VALUES (NEW.idempresa, NEW.id, 'appointment', NEW.practitioner, NEW.codalmacen,
                    tstzrange(NEW.starts_at, NEW.ends_at), NEW.patient_id);
          END IF;
          RETURN NULL;
        END $$;
        CREATE TRIGGER calendar_insert AFTER INSERT ON appointments
          FOR EACH ROW EXECUTE FUNCTION calendar_track();
        CREATE TRIGGER calendar_update AFTER UPDATE OF practitioner, codalmacen, starts_at, ends_at, status
          ON appointments FOR EACH ROW
          WHEN ((OLD.practitioner, OLD.codalmacen, OLD.starts_at, OLD.ends_at, OLD.status)
                IS DISTINCT FROM (NEW.practitioner, NEW.codalmacen, NEW.starts_at, NEW.ends_at, NEW.status))
          EXECUTE FUNCTION calendar_track();

        -- The appointments of databases migrated before: the owner reads them past its own policy.
        ALTER TABLE appointments NO FORCE ROW LEVEL SECURITY;
        INSERT INTO calendar (idempresa, id, kind, practitioner, codalmacen, during, patient_id)
          SELECT idempresa, id, 'appointment', practitioner, codalmacen, tstzrange(starts_at, ends_at), patient_id
          FROM appointments WHERE status NOT IN ('cancelled', 'no_show');
        ALTER TABLE appointments FORCE ROW LEVEL SECURITY;
        -- The calendar's constraint is now the one that keeps a practitioner to one thing at a time.
        ALTER TABLE appointments DROP CONSTRAINT appointments_practitioner_overlap;

        /*
         * The working windows of hours p_hours (the practitioner's working_hours) in zone p_tz that
         * meet [p_from, p_to): each local day's "start".."end" turned into instants in that zone, so
         * 09:00-14:00 stays 09:00-14:00 local on both sides of a daylight-saving change. An SQL
         * function PostgreSQL inlines into the statements that call it.
         */
        CREATE FUNCTION working_windows(p_hours jsonb, p_tz text, p_from timestamptz, p_to timestamptz)
        RETURNS TABLE (codalmacen text, during tstzrange)
        LANGUAGE sql STABLE AS $$
          SELECT w.codalmacen, w.during FROM (
            SELECT h.codalmacen,
                   tstzrange((d::date + h.start::interval) AT TIME ZONE p_tz,
                             (d::date + h."end"::interval) AT TIME ZONE p_tz) AS during
            FROM jsonb_to_recordset(p_hours) AS h (codalmacen text, weekday int, start text, "end" text)
            CROSS JOIN LATERAL generate_series((p_from AT TIME ZONE p_tz)::date - 1,
                                               (p_to AT TIME ZONE p_tz)::date, interval '1 day') AS d
            WHERE extract(isodow FROM d) = h.weekday
          ) w
          WHERE w.during && tstzrange(p_from, p_to)
        $$;
      `)
      await knex.raw(`GRANT SELECT, INSERT, UPDATE ON practitioners TO ${appRole};
        GRANT SELECT, INSERT, DELETE ON time_off TO ${appRole};
        GRANT SELECT, INSERT, UPDATE, DELETE ON calendar TO ${appRole};
        GRANT EXECUTE ON FUNCTION working_windows(jsonb, text, timestamptz, timestamptz) TO ${appRole}`)
      for (const table of ['practitioners', 'time_off', 'calendar'])
        await knex.raw(`
          ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
          CREATE POLICY tenant_isolation ON ${table} USING (${tenant}) WITH CHECK (${tenant})`)
    },
  }
}
