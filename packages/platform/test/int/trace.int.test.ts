import Fastify from 'fastify'
import type { Knex } from 'knex'
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import {
  Amqp,
  JobRunner,
  OutboxRelay,
  SpanKind,
  enqueueEvents,
  fastifyOptions,
  http,
  makeEvent,
  startConsumer,
  startTracing,
  type Consumer,
  type Span,
  type Tracing,
} from '@clinic/platform'
import {
  appointmentEventData,
  declareWorkQueue,
  gatewayHeaders,
  testAssertionKeys,
  testPrincipal,
  waitFor,
} from '@clinic/platform/testing'
import { amqpUrl, databaseUrl, schemaName, testLog, testSchema } from './helpers'

jest.setTimeout(30_000)

/**
 * One trace across the platform's pieces in one process, with the SDK's in-memory exporter: a
 * request through the platform's HTTP plugin writes an event to the outbox, the relay publishes it,
 * a consumer handles it and leaves a job row, and a job runner runs the job. Each is a span of the
 * client's trace, the child of the one before.
 */
const log = testLog('trace')
const exporter = new InMemorySpanExporter()
let tracing: Tracing
let db: Awaited<ReturnType<typeof testSchema>>
let knex: Knex
let amqp: Amqp
let relay: OutboxRelay
let consumer: Consumer
const makeApp = () => Fastify(fastifyOptions(log))
let app: ReturnType<typeof makeApp>
let jobs: Jobs
const queue = `${schemaName()}.trace`
/** The `traceparent` extension of each event the consumer handled. */
const handled: Array<string | undefined> = []

/** A job row per handled event (`effects`), run once: its `note` is the traceparent of its cause. */
class Jobs extends JobRunner<{ id: string; event_id: string; note: string | null }> {
  readonly ran: Array<{ eventId: string; span: Span }> = []
  constructor() {
    super({ name: 'trace-test-jobs', concurrency: 4, pollMs: 50, log })
  }
  protected claimJobs(limit: number) {
    return knex.transaction(async (trx) => {
      const rows = await trx('effects')
        .whereNot('note', 'done')
        .orderBy('id')
        .limit(limit)
        .forUpdate()
        .skipLocked()
      if (rows.length)
        await trx('effects')
          .whereIn(
            'id',
            rows.map((r: { id: string }) => r.id),
          )
          .update({ note: 'done' })
      return rows as Array<{ id: string; event_id: string; note: string | null }>
    })
  }
  protected override causeOf(job: { note: string | null }) {
    return job.note ? { traceparent: job.note } : undefined
  }
  protected async runJob(job: { event_id: string }, span: Span) {
    this.ran.push({ eventId: job.event_id, span })
  }
}

beforeAll(async () => {
  tracing = startTracing({ serviceName: 'platform-trace-test', exporter, processor: 'simple' })
  db = await testSchema()
  knex = db.knex
  amqp = new Amqp({ url: amqpUrl(), log, name: 'platform-trace-test' })
  await amqp.start()
  await declareWorkQueue(amqpUrl(), queue, ['appointment.checked_in'], { retryDelayMs: 50 })
  relay = new OutboxRelay({ knex, schema: db.schema, databaseUrl: databaseUrl(), amqp, log, pollMs: 100 })
  await relay.start()
  consumer = await startConsumer({
    amqp,
    knex,
    log,
    queue,
    // The job row keeps the consumer's span of the event: the job's cause.
    handle: async (event, trx, trace) => {
      handled.push(event.traceparent)
      await trx('effects').insert({ event_id: event.id, idempresa: event.idempresa, note: trace.traceparent })
    },
  })
  jobs = new Jobs().start()
  app = makeApp()
  await app.register(http, {
    service: 'platform-trace-test',
    version: 't',
    assertionKeys: testAssertionKeys(),
  })
  // A route as a service has one: its change and its event in one transaction, the event made
  // with the request's ctx.
  app.post('/things', async (req, reply) => {
    const id = '0190c5a0-0000-7000-8000-00000000abcd'
    await knex.transaction(async (trx) => {
      await trx('things').insert({ idempresa: req.ctx.auth.companyId, name: 'traced' })
      await enqueueEvents(trx, [
        makeEvent({
          type: 'appointment.checked_in',
          source: 'clinic/platform-test',
          subject: id,
          data: appointmentEventData({ id, patient_id: id }),
          companyId: req.ctx.auth.companyId,
          ctx: req.ctx,
        }),
      ])
    })
    return reply.status(201).send({ ok: true })
  })
  await app.ready()
})

