import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { waitFor } from '@clinic/platform/testing'
import { SETTLE_MS, SLOW_TEST_MS, call, makeTenant } from '../src/client'
import { startStack, stopStack, type StackInfo } from '../src/stack'

/**
 * One trace (issue 42): an API call through the gateway that creates a patient is ONE trace, the
 * client's, from the gateway to the patients service, its event's publication, the audit
 * consumer, the webhooks consumer and the webhook delivery it ends in; each span the child of the
 * one before. A stack of its own whose processes export their spans over OTLP/HTTP (JSON) to a
 * small collector this test runs; the webhook goes to a receiver this test runs too.
 */
jest.setTimeout(SLOW_TEST_MS)

interface OtlpSpan {
  service: string
  traceId: string
  spanId: string
  parentSpanId: string
  name: string
  kind: number
  links: Array<{ traceId: string; spanId: string }>
}
// OTLP's SpanKind numbers (SPAN_KIND_SERVER, ...).
const KIND = { INTERNAL: 1, SERVER: 2, CLIENT: 3, PRODUCER: 4, CONSUMER: 5 } as const

/** OTLP/JSON ids are hex (the spec); base64 is read too, in case an exporter sends protobuf's JSON mapping. */
const hexId = (id: unknown) =>
  typeof id !== 'string' || id === '' || /^[0-9a-f]+$/.test(id)
    ? String(id ?? '')
    : Buffer.from(id, 'base64').toString('hex')

/** A collector of OTLP/HTTP JSON (`POST /v1/traces`): every span it was sent, with its service. */
async function startCollector() {
  const spans: OtlpSpan[] = []
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end()
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
        resourceSpans: Array<{
          resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> }
          scopeSpans: Array<{ spans: Array<Record<string, unknown>> }>
        }>
      }
      for (const rs of body.resourceSpans) {
        const service = rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue ?? ''
        for (const ss of rs.scopeSpans)
          for (const s of ss.spans)
            spans.push({
              service,
              traceId: hexId(s.traceId),
              spanId: hexId(s.spanId),
              parentSpanId: hexId(s.parentSpanId),
              name: String(s.name),
              kind: Number(s.kind),
              links: ((s.links as Array<Record<string, unknown>> | undefined) ?? []).map((l) => ({
                traceId: hexId(l.traceId),
                spanId: hexId(l.spanId),
              })),
            })
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, server }
}

/** A webhook receiver on this machine: the `webhook-id` of every delivery (answered 204). */
async function startReceiver() {
  const received: string[] = []
  const server: Server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      received.push(String(req.headers['webhook-id']))
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, received, server }
}

let info: StackInfo
let collector: Awaited<ReturnType<typeof startCollector>>
let receiver: Awaited<ReturnType<typeof startReceiver>>

beforeAll(async () => {
  collector = await startCollector()
  receiver = await startReceiver()
  info = await startStack({
    env: {
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      // The SDK's batch processor: spans out every 200 ms rather than 5 s.
      OTEL_BSP_SCHEDULE_DELAY: '200',
    },
  })
})

afterAll(async () => {
  if (info) await stopStack(info)
  for (const s of [collector?.server, receiver?.server]) await new Promise((r) => s?.close(r))
})

