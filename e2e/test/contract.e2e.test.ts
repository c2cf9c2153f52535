// The contract checked by a third party: every request of the README's walk-through and every
// documented error goes through Stoplight Prism's validating proxy with the committed document
// (docs/openapi.json), so a schema that says other than what the API does fails here.
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createClinicClient, unwrap } from '@clinic/client'
import { waitFor } from '@clinic/platform/testing'
import { walkThrough } from '../../packages/client/examples/walkthrough'
import { SETTLE_MS, call, extraGateway, makeTenant, stack, tokenFor, type Tenant } from '../src/client'
import { freePort } from '@clinic/platform/testing'
import { startPrism, violationsOf, type Prism, type Violation } from '../src/prism'

let tenant: Tenant
/** With --errors: any violation, request or response, fails the answer. */
let strict: Prism
/** Without: deliberately bad requests reach the gateway; only their answers must be right. */
let loose: Prism
const seen: Array<{ what: string; status: number; violations: Violation[] }> = []

beforeAll(async () => {
  ;[tenant, strict, loose] = await Promise.all([
    makeTenant(['ALM1', 'ALM2']),
    startPrism(stack().api, { errors: true }),
    startPrism(stack().api, { errors: false }),
  ])
}, 180_000)
afterAll(async () => {
  await Promise.all([strict?.stop(), loose?.stop()])
})

/** fetch through a Prism, keeping what it said of each answer. */
const checked =
  (side: 'any' | 'response') =>
  async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const req = new Request(input, init)
    const res = await fetch(req)
    const all = await violationsOf(res)
    const violations = side === 'any' ? all : all.filter((v) => v.location[0] !== 'request')
    seen.push({ what: `${req.method} ${new URL(req.url).pathname}`, status: res.status, violations })
    return res
  }

/** One request through a Prism; returns the answer and its body. */
async function send(
  prism: Prism,
  method: string,
  path: string,
  o: { token?: string; body?: unknown; headers?: Record<string, string> } = {},
) {
  const headers: Record<string, string> = { ...o.headers }
  if (o.token) headers['x-service-token'] = o.token
  if (o.body !== undefined) headers['content-type'] = 'application/json'
  const res = await checked(prism === loose ? 'response' : 'any')(`${prism.url}${path}`, {
    method,
    headers,
    body: o.body === undefined ? undefined : JSON.stringify(o.body),
  })
  const text = await res.text()
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined }
}

const tomorrow = () => new Date(Date.now() + 864e5).toISOString().slice(0, 10)

afterEach(() => {
  const bad = seen.filter((s) => s.violations.length)
  seen.length = 0
  if (bad.length)
    throw new Error(
      `Prism found contract violations:\n${bad
        .map((b) => `${b.what} -> ${b.status}: ${JSON.stringify(b.violations)}`)
        .join('\n')}`,
    )
})

