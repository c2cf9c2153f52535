import type { Migration } from '@clinic/platform'

/**
 * A delivery keeps the W3C `traceparent` of what queued it (the consumer's handling of its event,
 * or the request that sent a test, a retry or a replay): each attempt is a span of that trace.
 * claim_deliveries hands it to the worker with the rest (the function of 0003 with one more
 * column; a function's result type cannot change in place, so it is made again and granted again).
 */
export function deliveryTraces(schema: string, appRoleName: string): Migration {
  return {
    name: '0004_delivery_traces',
    async up(knex, stack) {
      const appRole = stack.role(appRoleName)
      await knex.raw(`
        ALTER TABLE deliveries ADD COLUMN traceparent text;
        DROP FUNCTION claim_deliveries(timestamptz, integer, integer, interval);
        CREATE FUNCTION claim_deliveries(p_now timestamptz, p_limit integer, p_per_endpoint integer,
          p_lease interval)
        RETURNS TABLE (idempresa integer, id uuid, attempts integer, leased_until timestamptz,
          event_id uuid, event_type text, occurred_at timestamptz, data jsonb, endpoint_id uuid,
          url text, secret bytea, previous_secret bytea, previous_secret_until timestamptz,
          traceparent text)
        LANGUAGE sql VOLATILE SECURITY DEFINER SET search_path = ${schema}, public
        AS $$
          WITH ready AS (
            SELECT e.idempresa, e.id, o.oldest
            FROM ${schema}.endpoints e
            CROSS JOIN LATERAL (
              SELECT d.next_attempt_at AS oldest FROM ${schema}.deliveries d
              WHERE d.idempresa = e.idempresa AND d.endpoint_id = e.id AND d.status = 'pending'
              ORDER BY d.next_attempt_at
              LIMIT 1
            ) o
            WHERE e.status = 'enabled' AND o.oldest <= p_now
          ), locked AS (
            SELECT e.idempresa, e.id, r.oldest FROM ${schema}.endpoints e
            JOIN ready r ON r.idempresa = e.idempresa AND r.id = e.id
            ORDER BY r.oldest
            LIMIT p_limit
            FOR NO KEY UPDATE OF e SKIP LOCKED
          ), picked AS (
            SELECT p.idempresa, p.id, p.next_attempt_at FROM locked l CROSS JOIN LATERAL (
              SELECT d.idempresa, d.id, d.next_attempt_at FROM ${schema}.deliveries d
              WHERE d.idempresa = l.idempresa AND d.endpoint_id = l.id AND d.status = 'pending'
                AND d.next_attempt_at <= p_now
              ORDER BY d.next_attempt_at
              LIMIT greatest(0, p_per_endpoint - (
                SELECT count(*) FROM ${schema}.deliveries f
                WHERE f.idempresa = l.idempresa AND f.endpoint_id = l.id AND f.leased_until > p_now))
            ) p
            ORDER BY p.next_attempt_at
            LIMIT p_limit
          ), claimed AS (
            UPDATE ${schema}.deliveries d
            SET attempts = d.attempts + 1, leased_until = p_now + p_lease, next_attempt_at = p_now + p_lease
            FROM picked WHERE d.idempresa = picked.idempresa AND d.id = picked.id
            RETURNING d.idempresa, d.id, d.attempts, d.leased_until, d.event_id, d.event_type, d.endpoint_id,
              d.traceparent
          )
          SELECT c.idempresa, c.id, c.attempts, c.leased_until, c.event_id, c.event_type, ev.occurred_at,
            ev.data, c.endpoint_id, ep.url, ep.secret, ep.previous_secret, ep.previous_secret_until,
            c.traceparent
          FROM claimed c
          JOIN ${schema}.events ev ON ev.idempresa = c.idempresa AND ev.id = c.event_id
          JOIN ${schema}.endpoints ep ON ep.idempresa = c.idempresa AND ep.id = c.endpoint_id
        $$;
        REVOKE ALL ON FUNCTION claim_deliveries(timestamptz, integer, integer, interval) FROM PUBLIC;
        GRANT EXECUTE ON FUNCTION claim_deliveries(timestamptz, integer, integer, interval) TO ${appRole};
      `)
    },
  }
}
