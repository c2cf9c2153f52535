import { secureTenantTable, type Migration } from '@clinic/platform'

/**
 * Exams, their findings (one table, a `kind` column: the kinds share every rule of the record,
 * live or superseded, who and when; each kind's own fields are a jsonb checked by the service),
 * the exam's history (one row per version) and prescriptions. Every key leads with the company,
 * every table is under row-level security.
 */
export const clinicalTables = (appRoleName: string): Migration => ({
  name: '0002_clinical',
  async up(knex, stack) {
    const appRole = stack.role(appRoleName)
    await knex.raw(`
      CREATE TABLE exams (
        idempresa integer NOT NULL,
        id uuid NOT NULL,
        patient_id uuid NOT NULL,
        codalmacen varchar(10) NOT NULL,
        practitioner varchar(100) NOT NULL,
        appointment_id uuid,
        performed_at timestamptz(3) NOT NULL,
        kind text NOT NULL DEFAULT 'comprehensive'
          CHECK (kind IN ('comprehensive', 'follow_up', 'post_op', 'screening', 'contact_lens')),
        chief_complaint text,
        notes text,
        status text NOT NULL DEFAULT 'draft' CHECK (status IN ('draft', 'signed')),
        signed_at timestamptz(3),
        signed_by varchar(200),
        amendments integer NOT NULL DEFAULT 0,
        created_at timestamptz(3) NOT NULL DEFAULT now(),
        updated_at timestamptz(3) NOT NULL DEFAULT now(),
        version integer NOT NULL DEFAULT 1,
        PRIMARY KEY (idempresa, id),
        CONSTRAINT exams_signed CHECK ((status = 'signed') = (signed_at IS NOT NULL))
      );
      CREATE INDEX exams_by_performed ON exams (idempresa, performed_at, id);
      CREATE INDEX exams_by_patient ON exams (idempresa, patient_id, performed_at, id);

      CREATE TABLE findings (
        idempresa integer NOT NULL,
        id uuid NOT NULL,
        exam_id uuid NOT NULL,
        kind text NOT NULL CHECK (kind IN ('visual_acuity', 'iop', 'refraction', 'diagnoses')),
        eye text NOT NULL CHECK (eye IN ('right', 'left', 'both', 'not_applicable')),
        data jsonb NOT NULL,
        state text NOT NULL DEFAULT 'live' CHECK (state IN ('live', 'superseded')),
        -- The exam's version that added it, and the one that superseded it.
        added_in integer NOT NULL,
        superseded_in integer,
        recorded_at timestamptz(3) NOT NULL DEFAULT now(),
        recorded_by varchar(200) NOT NULL,
        -- Copied from the exam when it is signed (it never changes after), so that a patient's
        -- trend is one range of one index, without a join: the patient, the exam's center and
        -- time, and the instant the measurement sorts by (IOP: measured_at; else performed_at).
        patient_id uuid NOT NULL,
        codalmacen varchar(10) NOT NULL,
        performed_at timestamptz(3),
        taken_at timestamptz(3),
        signed boolean NOT NULL DEFAULT false,
        PRIMARY KEY (idempresa, id),
        FOREIGN KEY (idempresa, exam_id) REFERENCES exams (idempresa, id),
        CONSTRAINT findings_superseded CHECK ((state = 'superseded') = (superseded_in IS NOT NULL))
      );
      CREATE INDEX findings_by_exam ON findings (idempresa, exam_id, recorded_at, id);
      -- The trends endpoint: one patient's one eye's IOP (or acuity) over years, oldest first.
      CREATE INDEX findings_trend ON findings (idempresa, patient_id, kind, eye, taken_at, id)
        WHERE state = 'live' AND signed;

      CREATE TABLE exam_history (
        idempresa integer NOT NULL,
        exam_id uuid NOT NULL,
        version integer NOT NULL,
        action text NOT NULL,
        at timestamptz(3) NOT NULL DEFAULT now(),
        user_id varchar(200) NOT NULL,
        username varchar(200) NOT NULL,
        reason text,
        fields text[] NOT NULL DEFAULT '{}',
        added uuid[] NOT NULL DEFAULT '{}',
        superseded uuid[] NOT NULL DEFAULT '{}',
        PRIMARY KEY (idempresa, exam_id, version),
        FOREIGN KEY (idempresa, exam_id) REFERENCES exams (idempresa, id)
      );

      CREATE TABLE prescriptions (
        idempresa integer NOT NULL,
        id uuid NOT NULL,
        exam_id uuid NOT NULL,
        patient_id uuid NOT NULL,
        codalmacen varchar(10) NOT NULL,
        type text NOT NULL CHECK (type IN ('spectacles', 'contact_lenses')),
        lenses jsonb NOT NULL,
        valid_until date NOT NULL,
        notes text,
        issued_at timestamptz(3) NOT NULL DEFAULT now(),
        issued_by varchar(200) NOT NULL,
        version integer NOT NULL DEFAULT 1,
        PRIMARY KEY (idempresa, id),
        FOREIGN KEY (idempresa, exam_id) REFERENCES exams (idempresa, id)
      );
      CREATE INDEX prescriptions_by_exam ON prescriptions (idempresa, exam_id, issued_at, id);
    `)
    // A signed record is never updated nor deleted by the service: findings only change state
    // (superseded) and get their trend columns at signing; history and prescriptions are append-only.
    await secureTenantTable(knex, 'exams', { role: appRole, privileges: ['SELECT', 'INSERT', 'UPDATE'] })
    await secureTenantTable(knex, 'findings', {
      role: appRole,
      privileges: ['SELECT', 'INSERT', 'UPDATE', 'DELETE'],
    })
    await secureTenantTable(knex, 'exam_history', { role: appRole, privileges: ['SELECT', 'INSERT'] })
    await secureTenantTable(knex, 'prescriptions', { role: appRole, privileges: ['SELECT', 'INSERT'] })
  },
})