it('one API call that creates a patient: one trace from the gateway to the audit consumer and the webhook delivery', async () => {
  const t = await makeTenant(['ALM1'], info)
  const endpoint = await call('POST', '/webhooks/endpoints', {
    token: t.token,
    base: info.api,
    body: { url: receiver.url, event_types: ['patient.created'] },
  })
  expect(endpoint.status).toBe(201)

  const traceId = randomBytes(16).toString('hex')
  const clientSpan = randomBytes(8).toString('hex')
  const created = await call('POST', '/patients', {
    token: t.token,
    base: info.api,
    headers: { traceparent: `00-${traceId}-${clientSpan}-01` },
    body: { first_name: 'Traza', last_name: 'Una', birth_date: '1990-01-01' },
  })
  expect(created.status).toBe(201)
  const requestId = created.headers.get('x-request-id')!

  const inTrace = () => collector.spans.filter((s) => s.traceId === traceId)
  const find = (service: string, kind: number, name?: string) =>
    inTrace().filter((s) => s.service === service && s.kind === kind && (!name || s.name === name))
  // Every span of the chain, each process exporting on its own schedule (a batch every 200 ms):
  // the patients service's server span may reach the collector after the consumers' spans do.
  const chain: Array<[string, number, string?]> = [
    ['gateway', KIND.SERVER],
    ['patients', KIND.SERVER],
    ['patients', KIND.PRODUCER],
    ['audit', KIND.CONSUMER, 'process audit.events'],
    ['webhooks', KIND.CONSUMER, 'process webhooks.events'],
    ['webhooks', KIND.INTERNAL, 'run deliveries'],
    ['webhooks', KIND.CLIENT, 'webhook POST'],
  ]
  await waitFor(() => chain.every(([service, kind, name]) => find(service, kind, name).length > 0), {
    timeoutMs: SETTLE_MS,
    intervalMs: 200,
    what: 'every span of the chain',
  })
  expect(receiver.received).toHaveLength(1)

  const one = (service: string, kind: number, name?: string) => {
    const found = find(service, kind, name)
    expect({ service, kind, name, count: found.length }).toEqual({ service, kind, name, count: 1 })
    return found[0]!
  }
  const gateway = one('gateway', KIND.SERVER)
  const patients = one('patients', KIND.SERVER)
  const publish = one('patients', KIND.PRODUCER)
  const audit = one('audit', KIND.CONSUMER, 'process audit.events')
  const webhooks = one('webhooks', KIND.CONSUMER, 'process webhooks.events')
  const run = one('webhooks', KIND.INTERNAL, 'run deliveries')
  const post = one('webhooks', KIND.CLIENT, 'webhook POST')

  // The chain: client -> gateway -> patients -> publish -> (audit, webhooks) -> the delivery's run -> its POST.
  expect(gateway.parentSpanId).toBe(clientSpan)
  expect(gateway.name).toBe('POST /api/patients')
  expect(patients.parentSpanId).toBe(gateway.spanId)
  expect(patients.name).toBe('POST /patients')
  expect(publish.parentSpanId).toBe(patients.spanId)
  expect(audit.parentSpanId).toBe(publish.spanId)
  expect(webhooks.parentSpanId).toBe(publish.spanId)
  expect(run.parentSpanId).toBe(webhooks.spanId)
  expect(post.parentSpanId).toBe(run.spanId)

  // The gateway's access event (the audited call) goes in a batch of many requests: the audit
  // consumer's span of that batch links to the gateway's span.
  await waitFor(
    () =>
      collector.spans.some(
        (s) =>
          s.service === 'audit' && s.links.some((l) => l.traceId === traceId && l.spanId === gateway.spanId),
      ),
    { timeoutMs: SETTLE_MS, intervalMs: 200, what: "the access batch's span, linked to the gateway's" },
  )

  // Every log line of the request names the trace, in the gateway and in the service.
  for (const service of ['gateway', 'patients']) {
    const lines = readFileSync(info.logFiles[service]!, 'utf8')
      .split('\n')
      .filter((l) => l.includes(requestId))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(lines.length).toBeGreaterThan(0)
    for (const l of lines) expect({ service, trace_id: l.trace_id }).toEqual({ service, trace_id: traceId })
  }
})

it("a client's malformed traceparent is replaced: the request is a trace of its own, the text is never logged", async () => {
  const t = await makeTenant(['ALM1'], info)
  const bad = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01-<script>`
  const res = await call('GET', '/patients?limit=1', {
    token: t.token,
    base: info.api,
    headers: { traceparent: bad },
  })
  expect(res.status).toBe(200)
  const requestId = res.headers.get('x-request-id')!
  const linesOf = (service: string) =>
    readFileSync(info.logFiles[service]!, 'utf8')
      .split('\n')
      .filter((l) => l.includes(requestId))
  await waitFor(() => linesOf('gateway').length > 0, {
    timeoutMs: SETTLE_MS,
    what: "the gateway's access line",
  })
  const lines = linesOf('gateway')
  expect(lines.join('')).not.toContain('<script>')
  const traceId = (JSON.parse(lines[0]!) as { trace_id: string }).trace_id
  expect(traceId).toMatch(/^[0-9a-f]{32}$/)
  expect(traceId).not.toBe('a'.repeat(32))
  for (const l of lines) expect((JSON.parse(l) as { trace_id: string }).trace_id).toBe(traceId)

  // A trace of its own: the gateway's span is its root, the service's its child.
  const spanOf = (service: string) =>
    collector.spans.find((s) => s.service === service && s.kind === KIND.SERVER && s.traceId === traceId)
  await waitFor(() => spanOf('gateway') !== undefined && spanOf('patients') !== undefined, {
    timeoutMs: SETTLE_MS,
    intervalMs: 200,
    what: 'the spans of the read',
  })
  expect(spanOf('gateway')!.parentSpanId).toBe('')
  expect(spanOf('patients')!.parentSpanId).toBe(spanOf('gateway')!.spanId)
  expect(collector.spans.some((s) => s.traceId === 'a'.repeat(32))).toBe(false)
})