afterAll(async () => {
  await app?.close()
  await jobs?.stop()
  await consumer?.stop()
  await relay?.stop()
  await amqp?.close()
  await db?.drop()
  await tracing?.shutdown()
})

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const CLIENT_SPAN = '00f067aa0ba902b7'

it('one request: server span -> publish -> consumer -> job, one trace, each the child of the one before', async () => {
  const principal = testPrincipal()
  const headers = await gatewayHeaders(
    principal,
    'POST',
    '/things',
    undefined,
    'trace-req-1',
    {},
    'platform-trace-test',
  )
  const res = await app.inject({
    method: 'POST',
    url: '/things',
    headers: { ...headers, traceparent: `00-${TRACE_ID}-${CLIENT_SPAN}-01`, tracestate: 'clinic=t1' },
    payload: {},
  })
  expect(res.statusCode).toBe(201)

  await waitFor(() => jobs.ran.length > 0, { what: 'the job the event left to run' })
  // Each span ends on its own schedule: the publish span ends at the broker's confirm, which may
  // come after the consumer has handled the message and the job has run. Wait for all four.
  const ended = () => exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === TRACE_ID)
  await waitFor(
    () =>
      [SpanKind.SERVER, SpanKind.PRODUCER, SpanKind.CONSUMER].every((k) =>
        ended().some((s) => s.kind === k),
      ) && ended().some((s) => s.name === 'run trace-test-jobs'),
    { what: 'every span of the chain to end' },
  )
  const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === TRACE_ID)
  const one = (pred: (s: ReadableSpan) => boolean, what: string) => {
    const found = spans.filter(pred)
    expect({ what, count: found.length }).toEqual({ what, count: 1 })
    return found[0]!
  }
  const server = one((s) => s.kind === SpanKind.SERVER, 'server span')
  const publish = one((s) => s.kind === SpanKind.PRODUCER, 'publish span')
  const processed = one((s) => s.kind === SpanKind.CONSUMER, 'consumer span')
  const job = one((s) => s.name === 'run trace-test-jobs', 'job span')
  const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId

  // The client's span is the server span's parent; each later step is the child of the one before.
  expect(parentOf(server)).toBe(CLIENT_SPAN)
  expect(server.name).toBe('POST /things')
  expect(server.attributes).toMatchObject({ 'http.route': '/things', 'http.response.status_code': 201 })
  expect(parentOf(publish)).toBe(server.spanContext().spanId)
  expect(publish.attributes).toMatchObject({
    'messaging.system': 'rabbitmq',
    'messaging.rabbitmq.destination.routing_key': 'appointment.checked_in',
  })
  expect(parentOf(processed)).toBe(publish.spanContext().spanId)
  expect(processed.name).toBe(`process ${queue}`)
  expect(parentOf(job)).toBe(processed.spanContext().spanId)
  expect(jobs.ran[0]!.span.spanContext().spanId).toBe(job.spanContext().spanId)
  // The client's tracestate travels with its trace.
  expect(server.spanContext().traceState?.get('clinic')).toBe('t1')
  // The service's resource names it.
  expect(server.resource.attributes['service.name']).toBe('platform-trace-test')

  // The event itself carries the request's span (CloudEvents Distributed Tracing extension).
  expect(handled).toEqual([`00-${TRACE_ID}-${server.spanContext().spanId}-01`])
})
