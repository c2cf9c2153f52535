import net from 'node:net'
import Fastify from 'fastify'
import { createLogger, fastifyOptions, http } from '@clinic/platform'

/** What the router and Node's HTTP parser refuse is answered as problem+json too (the fuzz found it). */
const version = '261123.01'
const app = Fastify(fastifyOptions(createLogger({ service: 't', level: 'silent' }), version))

beforeAll(async () => {
  await app.register(http, { service: 't', version, assertionKeys: null })
  app.get('/things/:id', { config: { public: true } }, async () => ({ ok: true }))
  await app.listen({ port: 0, host: '127.0.0.1' })
})
afterAll(() => app.close())

test('a URL that is not valid percent-encoding is 400 validation_failed, problem+json', async () => {
  const res = await app.inject({ url: '/things/%ED%A0%80' })
  expect(res.statusCode).toBe(400)
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
  expect(res.headers['x-service-version']).toBe(version)
  expect(res.json()).toMatchObject({ status: 400, code: 'validation_failed' })
})

test('a path parameter over 100 characters is 404 not_found, problem+json', async () => {
  const res = await app.inject({ url: `/things/${'x'.repeat(300)}` })
  expect(res.statusCode).toBe(404)
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
  expect(res.json()).toMatchObject({ status: 404, code: 'not_found' })
})

test('headers over 16 KiB are 431 headers_too_large, problem+json, from the raw socket', async () => {
  const { port } = app.server.address() as net.AddressInfo
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write(`GET /things/1 HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`),
    )
    let text = ''
    socket.on('data', (d) => (text += d.toString('utf8')))
    socket.on('end', () => resolve(text))
    socket.on('error', reject)
  })
  const [head, body] = answer.split('\r\n\r\n')
  expect(head).toMatch(/^HTTP\/1\.1 431 /)
  expect(head).toMatch(/content-type: application\/problem\+json/i)
  expect(head).toContain(`X-service-Version: ${version}`)
  expect(JSON.parse(body!)).toMatchObject({ status: 431, code: 'headers_too_large' })
})
