import type { Knex } from 'knex'
import { ASSERTION_HEADER, STREAMED_BODY, verifyAssertion } from '@clinic/platform'
import { FakeUpstream, VERIFY_KEYS, gateway, infra, tenant, upstreamsTo, type Received } from './harness'

let env: Awaited<ReturnType<typeof infra>>
let knex: Knex
let upstream: FakeUpstream
let gw: Awaited<ReturnType<typeof gateway>>

beforeAll(async () => {
  env = await infra()
  knex = env.knex
  upstream = await new FakeUpstream('echo').start()
  gw = await gateway({ knex, amqp: env.amqp, upstreams: upstreamsTo(upstream.url) })
})
afterAll(async () => {
  await gw?.close()
  await upstream?.close()
  await env?.close()
})

const BOUNDARY = 'clinic-test-boundary'
const form = (bytes: Buffer) =>
  Buffer.concat([
    Buffer.from(
      `--${BOUNDARY}\r\nContent-Disposition: form-data; name="category"\r\n\r\nother\r\n--${BOUNDARY}\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\n`,
    ),
    bytes,
    Buffer.from(`\r\n--${BOUNDARY}--\r\n`),
  ])

describe('uploads (services.json `uploads`)', () => {
  it('streams a multipart upload above 64 KiB to its service, its assertion naming no body hash', async () => {
    const t = await tenant(knex)
    const body = form(Buffer.alloc(3 * 1024 * 1024, 7))
    const res = await gw.app.inject({
      method: 'POST',
      url: '/api/documents?codalmacen=ALM1',
      headers: { ...t.headers, 'content-type': `multipart/form-data; boundary=${BOUNDARY}` },
      payload: body,
    })
    expect(res.statusCode).toBe(201)
    const got = upstream.received.at(-1) as Received
    expect(got).toMatchObject({ method: 'POST', url: '/documents?codalmacen=ALM1' })
    expect(Buffer.from(got.form!, 'latin1').length).toBe(body.length)
    const check = await verifyAssertion(got.headers[ASSERTION_HEADER] as string, VERIFY_KEYS(), {
      method: 'POST',
      path: '/documents',
      query: 'codalmacen=ALM1',
    })
    expect(check.ok && check.claims.bodyHash).toBe(STREAMED_BODY)
  })

  it('refuses a declared length over the limit (413) and a body that is not multipart (415), forwarding neither', async () => {
    const t = await tenant(knex)
    const before = upstream.received.length
    const tooLarge = await gw.app.inject({
      method: 'POST',
      url: '/api/3/documents',
      headers: {
        ...t.headers,
        'content-type': `multipart/form-data; boundary=${BOUNDARY}`,
        'content-length': String(29 * 1024 * 1024),
      },
      payload: form(Buffer.alloc(10)),
    })
    expect(tooLarge.statusCode).toBe(413)
    expect(tooLarge.json().code).toBe('payload_too_large')
    const json = await gw.app.inject({
      method: 'POST',
      url: '/api/documents',
      headers: { ...t.headers, 'content-type': 'application/json' },
      payload: '{}',
    })
    expect(json.statusCode).toBe(415)
    expect(upstream.received.length).toBe(before)
  })

  it('keeps the 64 KiB JSON limit on every other route of the family', async () => {
    const t = await tenant(knex)
    const res = await gw.app.inject({
      method: 'PATCH',
      url: '/api/documents/0190c5a0-1234-7abc-8def-0123456789ab',
      headers: { ...t.headers, 'content-type': 'multipart/form-data; boundary=x' },
      payload: '--x--\r\n',
    })
    expect(res.statusCode).toBe(415)
  })
})
