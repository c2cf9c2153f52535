import { secureTenantTable, type Migration } from '@clinic/platform'

/**
 * Documents and their bytes. Bytes are content-addressed per company: `blobs` names one content
 * (its sha256) and the upload that first stored it; `blob_chunks` holds that content in order, in
 * pieces small enough for one statement each. An upload writes its chunks under its own upload id
 * before its hash is known (the bytes stream); at the end it either becomes the company's blob of
 * that sha256 or, when the company already holds those bytes, its chunks are dropped. Every table
 * leads its keys with idempresa and is under row-level security (DESIGN section 9).
 */
export const documentsTables = (appRoleName: string): Migration => ({
  name: '0002_documents',
  async up(knex, stack) {
    const appRole = stack.role(appRoleName)
    await knex.raw(`
      CREATE TABLE documents (
        idempresa integer NOT NULL,
        id uuid NOT NULL,
        patient_id uuid NOT NULL,
        category text NOT NULL CHECK (category IN
          ('referral', 'report', 'consent', 'imaging', 'prescription', 'identity', 'other')),
        title varchar(200),
        codalmacen varchar(10),
        exam_id uuid,
        appointment_id uuid,
        filename varchar(255) NOT NULL,
        content_type text NOT NULL,
        size_bytes bigint NOT NULL,
        sha256 char(64) NOT NULL,
        uploaded_by text NOT NULL,
        status text NOT NULL DEFAULT 'available' CHECK (status IN ('available', 'deleted')),
        deleted_at timestamptz(3),
        created_at timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
        updated_at timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
        version integer NOT NULL DEFAULT 1,
        PRIMARY KEY (idempresa, id)
      );
      CREATE INDEX documents_by_created ON documents (idempresa, created_at DESC, id DESC);
      CREATE INDEX documents_by_patient ON documents (idempresa, patient_id, created_at DESC);
      CREATE INDEX documents_by_sha ON documents (idempresa, sha256) WHERE status = 'available';
      CREATE TABLE blobs (
        idempresa integer NOT NULL,
        sha256 char(64) NOT NULL,
        upload_id uuid NOT NULL,
        size_bytes bigint NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
        PRIMARY KEY (idempresa, sha256)
      );
      CREATE TABLE blob_chunks (
        idempresa integer NOT NULL,
        upload_id uuid NOT NULL,
        seq integer NOT NULL,
        data bytea NOT NULL,
        created_at timestamptz(3) NOT NULL DEFAULT date_trunc('milliseconds', now()),
        PRIMARY KEY (idempresa, upload_id, seq)
      );
      -- Large values stay out of line without a second compression pass: images and PDFs are
      -- compressed already.
      ALTER TABLE blob_chunks ALTER COLUMN data SET STORAGE EXTERNAL;
    `)
    const all = ['SELECT', 'INSERT', 'UPDATE', 'DELETE'] as const
    await secureTenantTable(knex, 'documents', { role: appRole, privileges: ['SELECT', 'INSERT', 'UPDATE'] })
    await secureTenantTable(knex, 'blobs', { role: appRole, privileges: all })
    await secureTenantTable(knex, 'blob_chunks', { role: appRole, privileges: all })
  },
})
