import { readFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { eventTypes } from '@clinic/platform'
import { Webhook } from 'standardwebhooks'
import { post, waitFor, type FaultStack, type Tenant } from './harness'

/**
 * What the webhook fault scenarios need: loopback receivers that verify every delivery
 * (standardwebhooks) and count the 2xx answers per event, endpoints subscribed to them, and the
 * checker: every event the company produced was answered 2xx by every endpoint exactly once.
 */

/** services/webhooks/src/delivery/worker.ts: a dead worker's delivery is claimed again after it. */
export const LEASE_MS = 60_000
/** The final wait: a lease running out, then a retry (5 s at most in the fault stack) and its send. */
export const DELIVERIES_SETTLE_MS = LEASE_MS + 30_000

/** What the webhooks service delivers: the event catalogue (DESIGN.md section 10), no http.* */
export const CATALOGUE_TYPES = Object.keys(eventTypes).filter((t) =>
  /^(patient|appointment|practitioner|comms\.message)\./.test(t),
)

/** `up`: answers 200; `refuse`: not listening (connection refused); `reset`: takes each request, then destroys its socket. */
export type ReceiverMode = 'up' | 'refuse' | 'reset'

/** One loopback receiver per endpoint, on a port of its own that stays the same while it is down. */
export async function startReceiver(name: string) {
  const server = http.createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  let mode: ReceiverMode = 'up'
  const r = {
    name,
    url: `http://127.0.0.1:${port}/hooks/${name}`,
    /** The endpoint's signing secret and id, once subscribed. */
    secret: '',
    endpointId: '',
    /** webhook-id -> how many times it was answered 2xx; and the type its payload said. */
    acks: new Map<string, number>(),
    types: new Map<string, string>(),
    /** Requests that arrived (whatever the answer), and those whose socket was destroyed unanswered. */
    requests: 0,
    dropped: 0,
    /** Deliveries whose signature did not verify (answered 400). */
    badSignatures: [] as string[],
    /** Called in the tick each 2xx answer goes out. */
    onAck: undefined as ((id: string) => void) | undefined,
    get mode() {
      return mode
    },
    get acked() {
      return [...r.acks.values()].reduce((n, x) => n + x, 0)
    },
    async setMode(next: ReceiverMode) {
      if (next === 'refuse' && server.listening) {
        const closed = new Promise<void>((resolve) => server.close(() => resolve()))
        server.closeAllConnections() // kept-alive sockets too: a new attempt must be refused
        await closed
      }
      if (next !== 'refuse' && !server.listening)
        await waitFor(
          () =>
            new Promise<boolean>((resolve) => {
              const fail = () => resolve(false)
              server.once('error', fail)
              server.listen(port, '127.0.0.1', () => {
                server.off('error', fail)
                resolve(true)
              })
            }),
          { timeoutMs: 10_000, what: `receiver ${name} listening again on ${port}` },
        )
      mode = next
    },
    async close() {
      r.onAck = undefined
      if (!server.listening) return
      const closed = new Promise<void>((resolve) => server.close(() => resolve()))
      server.closeAllConnections()
      await closed
    },
  }
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      r.requests++
      if (mode === 'reset') {
        r.dropped++
        req.socket.destroy()
        return
      }
      const body = Buffer.concat(chunks).toString('utf8')
      const id = String(req.headers['webhook-id'])
      try {
        new Webhook(r.secret).verify(body, req.headers as Record<string, string>)
      } catch (err) {
        r.badSignatures.push(`${id}: ${(err as Error).message}`)
        res.writeHead(400).end()
        return
      }
      r.acks.set(id, (r.acks.get(id) ?? 0) + 1)
      r.types.set(id, (JSON.parse(body) as { type: string }).type)
      res.writeHead(200).end()
      r.onAck?.(id)
    })
  })
  return r
}
export type Receiver = Awaited<ReturnType<typeof startReceiver>>

