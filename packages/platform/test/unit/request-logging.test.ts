import { Writable } from 'node:stream'
import Fastify from 'fastify'
import { createLogger, fastifyOptions, http } from '@clinic/platform'

async function requestLines(level: 'info' | 'debug', slowMs = 0) {
  const lines: string[] = []
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk))
      done()
    },
  })
  const app = Fastify(fastifyOptions(createLogger({ service: 't', level, destination })))
  await app.register(http, { service: 't', version: '261122.01', assertionSecret: null })
  app.get('/things', async () => ({ ok: true }))
  app.get('/slow', async () => {
    await new Promise((r) => setTimeout(r, slowMs))
    return { ok: true }
  })
  for (const url of ['/health/live', '/health/ready', '/metrics', '/things']) await app.inject({ url })
  if (slowMs) await app.inject({ url: '/slow' })
  await app.close()
  return lines.map(
    (l) => JSON.parse(l) as { msg: string; req?: { path?: string }; route?: string; ms?: number },
  )
}

describe('request logs', () => {
  it('are off at info: the audit trail records every request', async () => {
    const lines = await requestLines('info')
    expect(lines.filter((l) => l.msg === 'incoming request' || l.msg === 'request completed')).toEqual([])
  })

  it('show every request, probes included, at debug', async () => {
    const paths = (await requestLines('debug'))
      .filter((l) => l.msg === 'incoming request')
      .map((l) => l.req?.path)
    expect(paths).toEqual(['/health/live', '/health/ready', '/metrics', '/things'])
  })

  it('name a slow request (over 1 s) at every level, with its route and time', async () => {
    const slow = (await requestLines('info', 1050)).filter((l) => l.msg === 'slow request')
    expect(slow).toEqual([expect.objectContaining({ route: '/slow', ms: expect.any(Number) })])
    expect(slow[0]!.ms).toBeGreaterThanOrEqual(1000)
  })
})
