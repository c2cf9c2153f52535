import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { waitFor } from '@clinic/platform/testing'
import { SETTLE_MS, call, makeTenant, stack, type Tenant } from '../src/client'

let a: Tenant
let b: Tenant
beforeAll(async () => {
  ;[a, b] = await Promise.all([makeTenant(['ALM1']), makeTenant(['ALM1'])])
})

describe('comms through the gateway', () => {
  it("sends to a child's guardian by default and follows the message to sent (var/outbox)", async () => {
    const child = await call('POST', '/patients', {
      token: a.token,
      body: {
        first_name: 'Nina',
        last_name: 'Ficticia',
        birth_date: '2018-03-01',
        codalmacen: 'ALM1',
        email: 'nina@example.test',
        requires_legal_guardian: true,
        guardian: { name: 'Tutora Ficticia', relationship: 'mother', email: 'tutora@example.test' },
      },
    })
    expect(child.status).toBe(201)
    const sent = await call('POST', '/comms/send', {
      token: a.token,
      headers: { 'idempotency-key': 'e2e-reminder-1' },
      body: { patient_id: child.body.id, subject: 'Recordatorio', body: 'Cita mañana a las 10:00' },
    })
    expect(sent.status).toBe(202)
    expect(sent.headers.get('x-service-version')).toBeTruthy()
    expect(sent.body).toMatchObject({
      status: 'queued',
      channel: 'email',
      recipient: { role: 'guardian', name: 'Tutora Ficticia', address: 'tutora@example.test' },
    })
    const done = await waitFor(
      async () => {
        const m = await call('GET', `/comms/messages/${sent.body.id}`, { token: a.token })
        return m.body.status === 'sent' ? m.body : null
      },
      { timeoutMs: SETTLE_MS, what: 'the message to be sent' },
    )
    expect(done).toMatchObject({
      attempts: 1,
      provider_id: `file:${sent.body.id}.eml`,
      sent_at: expect.any(String),
    })
    const eml = path.join(stack().env.OUTBOX_DIR!, `${sent.body.id}.eml`)
    expect(existsSync(eml)).toBe(true)
    const raw = readFileSync(eml, 'utf8')
    expect(raw).toMatch(/^To: Tutora Ficticia <tutora@example\.test>$/m)
    expect(raw).toContain('Subject: Recordatorio')
    // A client retry with the same key sends nothing new.
    const again = await call('POST', '/comms/send', {
      token: a.token,
      headers: { 'idempotency-key': 'e2e-reminder-1' },
      body: { patient_id: child.body.id, subject: 'Recordatorio', body: 'Cita mañana a las 10:00' },
    })
    expect(again.body.id).toBe(sent.body.id)
    const list = await call('GET', `/comms/messages?patient_id=${child.body.id}`, { token: a.token })
    expect(list.body.meta.total).toBe(1)

    // The audit trail has the message's queued and sent events, with the actor, and no body nor address.
    const trail = await waitFor(
      async () => {
        const res = await call('GET', `/audit/events?resource_id=${sent.body.id}&limit=100`, {
          token: a.token,
        })
        const actions = res.body.data.map((e: { action: string }) => e.action)
        return actions.includes('comms.message.queued') && actions.includes('comms.message.sent')
          ? res.body
          : null
      },
      { timeoutMs: SETTLE_MS, what: 'the message on the audit trail' },
    )
    const queued = trail.data.find((e: { action: string }) => e.action === 'comms.message.queued')
    expect(queued).toMatchObject({ outcome: 'success', actor: { username: a.username } })
    expect(JSON.stringify(trail)).not.toMatch(/Cita mañana|tutora@example/)

    // Another company: the same patient id is indistinguishable from a missing one.
    const other = await call('POST', '/comms/send', {
      token: b.token,
      body: { patient_id: child.body.id, body: 'x' },
    })
    const missing = await call('POST', '/comms/send', {
      token: b.token,
      body: { patient_id: '0190c5a0-0000-7000-8000-00000000dead', body: 'x' },
    })
    expect([other.status, other.body.code]).toEqual([422, 'unknown_patient'])
    expect({ ...other.body, request_id: null }).toEqual({ ...missing.body, request_id: null })
    expect((await call('GET', '/comms/messages', { token: b.token })).body.meta.total).toBe(0)
  })
})
