import { commonTables, ensureRole, type Migration } from '@clinic/platform'

export const SCHEMA = 'identity'
/**
 * What the gateway may do at run time: read identities, note a token's last use, write its access
 * events. Companies, centers, users and tokens are made and revoked by the admin CLI, with the
 * owner's credentials.
 */
export const APP_ROLE = 'clinic_gateway_app'

/**
 * The identity schema: companies, their centers, users and API tokens. Logins (usernames) are one
 * namespace across companies, so `users.username` is unique on its own; in a Citus cluster these
 * small tables are reference tables.
 */
export const migrations: Migration[] = [
  {
    name: '0001_identity',
    async up(knex) {
      await knex.raw(`
        CREATE TABLE companies (
          id integer PRIMARY KEY CHECK (id > 0),
          name text NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE TABLE centers (
          idempresa integer NOT NULL REFERENCES companies (id),
          code varchar(10) NOT NULL CHECK (code ~ '^[A-Za-z0-9_-]{1,10}$'),
          name text NOT NULL,
          created_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (idempresa, code)
        );
        CREATE TABLE users (
          idempresa integer NOT NULL REFERENCES companies (id),
          id uuid NOT NULL,
          username text NOT NULL CHECK (username ~ '^[A-Za-z0-9._@-]{1,64}$'),
          created_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (idempresa, id),
          UNIQUE (id)
        );
        CREATE UNIQUE INDEX users_username ON users (lower(username));
        CREATE TABLE api_tokens (
          idempresa integer NOT NULL,
          id uuid NOT NULL UNIQUE,
          user_id uuid NOT NULL,
          name text,
          lookup text NOT NULL,
          token_hash bytea NOT NULL,
          centers text[],
          expires_at timestamptz,
          revoked_at timestamptz,
          last_used_at timestamptz,
          created_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (idempresa, id),
          FOREIGN KEY (idempresa, user_id) REFERENCES users (idempresa, id)
        );
        CREATE INDEX api_tokens_lookup ON api_tokens (lookup);
      `)
      await commonTables.outbox(knex, SCHEMA)
    },
  },
  {
    name: '0002_gateway_role',
    async up(knex, stack) {
      const appRole = stack.role(APP_ROLE)
      await ensureRole(knex, appRole)
      await knex.raw(`
        GRANT USAGE ON SCHEMA ${SCHEMA} TO ${appRole};
        GRANT SELECT ON companies, centers, users, api_tokens TO ${appRole};
        GRANT UPDATE (last_used_at) ON api_tokens TO ${appRole};
        GRANT SELECT, INSERT, UPDATE, DELETE ON outbox TO ${appRole};
        GRANT USAGE ON SEQUENCE outbox_id_seq TO ${appRole};
      `)
    },
  },
  {
    // DESIGN.md section 13. NULL: every scope (the tokens made before, and those made without
    // --scopes). The list is written out here, as it was when this ran: a new scope is a new migration.
    name: '0003_token_scopes',
    async up(knex) {
      await knex.raw(`
        ALTER TABLE api_tokens ADD COLUMN scopes text[]
          CONSTRAINT api_tokens_scopes CHECK (
            scopes IS NULL OR (
              cardinality(scopes) > 0 AND scopes <@ ARRAY['patients:read', 'patients:write',
                'appointments:read', 'appointments:write', 'comms:send', 'comms:read', 'audit:read',
                'webhooks:manage', 'events:read']::text[]
            )
          );
      `)
    },
  },
  {
    // The clinical scopes (DESIGN.md sections 13 and 14). Written out as of this migration, as 0003.
    name: '0004_clinical_scopes',
    async up(knex) {
      await knex.raw(`
        ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scopes;
        ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scopes CHECK (
          scopes IS NULL OR (
            cardinality(scopes) > 0 AND scopes <@ ARRAY['patients:read', 'patients:write',
              'appointments:read', 'appointments:write', 'comms:send', 'comms:read', 'audit:read',
              'webhooks:manage', 'events:read', 'clinical:read', 'clinical:write', 'clinical:sign']::text[]
          )
        );
      `)
    },
  },
  {
    // The documents and consents scopes (DESIGN.md sections 13, 15 and 16), with every earlier one.
    name: '0005_documents_scopes',
    async up(knex) {
      await knex.raw(`
        ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scopes;
        ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scopes CHECK (
          scopes IS NULL OR (
            cardinality(scopes) > 0 AND scopes <@ ARRAY['patients:read', 'patients:write',
              'appointments:read', 'appointments:write', 'comms:send', 'comms:read', 'audit:read',
              'webhooks:manage', 'events:read', 'clinical:read', 'clinical:write', 'clinical:sign',
              'documents:read', 'documents:write', 'consents:read', 'consents:write']::text[]
          )
        );
      `)
    },
  },
  {
    // Scopes are declared in one place, packages/platform/services.json (issue 42): the admin CLI
    // refuses any other, and a stored scope the list no longer has grants nothing. The database keeps
    // their shape (<area>:<verb>, no NULL), no longer a copy of the list that each new scope restated.
    name: '0006_scopes_declared_once',
    async up(knex) {
      await knex.raw(`
        ALTER TABLE api_tokens DROP CONSTRAINT api_tokens_scopes;
        ALTER TABLE api_tokens ADD CONSTRAINT api_tokens_scopes CHECK (
          scopes IS NULL OR (
            cardinality(scopes) > 0 AND array_position(scopes, NULL) IS NULL
            AND array_to_string(scopes, ' ') ~ '^[a-z][a-z_]*:[a-z][a-z_]*( [a-z][a-z_]*:[a-z][a-z_]*)*$'
          )
        );
      `)
    },
  },
  {
    // FHIR Bulk Data export (DESIGN.md section 19, docs/fhir.md "Bulk Data export"): a job per
    // export, leased like every job (one running per company), and its NDJSON files in PostgreSQL
    // chunks, one per page the services answered, written in the same transaction as the job's
    // position: a killed process neither loses nor repeats a line. pg_read_all_stats: the job
    // waits until every transaction that began before its transactionTime has ended (it reads
    // pg_stat_activity's xact_start of every role), so the export and the next one from that time
    // see each change exactly once.
    name: '0007_fhir_exports',
    async up(knex, stack) {
      const appRole = stack.role(APP_ROLE)
      await knex.raw(`
        CREATE TABLE fhir_exports (
          id uuid PRIMARY KEY,
          idempresa integer NOT NULL REFERENCES companies (id),
          status text NOT NULL DEFAULT 'in-progress'
            CHECK (status IN ('in-progress', 'completed', 'failed')),
          level text NOT NULL CHECK (level IN ('system', 'patient', 'group')),
          group_id text,
          since timestamptz(3),
          types text[] NOT NULL,
          request text NOT NULL,
          base text NOT NULL,
          principal jsonb NOT NULL,
          request_id text NOT NULL,
          traceparent text,
          transaction_time timestamptz(3) NOT NULL,
          position jsonb NOT NULL,
          checkpoint integer NOT NULL DEFAULT 0,
          exported bigint NOT NULL DEFAULT 0,
          leased_by text,
          lease_until timestamptz,
          not_before timestamptz,
          error text,
          created_at timestamptz(3) NOT NULL DEFAULT now(),
          completed_at timestamptz(3)
        );
        CREATE UNIQUE INDEX fhir_exports_one_running ON fhir_exports (idempresa) WHERE status = 'in-progress';
        CREATE INDEX fhir_exports_due ON fhir_exports (created_at) WHERE status = 'in-progress';
        CREATE INDEX fhir_exports_done ON fhir_exports (completed_at) WHERE status <> 'in-progress';
        CREATE TABLE fhir_export_files (
          export_id uuid NOT NULL REFERENCES fhir_exports (id) ON DELETE CASCADE,
          seq integer NOT NULL,
          kind text NOT NULL CHECK (kind IN ('output', 'deleted', 'error')),
          type text NOT NULL,
          count integer NOT NULL DEFAULT 0,
          PRIMARY KEY (export_id, seq)
        );
        CREATE TABLE fhir_export_chunks (
          export_id uuid NOT NULL,
          file_seq integer NOT NULL,
          chunk integer NOT NULL,
          data bytea NOT NULL,
          PRIMARY KEY (export_id, file_seq, chunk),
          FOREIGN KEY (export_id, file_seq) REFERENCES fhir_export_files (export_id, seq) ON DELETE CASCADE
        );
        GRANT SELECT, INSERT, UPDATE, DELETE ON fhir_exports, fhir_export_files, fhir_export_chunks TO ${appRole};
        GRANT pg_read_all_stats TO ${appRole};
      `)
    },
  },
  {
    // An export's runs that failed in a row (a page the service would not answer, the database
    // away): retried with a growing wait, and failed at EXPORT_MAX_FAILURES instead of forever.
    name: '0008_fhir_export_failures',
    async up(knex) {
      await knex.raw(`ALTER TABLE fhir_exports ADD COLUMN failures integer NOT NULL DEFAULT 0`)
    },
  },
]
