import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import Fastify from 'fastify'
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base'
import {
  SpanKind,
  callService,
  createLogger,
  fastifyOptions,
  http,
  makeEvent,
  parseTrace,
  samplerOf,
  startSpan,
  startTracing,
  traceHeaders,
  traceIdOf,
  traceOf,
} from '@clinic/platform'
import { causeOf, ctxOfCause, type Ctx } from '@clinic/platform/core'
import { testPrincipal, testSigner } from '@clinic/platform/testing'

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736'
const SPAN_ID = '00f067aa0ba902b7'
const VALID = `00-${TRACE_ID}-${SPAN_ID}-01`
const HEX32 = /^[0-9a-f]{32}$/

describe('W3C trace context', () => {
  it('reads a valid traceparent (and its tracestate) as the propagator does', () => {
    const sc = parseTrace({ traceparent: VALID, tracestate: 'clinic=a,other=b' })
    expect(sc).toMatchObject({ traceId: TRACE_ID, spanId: SPAN_ID, traceFlags: 1, isRemote: true })
    expect(sc?.traceState?.get('other')).toBe('b')
    expect(traceHeaders(sc!)).toEqual({ traceparent: VALID, tracestate: 'clinic=a,other=b' })
    expect(traceIdOf(VALID)).toBe(TRACE_ID)
  })

  it.each([
    ['garbage', 'nonsense'],
    ['markup', `00-${TRACE_ID}-${SPAN_ID}-01<script>`],
    ['short trace id', `00-${TRACE_ID.slice(2)}-${SPAN_ID}-01`],
    ['upper case', `00-${TRACE_ID.toUpperCase()}-${SPAN_ID}-01`],
    ['the forbidden version ff', `ff-${TRACE_ID}-${SPAN_ID}-01`],
    ['an all-zero trace id', `00-${'0'.repeat(32)}-${SPAN_ID}-01`],
    ['an all-zero span id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
    ['version 00 with more fields', `${VALID}-extra`],
  ])('refuses %s', (_what, traceparent) => {
    expect(parseTrace({ traceparent })).toBeUndefined()
    expect(traceIdOf(traceparent)).toBeUndefined()
  })

  it('without the SDK, a span is a child in its parent trace (ids of its own, the parent flag), or a new trace', () => {
    const child = startSpan('child', { parent: { traceparent: VALID } }).spanContext()
    expect(child).toMatchObject({ traceId: TRACE_ID, traceFlags: 1 })
    expect(child.spanId).toMatch(/^[0-9a-f]{16}$/)
    expect(child.spanId).not.toBe(SPAN_ID)
    const root = startSpan('root', { parent: { traceparent: 'nonsense' } }).spanContext()
    expect(root.traceId).toMatch(HEX32)
    expect(root.traceId).not.toBe(TRACE_ID)
    expect(root.traceFlags).toBe(0)
    expect(startSpan('a').spanContext().traceId).not.toBe(startSpan('b').spanContext().traceId)
  })

  it('a ctx, its cause and its events carry the trace context (CloudEvents Distributed Tracing)', () => {
    const log = createLogger({ service: 't', level: 'silent' })
    const ctx: Ctx = { auth: testPrincipal(), log, requestId: 'r-1', traceparent: VALID, tracestate: 'a=b' }
    const cause = causeOf(ctx)
    expect(cause).toMatchObject({ traceparent: VALID, tracestate: 'a=b', requestid: 'r-1' })
    expect(ctxOfCause({ companyId: 1, cause }, log)).toMatchObject({ traceparent: VALID, tracestate: 'a=b' })
    const event = makeEvent({
      type: 'http.refused',
      source: 'clinic/gateway',
      companyId: 1,
      data: { ip: '127.0.0.1', count: 1, window_start: new Date().toISOString(), paths: [] },
      ctx,
    })
    expect(event).toMatchObject({ traceparent: VALID, tracestate: 'a=b' })
  })
})

describe('samplers', () => {
  it("the gateway's parentbased sampler judges a client's parent by its root sampler", async () => {
    const exporter = new InMemorySpanExporter()
    const tracing = startTracing({
      serviceName: 't',
      exporter,
      processor: 'simple',
      sampler: samplerOf('parentbased_always_off', 1, true),
    })
    try {
      // A client that says `sampled` does not get its request recorded here...
      const fromClient = startSpan('in', { kind: SpanKind.SERVER, parent: { traceparent: VALID } })
      expect(fromClient.isRecording()).toBe(false)
      expect(fromClient.spanContext().traceId).toBe(TRACE_ID) // ...but its trace goes on
      // ...and a local child follows its parent.
      expect(startSpan('child', { parent: fromClient.spanContext() }).isRecording()).toBe(false)
    } finally {
      await tracing.shutdown()
    }
    // In a service (trusted parents), the parent's flag decides.
    const tracing2 = startTracing({ serviceName: 't', exporter, processor: 'simple' })
    try {
      expect(startSpan('in', { parent: { traceparent: VALID } }).isRecording()).toBe(true)
      expect(startSpan('in', { parent: { traceparent: VALID.replace(/01$/, '00') } }).isRecording()).toBe(
        false,
      )
    } finally {
      await tracing2.shutdown()
    }
  })
})

describe('HTTP: every log line of a request carries its trace_id', () => {
  async function linesOf(headers: Record<string, string>) {
    const lines: string[] = []
    const destination = new Writable({
      write(chunk, _enc, done) {
        lines.push(String(chunk))
        done()
      },
    })
    const app = Fastify(fastifyOptions(createLogger({ service: 't', level: 'info', destination })))
    await app.register(http, { service: 't', version: '261122.01', assertionKeys: null })
    let seen: { traceparent: string; tracestate?: string } | null = null
    app.get('/things', async (req) => {
      req.log.info('a line of the route')
      seen = traceOf(req.span)
      return { ok: true }
    })
    await app.inject({ url: '/things', headers })
    await app.close()
    const parsed = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    return { raw: lines.join(''), parsed, seen: seen as { traceparent: string } | null }
  }

  it("a client's valid traceparent: its trace id on every line; the request's span is its child", async () => {
    const { parsed, seen } = await linesOf({ traceparent: VALID })
    expect(parsed.map((l) => l.msg)).toEqual(['a line of the route', 'request'])
    for (const l of parsed) expect(l).toMatchObject({ trace_id: TRACE_ID, request_id: expect.any(String) })
    expect(seen!.traceparent).toMatch(new RegExp(`^00-${TRACE_ID}-[0-9a-f]{16}-01$`))
    expect(seen!.traceparent).not.toContain(SPAN_ID)
  })

  it('a malformed traceparent is replaced by a new trace, and never reaches a log line', async () => {
    const bad = `00-${TRACE_ID}-${SPAN_ID}-01-"injected":"x"`
    const { raw, parsed, seen } = await linesOf({ traceparent: bad, tracestate: 'clinic=evil' })
    expect(parsed).toHaveLength(2)
    for (const l of parsed) {
      expect(l.trace_id).toMatch(HEX32)
      expect(l.trace_id).not.toBe(TRACE_ID)
    }
    expect(raw).not.toContain('injected')
    expect(raw).not.toContain('evil')
    expect(seen).toEqual({
      traceparent: `00-${parsed[0]!.trace_id as string}-${seen!.traceparent.slice(36, 52)}-00`,
    })
  })

  it('no traceparent: a new trace per request', async () => {
    const a = await linesOf({})
    const b = await linesOf({})
    expect(a.parsed[0]!.trace_id).toMatch(HEX32)
    expect(a.parsed[0]!.trace_id).not.toBe(b.parsed[0]!.trace_id)
  })
})

describe('callService carries the trace context', () => {
  let server: Server
  let received: IncomingHttpHeaders = {}
  beforeAll(async () => {
    server = createServer((req, res) => {
      received = req.headers
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  })
  afterAll(() => new Promise((resolve) => server.close(resolve)))

  it("sends the caller's span as traceparent", async () => {
    const log = createLogger({ service: 't', level: 'silent' })
    const ctx: Ctx = { auth: testPrincipal(), log, requestId: 'r-2', traceparent: VALID, tracestate: 'a=b' }
    await callService(ctx, testSigner('comms'), {
      service: 'patients',
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      method: 'GET',
      path: '/internal/patients/x',
    })
    expect(received).toMatchObject({ traceparent: VALID, tracestate: 'a=b' })
  })
})