describe('the contract, checked by Prism', () => {
  it('holds for the walk-through written against the generated types', async () => {
    const out = await walkThrough(strict.url, tenant.token, tomorrow(), checked('any'))
    expect(out.firstPage.meta.total).toBeGreaterThanOrEqual(1)
    expect(out.secondPage.data).toHaveLength(1)
    expect(out.checkedIn.status).toBe('checked_in')
    expect(out.message.status).toBe('queued')
    expect(out.trail.data.length).toBeGreaterThan(0)
    expect(seen.length).toBeGreaterThanOrEqual(10)
  })

  it('holds for @clinic/client: a full sync with paginate, If-Match from the last ETag, Idempotency-Key', async () => {
    const api = createClinicClient({ baseUrl: strict.url, token: tenant.token, fetch: checked('any') })
    const body = { first_name: 'Sync', last_name: 'Cliente', birth_date: '1980-05-05', codalmacen: 'ALM2' }
    const created = await Promise.all([1, 2, 3].map(() => api.POST('/patients', { body }).then(unwrap)))
    const synced = []
    for await (const p of api.paginate('/patients', { codalmacen: 'ALM2', limit: 1 })) synced.push(p.id)
    expect(synced).toEqual(expect.arrayContaining(created.map((c) => c.id)))
    expect(synced.length).toBeGreaterThanOrEqual(3)
    // No If-Match given: the client sends the ETag of the create; then a stale one is 412.
    const id = created[0]!.id
    const patched = await api.PATCH('/patients/{id}', { params: { path: { id } }, body: { notes: 'al dia' } })
    expect([patched.response.status, patched.data?.version]).toEqual([200, 2])
    const stale = await api.PATCH('/patients/{id}', {
      params: { path: { id }, header: { 'if-match': '"1"' } },
      body: { notes: 'tarde' },
    })
    expect([stale.response.status, stale.error?.code]).toEqual([412, 'version_mismatch'])
  })

  it('holds for every documented error of a valid request', async () => {
    const t = tenant.token
    const day = new Date(Date.now() + 2 * 864e5).toISOString().slice(0, 10)
    const patient = (first_name: string) => ({
      first_name,
      last_name: 'Prueba',
      birth_date: '1990-01-01',
      codalmacen: 'ALM1',
    })
    const p = await send(strict, 'POST', '/patients', { token: t, body: patient('Ana') })
    expect(p.status).toBe(201)
    const slot = {
      patient_id: p.body.id,
      codalmacen: 'ALM1',
      practitioner: 'dr-contract',
      starts_at: `${day}T10:00:00Z`,
      ends_at: `${day}T10:30:00Z`,
    }
    const key = { 'idempotency-key': `contract-${Date.now()}` }
    // [method, path, request, status, code]: in order (the second booking and the second key use count).
    const cases: Array<[string, string, Parameters<typeof send>[3], number, string?]> = [
      ['GET', '/patients', { token: 'csk_not-a-real-token' }, 401, 'unauthenticated'],
      ['GET', '/patients/019ab2c4-1f00-7000-8000-000000000099', { token: t }, 404, 'not_found'],
      [
        'PATCH',
        `/patients/${p.body.id}`,
        { token: t, headers: { 'if-match': '"7"' }, body: { notes: 'x' } },
        412,
        'version_mismatch',
      ],
      ['POST', '/appointments', { token: t, body: slot }, 201],
      ['POST', '/appointments', { token: t, body: slot }, 409, 'slot_conflict'],
      [
        'POST',
        '/comms/send',
        { token: t, body: { patient_id: p.body.id, channel: 'sms', body: 'hola' } },
        422,
        'no_contact_address',
      ],
      ['POST', '/patients', { token: t, headers: key, body: patient('Eva') }, 201],
      ['POST', '/patients', { token: t, headers: key, body: patient('Otra') }, 409, 'idempotency_conflict'],
      ['GET', '/patients?codalmacen=NOPE', { token: t }, 400, 'unknown_center'],
      ['GET', '/health', {}, 200],
    ]
    for (const [method, path, request, status, code] of cases) {
      const res = await send(strict, method, path, request)
      expect([method, path, res.status, res.body?.code]).toEqual([
        method,
        path,
        status,
        code ?? res.body?.code,
      ])
    }
  })

  it('holds for webhook endpoints, their deliveries and the change feed', async () => {
    // A company of its own: its feed and deliveries hold only what this test does.
    const t = (await makeTenant(['ALM1'])).token
    // A receiver on this machine (the stack allows plain http on 127.0.0.1) that takes everything.
    const receiver = createServer((req, res) => {
      req.resume()
      req.on('end', () => res.writeHead(204).end())
    })
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`
    try {
      const created = await send(strict, 'POST', '/webhooks/endpoints', {
        token: t,
        headers: { 'idempotency-key': `contract-wh-${Date.now()}` },
        body: { url: hook, event_types: ['patient.created', 'appointment.created'], description: 'Contract' },
      })
      expect(created.status).toBe(201)
      const id = created.body.id as string
      const at = `/webhooks/endpoints/${id}`
      const patched = await send(strict, 'PATCH', at, {
        token: t,
        headers: { 'if-match': '"1"' },
        body: { event_types: ['*'], codalmacen: 'ALM1' },
      })
      expect([patched.status, patched.body.version]).toEqual([200, 2])
      const rotated = await send(strict, 'POST', `${at}/rotate-secret`, { token: t })
      expect([rotated.status, rotated.body.secret === created.body.secret]).toEqual([200, false])
      expect((await send(strict, 'POST', `${at}/test`, { token: t })).status).toBe(202)
      // An event through the API, delivered: its log row and the feed, through Prism below.
      const p = await send(strict, 'POST', '/patients', {
        token: t,
        body: { first_name: 'Gancho', last_name: 'Prueba', birth_date: '1990-01-01', codalmacen: 'ALM1' },
      })
      expect(p.status).toBe(201)
      await waitFor(
        async () => {
          const log = await call('GET', `${at}/deliveries`, { token: t })
          return (
            log.body.data.length === 2 &&
            log.body.data.every((d: { status: string }) => d.status === 'succeeded')
          )
        },
        { timeoutMs: SETTLE_MS, what: 'the test event and patient.created delivered' },
      )
      const log = await send(strict, 'GET', `${at}/deliveries?status=succeeded&event_type=patient.created`, {
        token: t,
      })
      expect(log.body.data).toHaveLength(1)
      const requests: Array<[string, string, Parameters<typeof send>[3], number, string?]> = [
        ['GET', '/webhooks/endpoints?codalmacen=ALM1&status=enabled&limit=10', { token: t }, 200],
        ['GET', at, { token: t }, 200],
        ['POST', `/webhooks/deliveries/${log.body.data[0].id}/retry`, { token: t }, 202],
        [
          'POST',
          `${at}/replay`,
          { token: t, body: { since: new Date(Date.now() - 3600_000).toISOString() } },
          202,
        ],
        ['GET', '/events?types=patient.created&codalmacen=ALM1&limit=100', { token: t }, 200],
        ['GET', '/events?limit=1&wait=1', { token: t }, 200],
        // Documented errors.
        ['GET', '/webhooks/endpoints/019ab2c4-1f00-7000-8000-000000000099', { token: t }, 404, 'not_found'],
        [
          'PATCH',
          at,
          { token: t, headers: { 'if-match': '"1"' }, body: { description: 'x' } },
          412,
          'version_mismatch',
        ],
        [
          'POST',
          '/webhooks/endpoints',
          { token: t, body: { url: 'https://user:pass@hooks.example.com/x', event_types: ['*'] } },
          422,
          'unsafe_url',
        ],
        ['GET', '/events?after=bm9wZQ', { token: t }, 400, 'validation_failed'],
        ['DELETE', at, { token: t }, 204],
      ]
      for (const [method, url, request, status, code] of requests) {
        const res = await send(strict, method, url, request)
        expect([method, url, res.status, res.body?.code]).toEqual([
          method,
          url,
          status,
          code ?? res.body?.code,
        ])
      }
      // The feed's page with an event: its thin data validated against FeedPage.
      const page = await send(strict, 'GET', '/events?types=patient.created', { token: t })
      expect(page.body.data.map((e: { data: { id: string } }) => e.data.id)).toContain(p.body.id)
    } finally {
      receiver.closeAllConnections()
      await new Promise((resolve) => receiver.close(resolve))
    }
  })

  // DESIGN.md section 12: the reminder policy, reminders, consent, the guardian override, the
  // destinations and quotas of messages, and the inbound SMS webhook, with their documented errors.
  it('holds for reminders, their policy, consent and the messaging limits', async () => {
    // A company of its own: its policy, quotas and consent are this test's alone.
    const own = await makeTenant(['ALM1', 'ALM2'])
    const t = own.token
    const limited = await tokenFor(own, '--centers', 'ALM1')
    const patient = async (o: Record<string, unknown>) => {
      const res = await call('POST', '/patients', {
        token: t,
        body: {
          first_name: 'Contrato',
          last_name: 'Avisos',
          birth_date: '2015-03-03',
          codalmacen: 'ALM1',
          ...o,
        },
      })
      expect(res.status).toBe(201)
      return res.body.id as string
    }
    const guardianEmail = `tutor.${own.companyId}@example.test`
    const [guarded, abroad, busy] = await Promise.all([
      patient({
        email: `nino.${own.companyId}@example.test`,
        requires_legal_guardian: true,
        guardian: { name: 'Tutora Contrato', relationship: 'mother', email: guardianEmail },
      }),
      patient({ phone: '+12025550123' }),
      patient({ phone: '+34600000123' }),
    ])
    const policy = { enabled: true, offsets: ['P1D', 'PT2H'], quiet_hours: { start: '21:00', end: '08:00' } }
    const initial = await send(strict, 'GET', '/comms/reminder-policy', { token: t })
    expect([initial.status, initial.body.enabled]).toEqual([200, false])
    const set = await send(strict, 'PUT', '/comms/reminder-policy', { token: t, body: policy })
    expect([set.status, set.headers.get('etag')]).toEqual([200, '"1"'])
    // Booked with the policy on, 60 days ahead (past any clock another suite moves): two reminders.
    const start = new Date(Math.ceil((Date.now() + 60 * 864e5) / 3_600_000) * 3_600_000)
    const booked = await call('POST', '/appointments', {
      token: t,
      body: {
        patient_id: guarded,
        codalmacen: 'ALM1',
        practitioner: 'dra-contrato',
        starts_at: start.toISOString(),
        ends_at: new Date(start.getTime() + 30 * 60_000).toISOString(),
      },
    })
    expect(booked.status).toBe(201)
    await waitFor(
      async () =>
        (await call('GET', `/comms/reminders?appointment_id=${booked.body.id}`, { token: t })).body.data
          .length === 2,
      { timeoutMs: SETTLE_MS, intervalMs: 200, what: 'two reminders scheduled' },
    )
    // Ten SMS to one number (the hourly quota), so the eleventh below is over it.
    for (let i = 0; i < 10; i++)
      expect(
        (
          await call('POST', '/comms/send', {
            token: t,
            body: { patient_id: busy, channel: 'sms', body: 'hola' },
          })
        ).status,
      ).toBe(202)
    const requests: Array<[string, string, Parameters<typeof send>[3], number, string?]> = [
      [
        'PUT',
        '/comms/reminder-policy',
        { token: t, headers: { 'if-match': '"1"' }, body: { ...policy, confirm_links: false } },
        200,
      ],
      [
        'PUT',
        '/comms/reminder-policy',
        { token: t, headers: { 'if-match': '"1"' }, body: policy },
        412,
        'version_mismatch',
      ],
      [
        'PUT',
        '/comms/reminder-policy',
        { token: t, body: { ...policy, offsets: ['P40D'] } },
        400,
        'validation_failed',
      ],
      ['PUT', '/comms/reminder-policy', { token: limited, body: policy }, 403, 'center_forbidden'],
      ['GET', '/comms/reminder-policy', { token: limited }, 200],
      ['GET', `/comms/reminders?appointment_id=${booked.body.id}`, { token: t }, 200],
      ['GET', '/comms/reminders?status=scheduled&codalmacen=ALM1&limit=10', { token: t }, 200],
      ['GET', '/comms/reminders?codalmacen=ALM2', { token: limited }, 403, 'center_forbidden'],
      [
        'PUT',
        '/comms/preferences',
        { token: t, body: { channel: 'email', address: guardianEmail, opted_out: true } },
        200,
      ],
      ['GET', `/comms/preferences?address=${encodeURIComponent(guardianEmail)}`, { token: t }, 200],
      ['GET', '/comms/preferences?address=%2B34600000123&channel=sms', { token: limited }, 200],
      [
        'PUT',
        '/comms/preferences',
        { token: t, body: { channel: 'sms', address: guardianEmail, opted_out: true } },
        400,
        'validation_failed',
      ],
      [
        'POST',
        '/comms/send',
        { token: t, body: { patient_id: guarded, recipient: 'patient', body: 'hola' } },
        422,
        'guardian_override_required',
      ],
      [
        'POST',
        '/comms/send',
        {
          token: t,
          body: { patient_id: guarded, recipient: 'patient', override_guardian: true, body: 'hola' },
        },
        202,
      ],
      // To the guardian, who opted out above: kept, never sent.
      ['POST', '/comms/send', { token: t, body: { patient_id: guarded, body: 'hola' } }, 202],
      [
        'POST',
        '/comms/send',
        { token: t, body: { patient_id: abroad, channel: 'sms', body: 'hola' } },
        422,
        'destination_not_allowed',
      ],
      [
        'POST',
        '/comms/send',
        { token: t, body: { patient_id: busy, channel: 'sms', body: 'hola' } },
        429,
        'messaging_quota_exceeded',
      ],
    ]
    const answers = []
    for (const [method, url, request, status, code] of requests) {
      const res = await send(strict, method, url, request)
      expect([method, url, res.status, res.body?.code]).toEqual([method, url, status, code ?? res.body?.code])
      answers.push(res)
    }
    expect(answers[13]!.body).toMatchObject({ status: 'queued', override_guardian: true })
    expect(answers[14]!.body).toMatchObject({ status: 'suppressed', recipient: { role: 'guardian' } })
    expect(Number(answers[16]!.headers.get('retry-after'))).toBeGreaterThan(0)
    // Twilio's incoming SMS: a form, no API token; a signature that is not Twilio's is 403.
    const inbound = await checked('any')(`${strict.url}/comms/webhooks/twilio/inbound`, {
      method: 'POST',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        'x-twilio-signature': 'bm8tc2lnbmF0dXJl',
      },
      body: new URLSearchParams({
        MessageSid: `SM${'0'.repeat(32)}`,
        From: '+34600000123',
        Body: 'STOP',
      }).toString(),
    })
    expect([inbound.status, ((await inbound.json()) as { code?: string }).code]).toEqual([
      403,
      'invalid_signature',
    ])
  })

  // DESIGN.md section 10: a token limited to centers manages endpoints of its centers only. The
  // service answers 403 center_forbidden for a body naming another center or none, and the
  // document must say so (the gateway documents 403 only where a `codalmacen` parameter is).
  it('holds for a token limited to a center whose webhook endpoint names another center or none (403)', async () => {
    const limited = await tokenFor(tenant, '--centers', 'ALM1')
    const url = 'https://hooks.example.com/clinic'
    const none = await send(strict, 'POST', '/webhooks/endpoints', {
      token: limited,
      body: { url, event_types: ['*'] },
    })
    expect([none.status, none.body?.code]).toEqual([403, 'center_forbidden'])
    const own = await send(strict, 'POST', '/webhooks/endpoints', {
      token: limited,
      body: { url, event_types: ['*'], codalmacen: 'ALM1' },
    })
    expect(own.status).toBe(201)
    const moved = await send(strict, 'PATCH', `/webhooks/endpoints/${own.body.id}`, {
      token: limited,
      body: { codalmacen: 'ALM2' },
    })
    expect([moved.status, moved.body?.code]).toEqual([403, 'center_forbidden'])
  })

  it('holds for refused requests: no token, bad body, bad query', async () => {
    const t = tenant.token
    const refused = [
      await send(loose, 'GET', '/patients'),
      await send(loose, 'POST', '/patients', { token: t, body: { first_name: '', birth_date: 'soon' } }),
      await send(loose, 'GET', '/patients?limit=1000', { token: t }),
      await send(loose, 'GET', '/appointments/not-a-uuid', { token: t }),
    ]
    expect(refused.map((r) => r.status)).toEqual([401, 400, 400, 400])
    expect(refused[1]!.body.errors.length).toBeGreaterThan(1)
  })

  it('holds for 429 and 503, through a gateway that answers them', async () => {
    // Two requests a minute, and a patients service that does not answer.
    const gw = await extraGateway({
      RATE_LIMIT_PER_MINUTE: '2',
      PATIENTS_URL: `http://127.0.0.1:${await freePort()}`,
    })
    const prism = await startPrism(gw.api, { errors: true })
    try {
      const statuses = []
      for (const path of ['/patients', '/appointments', '/appointments'])
        statuses.push((await send(prism, 'GET', path, { token: tenant.token })).status)
      expect(statuses).toEqual([503, 200, 429])
      // The client reads Retry-After (validated by Prism) and waits that long before its retry.
      const waits: number[] = []
      const sleep = async (ms: number) => void waits.push(ms)
      const api = createClinicClient({
        baseUrl: prism.url,
        token: tenant.token,
        fetch: checked('any'),
        sleep,
        maxRetries: 1,
      })
      expect((await api.GET('/appointments')).response.status).toBe(429)
      expect(waits).toHaveLength(1)
      expect(waits[0]).toBeGreaterThanOrEqual(1000)
    } finally {
      await Promise.all([prism.stop(), gw.stop()])
    }
  }, 180_000)
})