/** An endpoint for each receiver, subscribed to every event type of the company. */
export async function subscribe(fs: FaultStack, t: Tenant, receivers: Receiver[]) {
  for (const r of receivers) {
    const a = await post(fs.info.api, '/webhooks/endpoints', t.token, `endpoint-${t.companyId}-${r.name}`, {
      url: r.url,
      event_types: ['*'],
      description: `fault receiver ${r.name}`,
    })
    if (a.status !== 201) throw new Error(`endpoint for ${r.name}: ${a.status} ${JSON.stringify(a.body)}`)
    r.secret = a.body.secret
    r.endpointId = a.body.id
  }
}

/** Resolves when every receiver has answered `n` more deliveries 2xx. */
export async function acksAfter(receivers: Receiver[], n: number, timeoutMs = 30_000) {
  const target = receivers.map((r) => r.acked + n)
  await waitFor(() => receivers.every((r, i) => r.acked >= target[i]!), {
    timeoutMs,
    what: `${n} more deliveries answered by each receiver`,
  })
}

/** Every event id in the company's change feed (GET /events, page by page), repeats kept. */
async function feedIds(fs: FaultStack, t: Tenant): Promise<string[]> {
  const ids: string[] = []
  for (let after = ''; ;) {
    const res = await fetch(`${fs.info.api}/events?limit=100${after && `&after=${after}`}`, {
      headers: { 'x-service-token': t.token },
      signal: AbortSignal.timeout(10_000),
    })
    if (res.status !== 200) throw new Error(`GET /events: ${res.status} ${await res.text()}`)
    const page = (await res.json()) as { data: Array<{ id: string }>; meta: { next: string } }
    if (!page.data.length) return ids
    ids.push(...page.data.map((e) => e.id))
    after = encodeURIComponent(page.meta.next)
  }
}

export interface WebhookVerdict {
  fault: string
  /** Catalogue events of the company on the audit trail (what it produced). */
  events: number
  endpoints: number
  /** (event, endpoint) pairs answered 2xx at least once. */
  delivered: number
  /** Pairs never answered 2xx (**must be 0**). */
  lost: number
  /** Pairs answered 2xx more than once, outside `allowedRepeats` (**must be 0**). */
  duplicated: number
  /** Pairs answered 2xx more than once that were leased (an attempt in flight) at a SIGKILL. */
  repeated_in_flight: number
  /** Events of the audit trail missing from the change feed, and ids twice in it (**must be 0**). */
  feed_missing: number
  feed_repeated: number
  /** Answered ids that are no event of the company, or whose payload type is not the event's (**must be 0**). */
  unknown: number
  bad_signatures: number
  /** Deliveries given up (status failed) (**must be 0**). */
  failed: number
  /** Attempts the service made in all, and deliveries that needed more than one. */
  attempts: number
  retried: number
  settle_s: number
}

/** The company's catalogue events on the audit trail: id -> type. */
async function producedEvents(fs: FaultStack, t: Tenant) {
  const rows = await fs.sql<{ id: string; action: string }>(
    'SELECT id::text AS id, action FROM audit.events WHERE idempresa = $1 AND action = ANY($2)',
    [t.companyId, CATALOGUE_TYPES],
  )
  return new Map(rows.map((r) => [r.id, r.action]))
}

/** Nothing left to settle: outboxes published, the trail and the webhooks store agree, nothing pending, all answered. */
async function settled(fs: FaultStack, t: Tenant, receivers: Receiver[]) {
  const [{ unpublished, stored, pending }] = await fs.sql(
    `SELECT (SELECT count(*) FROM patients.outbox WHERE published_at IS NULL)
          + (SELECT count(*) FROM appointments.outbox WHERE published_at IS NULL)
          + (SELECT count(*) FROM comms.outbox WHERE published_at IS NULL) AS unpublished,
            (SELECT count(*)::int FROM webhooks.events WHERE idempresa = $1) AS stored,
            (SELECT count(*)::int FROM webhooks.deliveries WHERE idempresa = $1 AND status = 'pending') AS pending`,
    [t.companyId],
  )
  const produced = await producedEvents(fs, t)
  return (
    Number(unpublished) === 0 &&
    stored === produced.size &&
    pending === 0 &&
    receivers.every((r) => [...produced.keys()].every((id) => r.acks.has(id))) &&
    // And the other way: audit has recorded every event a receiver got. After a database cut audit
    // and webhooks catch up at their own pace, so equal counts can hide one's event behind the other's.
    receivers.every((r) => [...r.acks.keys()].every((id) => produced.has(id)))
  )
}

