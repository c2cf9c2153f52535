import { secureTenantTable, type Migration } from '@clinic/platform'

/**
 * `early_receipts` becomes a tenant table like the others: a company column leading its key, row-
 * level security, and the worker's side (apply_early_receipt) run as the service role under its
 * company's policy instead of as the owner.
 *
 * A receipt names only Twilio's sid, and an early one comes before any row records that sid: the
 * message it belongs to is one of the SMS being handed to Twilio (`sending`: claimed and committed
 * before the provider call). So apply_receipt, which stays cross-company on purpose (SECURITY
 * DEFINER), keeps the receipt under each company that has such an SMS; the worker that records the
 * sid finds its own company's copy. The others name a sid no message of theirs will ever carry and
 * go with the day-old receipts. With no SMS in `sending` no worker can record the sid any more
 * (a lost or failed send), so such a receipt is not kept.
 */
export function earlyReceiptsByCompany(schema: string, appRoleName: string, receiptLock: number): Migration {
  return {
    name: '0005_early_receipts_by_company',
    async up(knex, stack) {
      const appRole = stack.role(appRoleName)
      const sendingSms = `SELECT DISTINCT m.idempresa FROM ${schema}.messages m
        WHERE m.channel = 'sms' AND m.status = 'sending'`
      await knex.raw(`
        ALTER TABLE early_receipts DROP CONSTRAINT early_receipts_pkey;
        ALTER TABLE early_receipts ADD COLUMN idempresa integer;
        INSERT INTO early_receipts (idempresa, sid, status, error, received_at)
          SELECT c.idempresa, e.sid, e.status, e.error, e.received_at
          FROM early_receipts e CROSS JOIN (${sendingSms}) c
          WHERE e.idempresa IS NULL;
        DELETE FROM early_receipts WHERE idempresa IS NULL;
        ALTER TABLE early_receipts ALTER COLUMN idempresa SET NOT NULL, ADD PRIMARY KEY (idempresa, sid);
      `)
      await secureTenantTable(knex, 'early_receipts', { role: appRole, privileges: ['SELECT', 'DELETE'] })
      await knex.raw(`
        CREATE OR REPLACE FUNCTION apply_receipt(p_sid text, p_status text, p_error text) RETURNS SETOF messages
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = ${schema}, public
        AS $$
        BEGIN
          PERFORM pg_advisory_xact_lock(${receiptLock}, hashtext(p_sid));
          RETURN QUERY
            UPDATE ${schema}.messages m SET status = p_status,
              last_error = coalesce(p_error, m.last_error), updated_at = now(), version = m.version + 1
            WHERE m.provider_id = p_sid AND m.channel = 'sms' AND m.status = 'sent'
            RETURNING m.*;
          IF NOT FOUND AND NOT EXISTS (SELECT 1 FROM ${schema}.messages m WHERE m.provider_id = p_sid) THEN
            DELETE FROM ${schema}.early_receipts e WHERE e.received_at < now() - interval '1 day';
            INSERT INTO ${schema}.early_receipts (idempresa, sid, status, error)
              SELECT c.idempresa, p_sid, p_status, p_error FROM (${sendingSms}) c
              ON CONFLICT (idempresa, sid) DO NOTHING;
          END IF;
        END
        $$;
        -- The worker's finish calls it in its company's transaction, after recording the sid: the
        -- copy taken is the one of the company whose message now carries the sid (and the policy
        -- shows the service no other).
        CREATE OR REPLACE FUNCTION apply_early_receipt(p_sid text) RETURNS SETOF messages
        LANGUAGE plpgsql VOLATILE SECURITY INVOKER SET search_path = ${schema}, public
        AS $$
        DECLARE r ${schema}.early_receipts;
        BEGIN
          PERFORM pg_advisory_xact_lock(${receiptLock}, hashtext(p_sid));
          DELETE FROM ${schema}.early_receipts e USING ${schema}.messages m
            WHERE e.sid = p_sid AND m.idempresa = e.idempresa AND m.provider_id = p_sid
            RETURNING e.* INTO r;
          IF r.sid IS NULL THEN
            RETURN;
          END IF;
          RETURN QUERY
            UPDATE ${schema}.messages m SET status = r.status,
              last_error = coalesce(r.error, m.last_error), updated_at = now(), version = m.version + 1
            WHERE m.idempresa = r.idempresa AND m.provider_id = p_sid AND m.channel = 'sms' AND m.status = 'sent'
            RETURNING m.*;
        END
        $$;
      `)
    },
  }
}
