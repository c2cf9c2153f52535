import { call, makeTenant, type Tenant } from '../src/client'

/**
 * DESIGN.md section 12 through the gateway: the hourly quota per recipient address (10, the
 * stack's default) answers 429 messaging_quota_exceeded with Retry-After, and SMS go only to the
 * allowed countries and never to premium-rate numbers (422 destination_not_allowed).
 */
let t: Tenant
beforeAll(async () => {
  t = await makeTenant(['ALM1'])
})

async function patientWith(phone: string): Promise<string> {
  const res = await call('POST', '/patients', {
    token: t.token,
    body: { first_name: 'Lia', last_name: 'Ficticia', birth_date: '1990-04-02', codalmacen: 'ALM1', phone },
  })
  expect(res.status).toBe(201)
  return res.body.id
}
const sms = (patientId: string, headers: Record<string, string> = {}) =>
  call('POST', '/comms/send', {
    token: t.token,
    headers,
    body: { patient_id: patientId, channel: 'sms', body: 'Recordatorio ficticio' },
  })

describe('messaging limits through the gateway', () => {
  it('the 11th SMS to one number within the hour is 429 messaging_quota_exceeded with Retry-After', async () => {
    const id = await patientWith('+34600000123')
    for (let i = 0; i < 10; i++) expect((await sms(id)).status).toBe(202)
    const over = await sms(id, { 'idempotency-key': 'e2e-quota-1' })
    expect(over.status).toBe(429)
    expect(over.headers.get('content-type')).toMatch(/^application\/problem\+json/)
    expect(over.body).toMatchObject({
      type: 'https://clinic.example/problems/messaging_quota_exceeded',
      status: 429,
      code: 'messaging_quota_exceeded',
      request_id: expect.any(String),
    })
    expect(over.body.detail).toMatch(/^hourly per recipient limit reached/)
    expect(over.body.detail).not.toContain('600000123')
    const after = Number(over.headers.get('retry-after'))
    expect(after).toBeGreaterThan(3000)
    expect(after).toBeLessThanOrEqual(3600)
    // Nothing was stored: the same key is a new attempt (refused again), not a replay.
    const again = await sms(id, { 'idempotency-key': 'e2e-quota-1' })
    expect([again.status, again.headers.get('idempotent-replayed')]).toEqual([429, null])
    const list = await call('GET', `/comms/messages?patient_id=${id}`, { token: t.token })
    expect(list.body.meta.total).toBe(10)
  })

  it('one mailbox written in two cases is one recipient: its 11th email within the hour is 429', async () => {
    const local = `quota-${Date.now().toString(36)}`
    const patient = async (email: string) => {
      const res = await call('POST', '/patients', {
        token: t.token,
        body: {
          first_name: 'Lia',
          last_name: 'Ficticia',
          birth_date: '1990-04-02',
          codalmacen: 'ALM1',
          email,
        },
      })
      expect(res.status).toBe(201)
      return res.body.id as string
    }
    const [upper, lower] = [
      await patient(`${local.toUpperCase()}@Example.TEST`),
      await patient(`${local}@example.test`),
    ]
    const email = (patientId: string) =>
      call('POST', '/comms/send', {
        token: t.token,
        body: { patient_id: patientId, channel: 'email', subject: 'Cita', body: 'Recordatorio ficticio' },
      })
    for (let i = 0; i < 10; i++) expect((await email(upper)).status).toBe(202)
    const over = await email(lower)
    expect([over.status, over.body.code]).toEqual([429, 'messaging_quota_exceeded'])
    expect(over.body.detail).toMatch(/^hourly per recipient limit reached/)
  })

  it('SMS to a premium-rate Spanish number or to another country is 422 destination_not_allowed', async () => {
    for (const [phone, country] of [
      ['+34803123456', 'ES'],
      ['+12025550123', 'US'],
    ] as const) {
      const res = await sms(await patientWith(phone))
      expect([phone, res.status, res.body.code]).toEqual([phone, 422, 'destination_not_allowed'])
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/)
      expect(res.body.detail).toContain(country)
      expect(res.body.detail).not.toContain(phone.slice(3))
    }
  })
})
