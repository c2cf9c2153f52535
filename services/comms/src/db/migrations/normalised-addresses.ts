import type { Migration } from '@clinic/platform'

/**
 * Addresses in one form (domain/preference-store.ts normaliseAddress), and inbound SMS keywords
 * applied once each, in the order Twilio received them.
 *
 * Emails written before in another case are lower-cased: the messages' `recipient_address` (the
 * hourly per-recipient limit counts it, an inbound keyword finds its companies by it) and the
 * preferences. Two preferences of one company that now name one address keep the later decision.
 * Numbers were E.164 already (patients and the API accept nothing else).
 *
 * `sms_keywords`: every keyword message taken, by Twilio's MessageSid, with when Twilio received it
 * (`sent_at`). Numbers of every company, so no policy and no grant: only record_sms_keyword, a
 * SECURITY DEFINER function as set_consent_everywhere, reads and writes it.
 */
export function normalisedAddresses(schema: string, appRoleName: string, keywordLock: number): Migration {
  return {
    name: '0007_normalised_addresses_sms_keywords',
    async up(knex, stack) {
      const appRole = stack.role(appRoleName)
      // Every company's rows: the owner is outside the policies only while they are not forced
      // (a superuser owner is anyway), so they are lifted for these statements and put back.
      await knex.raw(`
        ALTER TABLE messages NO FORCE ROW LEVEL SECURITY;
        ALTER TABLE preferences NO FORCE ROW LEVEL SECURITY;
        UPDATE messages SET recipient_address = lower(recipient_address)
          WHERE channel = 'email' AND recipient_address <> lower(recipient_address);
        DELETE FROM preferences p USING preferences q
          WHERE p.channel = 'email' AND q.channel = 'email' AND p.idempresa = q.idempresa
            AND lower(p.address) = lower(q.address) AND p.address <> q.address
            AND (p.updated_at, p.address) < (q.updated_at, q.address);
        UPDATE preferences SET address = lower(address)
          WHERE channel = 'email' AND address <> lower(address);
        ALTER TABLE messages FORCE ROW LEVEL SECURITY;
        ALTER TABLE preferences FORCE ROW LEVEL SECURITY;

        CREATE TABLE sms_keywords (
          message_sid text PRIMARY KEY,
          sender text NOT NULL,
          sent_at timestamptz NOT NULL,
          opted_out boolean NOT NULL,
          received_at timestamptz NOT NULL DEFAULT now()
        );
        CREATE INDEX sms_keywords_sender ON sms_keywords (sender, sent_at DESC);
        -- 'duplicate': this MessageSid was taken before (a replay, or Twilio sending it again);
        -- 'stale': a keyword of the same sender that Twilio received later was taken already;
        -- 'apply' otherwise. Keywords of one sender queue on the lock until the caller commits, so
        -- two at once are judged one after the other. Equal instants (Twilio's are to the second)
        -- go in the order they arrive.
        CREATE FUNCTION record_sms_keyword(p_sid text, p_sender text, p_sent_at timestamptz,
          p_opted_out boolean)
        RETURNS text
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = ${schema}, public
        AS $$
        BEGIN
          PERFORM pg_advisory_xact_lock(${keywordLock}, hashtext(p_sender));
          INSERT INTO ${schema}.sms_keywords (message_sid, sender, sent_at, opted_out)
            VALUES (p_sid, p_sender, p_sent_at, p_opted_out)
            ON CONFLICT (message_sid) DO NOTHING;
          IF NOT FOUND THEN
            RETURN 'duplicate';
          END IF;
          IF EXISTS (SELECT 1 FROM ${schema}.sms_keywords k
                     WHERE k.sender = p_sender AND k.sent_at > p_sent_at) THEN
            RETURN 'stale';
          END IF;
          RETURN 'apply';
        END
        $$;
        REVOKE ALL ON FUNCTION record_sms_keyword(text, text, timestamptz, boolean) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION record_sms_keyword(text, text, timestamptz, boolean) TO ${appRole};
      `)
    },
  }
}
