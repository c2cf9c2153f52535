import { secureTenantTable, type Migration } from '@clinic/platform'

/**
 * Consent templates (versioned per key and language, never changed once written) and consents,
 * which freeze the template's version and text hash when asked for. Nothing here is ever deleted:
 * a refusal, a withdrawal and an expiry are statuses. `due_consents` lists, across companies, the
 * pending consents past their expiry for the expiry worker (owner's rights: row-level security
 * would show it none); each is then expired in its own company's transaction.
 */
export const consentsTables = (schema: string, appRoleName: string): Migration => ({
  name: '0003_consents',
  async up(knex, stack) {
    const appRole = stack.role(appRoleName)
    await knex.raw(`
      CREATE TABLE consent_templates (
        idempresa integer NOT NULL,
        id uuid NOT NULL,
        key varchar(64) NOT NULL,
        language varchar(35) NOT NULL,
        version integer NOT NULL,
        title varchar(200) NOT NULL,
        body text NOT NULL,
        text_sha256 char(64) NOT NULL,
        codalmacen varchar(10),
        created_at timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
        PRIMARY KEY (idempresa, id),
        UNIQUE (idempresa, key, language, version)
      );
      CREATE TABLE consents (
        idempresa integer NOT NULL,
        id uuid NOT NULL,
        patient_id uuid NOT NULL,
        template_id uuid NOT NULL,
        template_key varchar(64) NOT NULL,
        language varchar(35) NOT NULL,
        template_version integer NOT NULL,
        text_sha256 char(64) NOT NULL,
        signer_role text NOT NULL CHECK (signer_role IN ('patient', 'guardian')),
        status text NOT NULL DEFAULT 'pending'
          CHECK (status IN ('pending', 'granted', 'refused', 'withdrawn', 'expired')),
        expires_at timestamptz(3) NOT NULL,
        evidence jsonb,
        document_id uuid,
        withdrawn_at timestamptz(3),
        withdrawal_reason varchar(500),
        withdrawal_signer varchar(200),
        appointment_id uuid,
        exam_id uuid,
        codalmacen varchar(10),
        link_id uuid NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
        updated_at timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
        version integer NOT NULL DEFAULT 1,
        PRIMARY KEY (idempresa, id),
        FOREIGN KEY (idempresa, template_id) REFERENCES consent_templates
      );
      CREATE INDEX consents_by_created ON consents (idempresa, created_at DESC, id DESC);
      CREATE INDEX consents_by_patient ON consents (idempresa, patient_id);
      CREATE INDEX consents_due ON consents (expires_at) WHERE status = 'pending';

      CREATE FUNCTION due_consents(p_now timestamptz, p_limit integer)
      RETURNS TABLE (idempresa integer, id uuid)
      LANGUAGE sql STABLE SECURITY DEFINER SET search_path = ${schema}, public
      AS $$
        SELECT c.idempresa, c.id FROM ${schema}.consents c
        WHERE c.status = 'pending' AND c.expires_at <= p_now
        ORDER BY c.expires_at LIMIT p_limit
      $$;
      REVOKE ALL ON FUNCTION due_consents(timestamptz, integer) FROM PUBLIC;
      GRANT EXECUTE ON FUNCTION due_consents(timestamptz, integer) TO ${appRole};
    `)
    await secureTenantTable(knex, 'consent_templates', { role: appRole, privileges: ['SELECT', 'INSERT'] })
    await secureTenantTable(knex, 'consents', { role: appRole, privileges: ['SELECT', 'INSERT', 'UPDATE'] })
  },
})