/**
 * The checker: waits (up to `settleMs`) until every event the company produced has been answered
 * by every receiver, then counts. `allowedRepeats`: `<event id>/<endpoint id>` pairs whose attempt
 * was in flight at a SIGKILL (its 2xx may have been lost with the worker, so it may come twice).
 */
export async function checkWebhooks(
  fs: FaultStack,
  t: Tenant,
  receivers: Receiver[],
  fault: string,
  o: { allowedRepeats?: Set<string>; settleMs?: number } = {},
): Promise<WebhookVerdict> {
  const started = Date.now()
  await waitFor(() => settled(fs, t, receivers), {
    timeoutMs: o.settleMs ?? DELIVERIES_SETTLE_MS,
    intervalMs: 500,
    what: 'every event answered by every receiver',
  }).catch(() => undefined) // counted as lost below
  const settleS = Math.round((Date.now() - started) / 100) / 10
  const produced = await producedEvents(fs, t)
  const feed = await feedIds(fs, t)
  const inFeed = new Set(feed)
  const [db] = await fs.sql(
    `SELECT count(*) FILTER (WHERE status = 'failed')::int AS failed,
            coalesce(sum(attempts), 0)::int AS attempts,
            count(*) FILTER (WHERE attempts > 1)::int AS retried
       FROM webhooks.deliveries WHERE idempresa = $1`,
    [t.companyId],
  )
  const v: WebhookVerdict = {
    fault,
    events: produced.size,
    endpoints: receivers.length,
    delivered: 0,
    lost: 0,
    duplicated: 0,
    repeated_in_flight: 0,
    feed_missing: [...produced.keys()].filter((id) => !inFeed.has(id)).length,
    feed_repeated: feed.length - inFeed.size,
    unknown: 0,
    bad_signatures: receivers.reduce((n, r) => n + r.badSignatures.length, 0),
    failed: db.failed,
    attempts: db.attempts,
    retried: db.retried,
    settle_s: settleS,
  }
  for (const r of receivers) {
    for (const id of produced.keys()) {
      const n = r.acks.get(id) ?? 0
      if (n === 0) v.lost++
      else v.delivered++
      if (n > 1 && o.allowedRepeats?.has(`${id}/${r.endpointId}`)) v.repeated_in_flight++
      else if (n > 1) v.duplicated++
    }
    for (const [id, type] of r.types) if (produced.get(id) !== type) v.unknown++
  }
  return v
}

/** The (event, endpoint) pairs leased right now: attempts in flight (or a dead worker's). */
export async function leasedPairs(fs: FaultStack, t: Tenant): Promise<Set<string>> {
  const rows = await fs.sql<{ pair: string }>(
    `SELECT event_id::text || '/' || endpoint_id::text AS pair FROM webhooks.deliveries
      WHERE idempresa = $1 AND leased_until IS NOT NULL`,
    [t.companyId],
  )
  return new Set(rows.map((r) => r.pair))
}

/** The lines of a service's log (this run's file) that contain `text`, parsed (pino JSON). */
export function logLines(fs: FaultStack, service: string, text: string): Array<Record<string, any>> {
  let log = ''
  try {
    log = readFileSync(fs.info.logFiles[service]!, 'utf8')
  } catch {
    /* nothing logged yet */
  }
  return log
    .split('\n')
    .filter((l) => l.includes(text))
    .map((l) => JSON.parse(l) as Record<string, any>)
}
