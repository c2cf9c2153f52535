import type { Migration } from '@clinic/platform'

/**
 * Recurring series and the waitlist (DESIGN.md section 20).
 *
 * A series is a row of its own and each occurrence an ordinary appointment that names it
 * (`series_id`, `occurrence`, `recurrence_id`: the planned start), so every endpoint, reminder and
 * event sees occurrences as appointments. A waitlist entry waits for a freed slot; an offer holds
 * that slot (a calendar hold whose id is the offer's) until it is answered or expires.
 *
 * Freed time is found by the database, whatever frees it: a trigger on the calendar queues a
 * `freed` job for every span that leaves it (a cancellation, a move, a released or swept hold)
 * while the company has an entry waiting at that center. The jobs are rows claimed with a lease
 * (claim_waitlist_jobs), the one job design of the services.
 */
export function seriesWaitlistMigration(schema: string, appRoleName: string, tenant: string): Migration {
  return {
    name: '0009_series_waitlist',
    async up(knex, stack) {
      const appRole = stack.role(appRoleName)
      await knex.raw(`
        CREATE TABLE series (
          idempresa integer NOT NULL,
          id uuid NOT NULL,
          patient_id uuid NOT NULL,
          practitioner varchar(100) NOT NULL,
          codalmacen varchar(10) NOT NULL,
          time_zone varchar(64) NOT NULL,
          -- The first occurrence's local wall time ("2027-03-22T09:30") in time_zone.
          start varchar(16) NOT NULL,
          duration_minutes smallint NOT NULL CHECK (duration_minutes BETWEEN 5 AND 720),
          rrule varchar(500) NOT NULL,
          exdates jsonb NOT NULL DEFAULT '[]',
          reason varchar(500),
          notes text,
          status text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'ended', 'cancelled')),
          previous_series_id uuid,
          -- The series a split (scope following) continued this one with.
          next_series_id uuid,
          -- Occurrences not booked when the series was made, with why: [{occurrence, starts_at, reason}].
          skipped jsonb NOT NULL DEFAULT '[]',
          created_at timestamptz(3) NOT NULL DEFAULT now(),
          updated_at timestamptz(3) NOT NULL DEFAULT now(),
          version integer NOT NULL DEFAULT 1,
          PRIMARY KEY (idempresa, id)
        );
        CREATE INDEX series_by_update ON series (idempresa, updated_at, id);

        ALTER TABLE appointments
          ADD COLUMN series_id uuid,
          ADD COLUMN occurrence smallint,
          ADD COLUMN recurrence_id timestamptz(3),
          ADD COLUMN waitlist_entry_id uuid,
          -- An occurrence changed on its own (scope this): a re-plan of its series (scope all) leaves it.
          ADD COLUMN series_exception boolean NOT NULL DEFAULT false,
          ADD CONSTRAINT appointments_series CHECK ((series_id IS NULL) = (occurrence IS NULL)
            AND (series_id IS NULL) = (recurrence_id IS NULL));
        -- One appointment per occurrence of a series: a split or a retry never books one twice.
        CREATE UNIQUE INDEX appointments_by_series ON appointments (idempresa, series_id, occurrence)
          WHERE series_id IS NOT NULL;
        -- One booking per waitlist entry, whatever races.
        CREATE UNIQUE INDEX appointments_by_waitlist_entry ON appointments (idempresa, waitlist_entry_id)
          WHERE waitlist_entry_id IS NOT NULL;

        CREATE TABLE waitlist_entries (
          idempresa integer NOT NULL,
          id uuid NOT NULL,
          patient_id uuid NOT NULL,
          codalmacen varchar(10) NOT NULL,
          -- null: any practitioner.
          practitioner varchar(100),
          duration_minutes smallint NOT NULL CHECK (duration_minutes BETWEEN 5 AND 720),
          earliest timestamptz(3),
          latest timestamptz(3),
          -- ISO weekdays (1 Monday .. 7 Sunday) in time_zone; null: any.
          days smallint[],
          -- Local "HH:MM" the slot must start in [from, to) (both or neither).
          times_from varchar(5),
          times_to varchar(5),
          time_zone varchar(64) NOT NULL,
          priority integer NOT NULL DEFAULT 0,
          channel text CHECK (channel IN ('email', 'sms')),
          notes text,
          status text NOT NULL DEFAULT 'waiting'
            CHECK (status IN ('waiting', 'offered', 'booked', 'expired', 'cancelled')),
          appointment_id uuid,
          created_at timestamptz(3) NOT NULL DEFAULT now(),
          updated_at timestamptz(3) NOT NULL DEFAULT now(),
          version integer NOT NULL DEFAULT 1,
          PRIMARY KEY (idempresa, id),
          CHECK (latest IS NULL OR earliest IS NULL OR latest > earliest),
          CHECK ((times_from IS NULL) = (times_to IS NULL)),
          CHECK ((status = 'booked') = (appointment_id IS NOT NULL))
        );
        -- The matching order: priority (highest first), then age.
        CREATE INDEX waitlist_waiting ON waitlist_entries (idempresa, codalmacen, priority DESC, created_at, id)
          WHERE status = 'waiting';
        CREATE INDEX waitlist_by_created ON waitlist_entries (idempresa, created_at, id);
        CREATE INDEX waitlist_latest ON waitlist_entries (latest) WHERE status = 'waiting';

        CREATE TABLE waitlist_offers (
          idempresa integer NOT NULL,
          -- Also the id of the calendar hold that keeps the slot while the offer is open.
          id uuid NOT NULL,
          entry_id uuid NOT NULL,
          patient_id uuid NOT NULL,
          practitioner varchar(100) NOT NULL,
          codalmacen varchar(10) NOT NULL,
          starts_at timestamptz(3) NOT NULL,
          ends_at timestamptz(3) NOT NULL,
          time_zone varchar(64) NOT NULL,
          -- When the patient is told (the end of the company's quiet hours, or at once).
          sends_at timestamptz(3) NOT NULL,
          expires_at timestamptz(3) NOT NULL,
          state text NOT NULL DEFAULT 'open'
            CHECK (state IN ('open', 'accepted', 'declined', 'taken', 'expired', 'withdrawn')),
          appointment_id uuid,
          traceparent text,
          created_at timestamptz(3) NOT NULL DEFAULT now(),
          answered_at timestamptz(3),
          PRIMARY KEY (idempresa, id),
          FOREIGN KEY (idempresa, entry_id) REFERENCES waitlist_entries (idempresa, id)
        );
        -- One open offer per entry; a slot's offers (declined ones are not offered to that entry again).
        CREATE UNIQUE INDEX waitlist_offer_open ON waitlist_offers (idempresa, entry_id) WHERE state = 'open';
        CREATE INDEX waitlist_offers_by_entry ON waitlist_offers (idempresa, entry_id, starts_at);
        CREATE INDEX waitlist_offers_open_expiry ON waitlist_offers (expires_at) WHERE state = 'open';

        -- The waitlist's jobs: a freed span to offer, or an offer to announce once quiet hours end.
        CREATE TABLE waitlist_jobs (
          id bigserial PRIMARY KEY,
          idempresa integer NOT NULL,
          kind text NOT NULL CHECK (kind IN ('freed', 'announce')),
          practitioner varchar(100),
          codalmacen varchar(10),
          during tstzrange,
          offer_id uuid,
          due_at timestamptz(3) NOT NULL DEFAULT now(),
          attempts integer NOT NULL DEFAULT 0,
          traceparent text,
          created_at timestamptz(3) NOT NULL DEFAULT now(),
          CHECK ((kind = 'freed') = (during IS NOT NULL AND practitioner IS NOT NULL AND codalmacen IS NOT NULL)),
          CHECK ((kind = 'announce') = (offer_id IS NOT NULL))
        );
        CREATE INDEX waitlist_jobs_due ON waitlist_jobs (due_at);

        -- Time that leaves the calendar while an entry waits at its center is a freed span to offer.
        -- A hold that leaves before its offer is answered or expires was taken by the staff (released,
        -- or turned into their booking with hold_id): the offer says so and its entry waits again.
        CREATE FUNCTION waitlist_freed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          IF OLD.kind = 'hold' AND OLD.expires_at > now() THEN
            WITH taken AS (
              UPDATE ${schema}.waitlist_offers SET state = 'taken', answered_at = now()
              WHERE idempresa = OLD.idempresa AND id = OLD.id AND state = 'open'
              RETURNING entry_id
            )
            UPDATE ${schema}.waitlist_entries w SET status = 'waiting', version = w.version + 1, updated_at = now()
            FROM taken WHERE w.idempresa = OLD.idempresa AND w.id = taken.entry_id AND w.status = 'offered';
          END IF;
          IF upper(OLD.during) > now() AND EXISTS (
            SELECT 1 FROM ${schema}.waitlist_entries w
            WHERE w.idempresa = OLD.idempresa AND w.codalmacen = OLD.codalmacen AND w.status = 'waiting'
          ) THEN
            INSERT INTO ${schema}.waitlist_jobs (idempresa, kind, practitioner, codalmacen, during)
            VALUES (OLD.idempresa, 'freed', OLD.practitioner, OLD.codalmacen, OLD.during);
            -- The workers LISTEN: the job runs at the commit, not at the next poll.
            PERFORM pg_notify('appointments_waitlist', '');
          END IF;
          RETURN NULL;
        END $$;
        CREATE TRIGGER calendar_freed AFTER DELETE ON calendar
          FOR EACH ROW EXECUTE FUNCTION waitlist_freed();

        -- New working hours free time too: the next 8 weeks of the practitioner at each of its centers.
        CREATE FUNCTION waitlist_new_hours() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          INSERT INTO ${schema}.waitlist_jobs (idempresa, kind, practitioner, codalmacen, during)
          SELECT DISTINCT NEW.idempresa, 'freed', NEW.id, h.codalmacen,
                 tstzrange(now(), now() + interval '56 days')
          FROM jsonb_to_recordset(NEW.working_hours) AS h (codalmacen text)
          WHERE EXISTS (SELECT 1 FROM ${schema}.waitlist_entries w
                        WHERE w.idempresa = NEW.idempresa AND w.codalmacen = h.codalmacen AND w.status = 'waiting');
          PERFORM pg_notify('appointments_waitlist', '');
          RETURN NULL;
        END $$;
        CREATE TRIGGER practitioner_new_hours AFTER UPDATE OF working_hours, active ON practitioners
          FOR EACH ROW WHEN (NEW.active AND (OLD.working_hours IS DISTINCT FROM NEW.working_hours OR NOT OLD.active))
          EXECUTE FUNCTION waitlist_new_hours();

        -- Cross-company on purpose (as comms' claim_reminders): the worker claims every company's
        -- due jobs with a lease; a worker that dies holding them loses none.
        CREATE FUNCTION claim_waitlist_jobs(p_now timestamptz, p_limit integer, p_lease interval)
        RETURNS SETOF waitlist_jobs
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = ${schema}, public
        AS $$
          UPDATE ${schema}.waitlist_jobs j
          SET attempts = j.attempts + 1, due_at = p_now + p_lease
          FROM (
            SELECT id FROM ${schema}.waitlist_jobs WHERE due_at <= p_now
            ORDER BY due_at LIMIT p_limit FOR UPDATE SKIP LOCKED
          ) due
          WHERE j.id = due.id
          RETURNING j.*
        $$;
        -- The companies with holds or open offers past p_now: the worker sweeps each (its own
        -- transaction, under row-level security), which frees their time.
        CREATE FUNCTION waitlist_lapsed_companies(p_now timestamptz)
        RETURNS SETOF integer
        LANGUAGE sql STABLE SECURITY DEFINER SET search_path = ${schema}, public
        AS $$
          SELECT idempresa FROM ${schema}.waitlist_offers WHERE state = 'open' AND expires_at <= p_now
          UNION
          SELECT idempresa FROM ${schema}.waitlist_entries WHERE status = 'waiting' AND latest <= p_now
          UNION
          -- Of the companies with an entry waiting, those with a hold past its expiry (each through
          -- calendar_hold_expiry, the company's own range).
          SELECT w.idempresa FROM (
            SELECT DISTINCT idempresa FROM ${schema}.waitlist_entries WHERE status = 'waiting'
          ) w
          WHERE EXISTS (SELECT 1 FROM ${schema}.calendar c
                        WHERE c.idempresa = w.idempresa AND c.kind = 'hold' AND c.expires_at <= p_now)
        $$;
        REVOKE ALL ON FUNCTION claim_waitlist_jobs(timestamptz, integer, interval),
          waitlist_lapsed_companies(timestamptz) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION claim_waitlist_jobs(timestamptz, integer, interval),
          waitlist_lapsed_companies(timestamptz) TO ${appRole};
      `)
      await knex.raw(`
        GRANT SELECT, INSERT, UPDATE ON series, waitlist_entries, waitlist_offers TO ${appRole};
        GRANT SELECT, INSERT, UPDATE, DELETE ON waitlist_jobs TO ${appRole};
        GRANT USAGE ON SEQUENCE waitlist_jobs_id_seq TO ${appRole}`)
      for (const table of ['series', 'waitlist_entries', 'waitlist_offers', 'waitlist_jobs'])
        await knex.raw(`
          ALTER TABLE ${table} ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY;
          CREATE POLICY tenant_isolation ON ${table} USING (${tenant}) WITH CHECK (${tenant})`)
    },
  }
}
