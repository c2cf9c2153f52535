import { purgeEvents } from '../../src/db/repositories/feed-repository'
import { appointmentCreated, principal, startWebhooks, type Webhooks } from '../helpers'

let w: Webhooks
/** What the service logged, line by line. */
const logged: Array<Record<string, unknown>> = []
beforeAll(async () => {
  w = await startWebhooks({ logTo: { write: (line) => void logged.push(JSON.parse(line)) } })
})
afterAll(() => w.close())

type Page = {
  data: Array<{ id: string; type: string; timestamp: string; data: Record<string, unknown> }>
  meta: { next: string }
}
const feed = async (p: ReturnType<typeof principal>, query = '') => {
  const res = await w.as(p)('GET', `/events${query}`)
  return Object.assign(res.json<Page>(), {
    status: res.statusCode,
    code: res.json().code as string | undefined,
  })
}

test('the feed gives a company its events in order, page by page, with filters', async () => {
  const p = principal()
  const other = principal()
  const events = Array.from({ length: 5 }, (_, i) => appointmentCreated(p.companyId, i % 2 ? 'ALM2' : 'ALM1'))
  await w.publish(events.slice(0, 3))
  await w.publish([appointmentCreated(other.companyId)])
  await w.publish(events.slice(3))
  const first = await feed(p, '?limit=2')
  expect(first.data.map((e) => e.id)).toEqual(events.slice(0, 2).map((e) => e.id))
  expect(first.data[0]).toMatchObject({ type: 'appointment.created', timestamp: events[0]!.time })
  expect(first.data[0]!.data).toMatchObject({
    id: events[0]!.subject,
    resource_type: 'appointment',
    version: 1,
  })
  const rest = await feed(p, `?after=${first.meta.next}`)
  expect(rest.data.map((e) => e.id)).toEqual(events.slice(2).map((e) => e.id))
  const empty = await feed(p, `?after=${rest.meta.next}`)
  expect(empty.data).toEqual([])
  expect(empty.meta.next).toBe(rest.meta.next)
  expect((await feed(p, '?codalmacen=ALM2')).data.map((e) => e.id)).toEqual([events[1]!.id, events[3]!.id])
  expect((await feed(p, '?types=appointment.updated')).data).toEqual([])
  const limited = principal({ companyId: p.companyId, allowedCenters: ['ALM1'] })
  expect((await feed(limited)).data.map((e) => e.id)).toEqual([0, 2, 4].map((i) => events[i]!.id))
  expect((await feed(other)).data).toHaveLength(1)
  expect((await feed(principal())).data).toEqual([])
})

test('a batch of two companies: each gets its own feed numbers and deliveries, one statement per company', async () => {
  const a = principal()
  const b = principal()
  const endpointOf = async (p: ReturnType<typeof principal>) => {
    const res = await w.as(p)('POST', '/webhooks/endpoints', {
      url: 'http://receiver.test/hook',
      event_types: ['appointment.created'],
    })
    expect(res.statusCode).toBe(201)
    return res.json<{ id: string }>().id
  }
  const [epA, epB] = [await endpointOf(a), await endpointOf(b)]
  const ofA = [
    appointmentCreated(a.companyId),
    appointmentCreated(a.companyId),
    appointmentCreated(a.companyId),
  ]
  const ofB = [appointmentCreated(b.companyId, 'ALM2')]
  const sent: string[] = []
  const onQuery = (q: { sql: string }) => void sent.push(q.sql)
  w.knex.on('query', onQuery)
  await w.publish([ofA[0]!, ofB[0]!, ofA[1]!, ofA[2]!])
  w.knex.off('query', onQuery)
  // Per company the feed statement and the deliveries (the worker's own statements left out).
  const ours = sent.flatMap((q) =>
    q.includes('INSERT INTO feed_heads')
      ? ['feed']
      : q.includes('INSERT INTO deliveries')
        ? ['deliveries']
        : /set_config|pg_notify|FROM endpoints|INSERT INTO events/.test(q)
          ? ['other']
          : [],
  )
  expect(ours).toEqual(['feed', 'deliveries', 'feed', 'deliveries'])
  const seqs = await w
    .owner('events')
    .whereIn(
      'id',
      [...ofA, ...ofB].map((e) => e.id),
    )
    .orderBy(['idempresa', 'seq'])
    .select('idempresa', 'id', 'seq', 'stored_at')
  expect(seqs.map((r) => [r.idempresa, r.id, Number(r.seq)])).toEqual(
    [...ofA.map((e, i) => [a.companyId, e.id, i + 1]), [b.companyId, ofB[0]!.id, 1]].sort(
      (x, y) => Number(x[0]) - Number(y[0]),
    ),
  )
  expect(new Set(seqs.map((r) => new Date(r.stored_at).toISOString()))).toEqual(
    new Set([w.now().toISOString()]),
  )
  const queued = await w
    .owner('deliveries')
    .whereIn('endpoint_id', [epA, epB])
    .select('endpoint_id', 'event_id')
  expect(
    queued
      .filter((d) => d.endpoint_id === epA)
      .map((d) => d.event_id)
      .sort(),
  ).toEqual(ofA.map((e) => e.id).sort())
  expect(queued.filter((d) => d.endpoint_id === epB).map((d) => d.event_id)).toEqual([ofB[0]!.id])
  expect((await feed(a)).data.map((e) => e.id)).toEqual(ofA.map((e) => e.id))
})

test('wait answers as soon as an event arrives', async () => {
  const p = principal()
  const start = await feed(p)
  const started = Date.now()
  const waiting = feed(p, `?after=${start.meta.next}&wait=20`)
  await new Promise((r) => setTimeout(r, 300))
  const event = appointmentCreated(p.companyId)
  await w.publish([event])
  const page = await waiting
  expect(page.data.map((e) => e.id)).toEqual([event.id])
  expect(Date.now() - started).toBeLessThan(10_000)
})

test('a long poll that waits as asked is not logged as a slow request', async () => {
  const p = principal()
  const start = await feed(p)
  logged.length = 0
  const started = Date.now()
  const page = await feed(p, `?after=${start.meta.next}&wait=2`)
  expect(page.data).toEqual([])
  expect(Date.now() - started).toBeGreaterThanOrEqual(1900)
  const access = logged.filter((l) => l.route === '/events')
  expect(access).toEqual([expect.objectContaining({ msg: 'request', level: 30, status: 200 })])
})

test('a cursor from before what the feed keeps is 410 cursor_expired; a made-up one is 400', async () => {
  const p = principal()
  await w.publish([appointmentCreated(p.companyId)])
  const start = await feed(p)
  await w.publish([appointmentCreated(p.companyId), appointmentCreated(p.companyId)])
  const past = (await feed(p, '?limit=1')).meta.next
  const head = await feed(p, `?after=${past}`)
  expect(head.data).toHaveLength(2)
  await purgeEvents(w.knex, new Date(w.now().getTime() + 1000))
  const expired = await feed(p, `?after=${past}`)
  expect(expired.status).toBe(410)
  expect(expired.code).toBe('cursor_expired')
  // A cursor at the head lost nothing.
  await w.publish([appointmentCreated(p.companyId)])
  expect((await feed(p, `?after=${head.meta.next}`)).data).toHaveLength(1)
  expect((await feed(p, `?after=${start.meta.next}`)).code).toBe('cursor_expired')
  const bad = await feed(p, '?after=bm9wZQ')
  expect(bad.status).toBe(400)
  expect(bad.code).toBe('validation_failed')
})
