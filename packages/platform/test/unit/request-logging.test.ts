import { Readable, Writable } from 'node:stream'
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import { NotImplemented, createLogger, fastifyOptions, http } from '@clinic/platform'

async function requestLines(level: 'info' | 'debug', slowMs = 0) {
  // The access log's clock, moved by the slow routes instead of sleeping.
  let now = 0
  const lines: string[] = []
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk))
      done()
    },
  })
  const app = Fastify(fastifyOptions(createLogger({ service: 't', level, destination })))
  await app.register(http, { service: 't', version: '261122.01', assertionKeys: null, clock: () => now })
  app.get('/things', async () => ({ ok: true }))
  // A refused body (read first: a body's stream is destroyed once read) and an announced area.
  app.post('/refused', { schema: { body: Type.Object({ n: Type.Integer() }) } }, async () => ({}))
  app.get('/planned', async () => {
    throw new NotImplemented('documents')
  })
  app.get('/slow', async () => {
    now += slowMs
    return { ok: true }
  })
  // A long poll that takes as long: slow only when it was not asked to wait that long.
  app.get('/poll', { config: { longPoll: 'wait' } }, async () => {
    now += slowMs
    return { ok: true }
  })
  // A download the client takes long to read: the answer is at once, the body comes slowly.
  app.get('/download', async (_req, reply) => {
    let sent = false
    const body = new Readable({
      read() {
        if (sent) return this.push(null)
        now += slowMs
        sent = true
        this.push('bytes')
      },
    })
    return reply.type('application/octet-stream').send(body)
  })
  for (const url of ['/health/live', '/health/ready', '/metrics', '/things']) await app.inject({ url })
  await app.inject({ method: 'POST', url: '/refused', payload: { n: 'x' } })
  await app.inject({ url: '/planned' })
  if (slowMs)
    for (const url of ['/slow', '/poll?wait=2', '/poll?wait=0', '/download']) await app.inject({ url })
  await app.close()
  return lines.map((l) => JSON.parse(l) as Line & Record<string, unknown>)
}

type Line = { msg: string; level: number; route?: string; status?: number; ms?: number; code?: string }

describe('request logs: one access line per request', () => {
  it('at info: method, route, status, ms and request_id; probes stay out', async () => {
    const lines = (await requestLines('info')).filter((l) => l.msg === 'request')
    expect(lines).toEqual([
      expect.objectContaining({
        method: 'GET',
        route: '/metrics',
        status: 200,
        request_id: expect.any(String),
      }),
      expect.objectContaining({ method: 'GET', route: '/things', status: 200, ms: expect.any(Number) }),
      expect.objectContaining({ method: 'POST', route: '/refused', status: 400 }),
      expect.objectContaining({ method: 'GET', route: '/planned', status: 501 }),
    ])
    // Fastify's own pair of lines per request stays off at every level.
    expect((await requestLines('debug')).filter((l) => l.msg === 'incoming request')).toEqual([])
  })

  it('probes too at debug', async () => {
    const routes = (await requestLines('debug')).filter((l) => l.msg === 'request').map((l) => l.route)
    expect(routes).toEqual(['/health/live', '/health/ready', '/metrics', '/things', '/refused', '/planned'])
  })

  it('a refused request is one info line with its code: no error, no stack, no second line', async () => {
    const lines = await requestLines('info')
    const refused = lines.filter((l) => l.route === '/refused' || l.route === '/planned')
    expect(refused).toEqual([
      expect.objectContaining({ msg: 'request', level: 30, status: 400, code: 'validation_failed' }),
      expect.objectContaining({ msg: 'request', level: 30, status: 501, code: 'not_implemented' }),
    ])
    expect(lines.filter((l) => l.level >= 50)).toEqual([])
    expect(lines.filter((l) => /client closed|request refused/.test(l.msg))).toEqual([])
  })

  it('name a slow request (over 1 s) at every level, with its route and time; a long poll only past its wait', async () => {
    const lines = await requestLines('info', 1050)
    const slow = lines.filter((l) => l.msg === 'slow request')
    expect(slow).toEqual([
      expect.objectContaining({ route: '/slow', ms: expect.any(Number) }),
      expect.objectContaining({ route: '/poll', level: 40 }),
    ])
    expect(slow[0]!.ms).toBeGreaterThanOrEqual(1000)
    // Asked to wait 2 s, the poll's 1 s is on time: one info line, and the one that asked for no wait is slow.
    expect(lines.filter((l) => l.route === '/poll').map((l) => [l.msg, l.level])).toEqual([
      ['request', 30],
      ['slow request', 40],
    ])
    // A download read slowly is not a slow answer: its line has both times.
    expect(lines.filter((l) => l.route === '/download')).toEqual([
      expect.objectContaining({ msg: 'request', level: 30, ms: 1050, answer_ms: 0 }),
    ])
  })
})
