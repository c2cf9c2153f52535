import type { Migration } from '@clinic/platform'

/** Notified on every insert into `messages`: wakes the delivery workers (a poll covers a lost one). */
export const DELIVERY_CHANNEL = 'comms_delivery'

/**
 * A message row is its own delivery job, run by the platform's job runner as reminders are: due at
 * `next_attempt_at`, claimed (queued -> sending) by `claim_messages`, put back with a later
 * `next_attempt_at` after a transient failure. Replaces the `comms.delivery` queue and its `.retry`
 * delay queue: a message queued before this migration is a row due at once.
 */
export function messageDeliveryJobs(schema: string, appRoleName: string): Migration {
  return {
    name: '0006_message_delivery_jobs',
    async up(knex, stack) {
      const appRole = stack.role(appRoleName)
      await knex.raw(`
        -- '-infinity': a new message is due before any clock a worker may run on (tests and demos
        -- move comms' clock; the database's own now() is not it). \`cause\`: who queued it and in which
        -- request, for the sent or failed event (its queued event carried them to the worker before).
        ALTER TABLE messages
          ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT '-infinity',
          ADD COLUMN cause jsonb NOT NULL DEFAULT '{}';
        CREATE INDEX messages_due ON messages (next_attempt_at, id) WHERE status = 'queued';
        CREATE FUNCTION messages_notify() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN PERFORM pg_notify('${DELIVERY_CHANNEL}', ''); RETURN NULL; END $$;
        CREATE TRIGGER messages_notify AFTER INSERT ON messages
          FOR EACH STATEMENT EXECUTE FUNCTION messages_notify();
        -- Cross-company on purpose, as claim_reminders: every company's due messages. The claim is the
        -- at-most-once line: committed before the provider is called, never undone by a lease
        -- (a row left sending is failed by fail_stale_sending, not sent again).
        CREATE FUNCTION claim_messages(p_now timestamptz, p_limit integer)
        RETURNS SETOF messages
        LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = ${schema}, public
        AS $$
        BEGIN
          RETURN QUERY EXECUTE '
            UPDATE ${schema}.messages m
            SET status = ''sending'', attempts = m.attempts + 1, claimed_at = now(), updated_at = now(),
              version = m.version + 1
            FROM (
              SELECT idempresa, id FROM ${schema}.messages
              WHERE status = ''queued'' AND next_attempt_at <= $1
              ORDER BY next_attempt_at, id
              LIMIT $2
              FOR UPDATE SKIP LOCKED
            ) due
            WHERE m.idempresa = due.idempresa AND m.id = due.id
            RETURNING m.*' USING p_now, p_limit;
        END
        $$;
        REVOKE ALL ON FUNCTION claim_messages(timestamptz, integer) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION claim_messages(timestamptz, integer) TO ${appRole};
      `)
    },
  }
}
