import { randomUUID } from 'node:crypto'
import { testPrincipal, waitFor } from '@clinic/platform/testing'
import type { OutgoingMessage, Provider } from '../../src/domain/deliver-message'
import { guardianOf, makeContact } from '../fixtures'
import { clientFor, startComms, type Harness } from '../helpers'

/**
 * DESIGN.md sections 3 and 12 on the real comms app and PostgreSQL: the SMS destinations, consent
 * (suppressed), the daily quota per company and channel and the hourly quota per recipient address
 * (atomic, also across two app instances on one database, as two replicas), and the guardian override.
 */
let h: Harness
/** A second instance on the same database with the same limits: another replica. */
let twin: Harness
/** An instance with small daily quotas (3 SMS, 2 emails a day). */
let small: Harness
beforeAll(async () => {
  h = await startComms()
  twin = await startComms()
  small = await startComms({ limits: { dailySms: 3, dailyEmail: 2 } })
})
afterAll(async () => {
  await small?.close()
  await twin?.close()
  await h?.close()
})

/** A company whose directory (on every harness) knows `contact`. */
function company(contact = makeContact(), principal = testPrincipal()) {
  for (const x of [h, twin, small]) x.directory.addPatient(principal.companyId, contact)
  return { principal, patient: contact, client: clientFor(h.app, principal) }
}
const sms = (patientId: string) => ({ patient_id: patientId, channel: 'sms', body: 'Recordatorio ficticio' })
const rowsTo = (companyId: number, address: string) =>
  h.owner('messages').where({ idempresa: companyId, recipient_address: address }).orderBy('created_at')

describe('the hourly quota per recipient address', () => {
  it('25 SMS to one number in an hour: 10 accepted, 15 answered 429 with Retry-After; nothing stored', async () => {
    const { client, patient, principal } = company()
    const answers = []
    for (let i = 0; i < 25; i++) answers.push(await client.post('/comms/send', sms(patient.id)))
    expect(answers.map((a) => a.statusCode)).toEqual([...Array(10).fill(202), ...Array(15).fill(429)])
    for (const refused of answers.slice(10)) {
      expect(refused.headers['content-type']).toContain('application/problem+json')
      expect(refused.json()).toMatchObject({ status: 429, code: 'messaging_quota_exceeded' })
      expect(refused.json().detail).toMatch(/^hourly per recipient limit reached/)
      expect(refused.json().detail).not.toContain(patient.phone)
      // Until the first of the hour leaves the window: about an hour.
      const after = Number(refused.headers['retry-after'])
      expect(after).toBeGreaterThan(3500)
      expect(after).toBeLessThanOrEqual(3600)
    }
    expect(await rowsTo(principal.companyId, patient.phone!)).toHaveLength(10)
    // Another address of the same company is not held back.
    const email = await client.post('/comms/send', { patient_id: patient.id, body: 'x' })
    expect(email.statusCode).toBe(202)
  })

  it('Retry-After is when the oldest message of the window leaves it', async () => {
    const { client, patient, principal } = company()
    for (let i = 0; i < 10; i++)
      expect((await client.post('/comms/send', sms(patient.id))).statusCode).toBe(202)
    const [oldest] = await rowsTo(principal.companyId, patient.phone!)
    await h
      .owner('messages')
      .where({ id: oldest.id })
      .update({ created_at: h.owner.raw("now() - interval '59 minutes'") })
    const refused = await client.post('/comms/send', sms(patient.id))
    expect(refused.statusCode).toBe(429)
    const after = Number(refused.headers['retry-after'])
    expect(after).toBeGreaterThanOrEqual(55)
    expect(after).toBeLessThanOrEqual(61)
    // Out of the window, it no longer counts: room for one more.
    await h
      .owner('messages')
      .where({ id: oldest.id })
      .update({ created_at: h.owner.raw("now() - interval '61 minutes'") })
    expect((await client.post('/comms/send', sms(patient.id))).statusCode).toBe(202)
  })

  it('a refused send stores nothing: the same Idempotency-Key later is a fresh attempt', async () => {
    const { client, patient, principal } = company()
    for (let i = 0; i < 10; i++) await client.post('/comms/send', sms(patient.id))
    const key = { 'idempotency-key': 'quota-retry-1' }
    const first = await client.post('/comms/send', sms(patient.id), key)
    expect(first.statusCode).toBe(429)
    expect(await h.owner('idempotency_keys').where({ idempresa: principal.companyId })).toHaveLength(0)
    // Retried at once: refused again (not a stored answer, not a conflict).
    const again = await client.post('/comms/send', sms(patient.id), key)
    expect([again.statusCode, again.headers['idempotent-replayed']]).toEqual([429, undefined])
    // Once the hour has passed, the same key queues the message, and then replays it.
    await h
      .owner('messages')
      .where({ idempresa: principal.companyId })
      .update({ created_at: h.owner.raw("now() - interval '2 hours'") })
    const later = await client.post('/comms/send', sms(patient.id), key)
    expect(later.statusCode).toBe(202)
    const replay = await client.post('/comms/send', sms(patient.id), key)
    expect([replay.statusCode, replay.headers['idempotent-replayed'], replay.json().id]).toEqual([
      202,
      'true',
      later.json().id,
    ])
  })

  it('counts one address however it is written: Quota@Example.TEST and quota@example.test are one recipient', async () => {
    const local = `quota-${randomUUID().slice(0, 8)}`
    const principal = testPrincipal()
    // Two patients (or a patient and a guardian) whose records write one mailbox differently.
    const upper = company(makeContact({ email: ` ${local.toUpperCase()}@Example.TEST ` }), principal)
    const lower = company(makeContact({ email: `${local}@example.test` }), principal)
    const email = (patientId: string) => ({
      patient_id: patientId,
      channel: 'email',
      subject: 's',
      body: 'x',
    })
    for (let i = 0; i < 10; i++)
      expect((await upper.client.post('/comms/send', email(upper.patient.id))).statusCode).toBe(202)
    const refused = await lower.client.post('/comms/send', email(lower.patient.id))
    expect(refused.statusCode).toBe(429)
    expect(refused.json()).toMatchObject({ code: 'messaging_quota_exceeded' })
    expect(refused.json().detail).toMatch(/^hourly per recipient/)
    // Stored in the one form the quota, consent and keyword lookups read.
    expect(await rowsTo(principal.companyId, `${local}@example.test`)).toHaveLength(10)
  })

  it('30 concurrent sends to one address, through two instances, never admit more than 10', async () => {
    const { client, patient, principal } = company()
    const other = clientFor(twin.app, principal)
    const answers = await Promise.all(
      Array.from({ length: 30 }, (_, i) => (i % 2 ? other : client).post('/comms/send', sms(patient.id))),
    )
    const statuses = answers.map((a) => a.statusCode)
    expect(statuses.filter((s) => s === 202)).toHaveLength(10)
    expect(statuses.filter((s) => s === 429)).toHaveLength(20)
    expect(await rowsTo(principal.companyId, patient.phone!)).toHaveLength(10)
  })
})

describe('the daily quota per company and channel', () => {
  /** `n` patients of the company, each with a number of its own (the hourly quota stays out of it). */
  function patients(principal: ReturnType<typeof testPrincipal>, n: number) {
    return Array.from({ length: n }, (_, i) => {
      const p = makeContact({ phone: `+3460000${String(1000 + i)}`, email: `daily${i}@example.test` })
      company(p, principal)
      return p
    })
  }
  const smallClient = (principal: ReturnType<typeof testPrincipal>) => clientFor(small.app, principal)

  it('two tokens of one company share it; another company has its own; Retry-After is the next UTC day', async () => {
    const first = testPrincipal()
    const second = testPrincipal({
      companyId: first.companyId,
      userId: '0190c5a0-0000-7000-8000-0000000000a2',
      username: 'second-user',
      tokenId: '0190c5a0-0000-7000-8000-0000000000b2',
    })
    const ps = patients(first, 5)
    const [a, b] = [smallClient(first), smallClient(second)]
    expect((await a.post('/comms/send', sms(ps[0]!.id))).statusCode).toBe(202)
    expect((await b.post('/comms/send', sms(ps[1]!.id))).statusCode).toBe(202)
    expect((await a.post('/comms/send', sms(ps[2]!.id))).statusCode).toBe(202)
    const over = await b.post('/comms/send', sms(ps[3]!.id))
    expect([over.statusCode, over.json().code]).toEqual([429, 'messaging_quota_exceeded'])
    expect(over.json().detail).toMatch(/^daily sms limit reached: at most 3 SMS per company and UTC day/)
    const midnight = new Date()
    midnight.setUTCHours(24, 0, 0, 0)
    const untilMidnight = (midnight.getTime() - Date.now()) / 1000
    expect(Math.abs(Number(over.headers['retry-after']) - untilMidnight)).toBeLessThan(5)
    // Email has a quota of its own (2 here).
    expect((await a.post('/comms/send', { patient_id: ps[4]!.id, body: 'x' })).statusCode).toBe(202)
    expect((await b.post('/comms/send', { patient_id: ps[3]!.id, body: 'x' })).statusCode).toBe(202)
    const email = await a.post('/comms/send', { patient_id: ps[2]!.id, body: 'x' })
    expect([email.statusCode, email.json().detail]).toEqual([
      429,
      expect.stringMatching(/^daily email limit/),
    ])
    const counts = await h.owner('daily_counts').where({ idempresa: first.companyId }).orderBy('channel')
    expect(counts.map((c) => [c.channel, c.count])).toEqual([
      ['email', 2],
      ['sms', 3],
    ])

    const other = testPrincipal()
    const theirs = patients(other, 3)
    for (const p of theirs)
      expect((await smallClient(other).post('/comms/send', sms(p.id))).statusCode).toBe(202)
  })

  it('concurrent sends (Promise.all of 30) never count past the limit', async () => {
    const principal = testPrincipal()
    const ps = patients(principal, 30)
    const answers = await Promise.all(ps.map((p) => smallClient(principal).post('/comms/send', sms(p.id))))
    expect(answers.filter((a) => a.statusCode === 202)).toHaveLength(3)
    expect(answers.filter((a) => a.statusCode === 429)).toHaveLength(27)
    expect(await h.owner('messages').where({ idempresa: principal.companyId })).toHaveLength(3)
    expect(await h.owner('daily_counts').where({ idempresa: principal.companyId })).toEqual([
      expect.objectContaining({ channel: 'sms', count: 3 }),
    ])
  })
})

describe('SMS destinations (COMMS_SMS_COUNTRIES, paid numbers)', () => {
  it('422 destination_not_allowed naming the country, never the number; nothing stored', async () => {
    const cases: Array<[phone: string, detail: RegExp]> = [
      ['+34803123456', /premium-rate numbers of ES/],
      ['+34806123456', /premium-rate numbers of ES/],
      ['+34901123456', /shared-cost numbers of ES/],
      ['+12025550123', /SMS to US is not allowed \(allowed: ES, PT, FR, AD, GB, DE, IT\)/],
      ['+34123', /not a valid international/],
    ]
    for (const [phone, detail] of cases) {
      const { client, patient, principal } = company(makeContact({ phone }))
      const res = await client.post('/comms/send', sms(patient.id))
      expect([phone, res.statusCode, res.json().code]).toEqual([phone, 422, 'destination_not_allowed'])
      expect(res.json().detail).toMatch(detail)
      expect(res.json().detail).not.toContain(phone.slice(3))
      expect(await h.owner('messages').where({ idempresa: principal.companyId })).toHaveLength(0)
      expect(await h.owner('daily_counts').where({ idempresa: principal.companyId })).toHaveLength(0)
    }
    // The countries allowed by default (ES, PT, ...), and email to anyone, go.
    for (const phone of ['+34600000001', '+351912345678', '+447400123456']) {
      const { client, patient } = company(makeContact({ phone }))
      expect((await client.post('/comms/send', sms(patient.id))).statusCode).toBe(202)
    }
  })
})

describe('consent: an opted-out address', () => {
  const optOut = (companyId: number, channel: string, address: string) =>
    h.owner('preferences').insert({ idempresa: companyId, channel, address, opted_out: true, source: 'api' })

  it('202 with status suppressed, comms.message.suppressed (no queued event), counted against no quota', async () => {
    const { client, patient, principal } = company()
    await optOut(principal.companyId, 'sms', patient.phone!)
    const answers = []
    for (let i = 0; i < 12; i++) answers.push(await client.post('/comms/send', sms(patient.id)))
    expect(answers.map((a) => [a.statusCode, a.json().status])).toEqual(Array(12).fill([202, 'suppressed']))
    const id = answers[0]!.json().id
    const events = await h
      .owner('outbox')
      .where({ idempresa: principal.companyId })
      .whereRaw(`payload->>'subject' = ?`, [id])
    expect(events.map((e) => e.type)).toEqual(['comms.message.suppressed'])
    expect(events[0].payload.data).toMatchObject({ id, status: 'suppressed', channel: 'sms' })
    expect(await h.owner('daily_counts').where({ idempresa: principal.companyId })).toHaveLength(0)
    // Listed and found by status.
    const listed = await client.get('/comms/messages?status=suppressed')
    expect(listed.json().meta.total).toBe(12)
    // Email opts out apart, in any case the address was written.
    await optOut(principal.companyId, 'email', patient.email!.toLowerCase())
    const upper = makeContact({ email: patient.email!.toUpperCase() })
    company(upper, principal)
    expect((await client.post('/comms/send', { patient_id: upper.id, body: 'x' })).json().status).toBe(
      'suppressed',
    )
    // Another company's opt-out is not this one's.
    const other = company(makeContact({ phone: patient.phone }))
    expect((await other.client.post('/comms/send', sms(other.patient.id))).json().status).toBe('queued')
  })

  it('the delivery worker never hands a suppressed message to its provider', async () => {
    const handed: OutgoingMessage[] = []
    const recording: Provider = {
      send: async (m) => {
        handed.push(m)
        return { providerId: `rec-${m.id}` }
      },
    }
    const d = await startComms({ providers: { email: recording, sms: recording } })
    try {
      const principal = testPrincipal()
      const quiet = makeContact()
      const loud = makeContact({ phone: '+34600000077' })
      d.directory.addPatient(principal.companyId, quiet)
      d.directory.addPatient(principal.companyId, loud)
      await d.owner('preferences').insert({
        idempresa: principal.companyId,
        channel: 'sms',
        address: quiet.phone,
        opted_out: true,
        source: 'sms_keyword',
      })
      const client = clientFor(d.app, principal)
      const suppressed = (await client.post('/comms/send', sms(quiet.id))).json()
      const sent = (await client.post('/comms/send', sms(loud.id))).json()
      expect([suppressed.status, sent.status]).toEqual(['suppressed', 'queued'])
      await waitFor(async () => (await client.get(`/comms/messages/${sent.id}`)).json().status === 'sent', {
        timeoutMs: 15_000,
        what: 'the other message to be sent',
      })
      expect(handed.map((m) => m.id)).toEqual([sent.id])
      expect((await client.get(`/comms/messages/${suppressed.id}`)).json()).toMatchObject({
        status: 'suppressed',
        attempts: 0,
        sent_at: null,
      })
    } finally {
      await d.close()
    }
  })
})

describe('override_guardian', () => {
  const ward = () => makeContact({ requires_legal_guardian: true, guardian: guardianOf() })
  const eventsOf = (companyId: number, id: string) =>
    h.owner('outbox').where({ idempresa: companyId }).whereRaw(`payload->>'subject' = ?`, [id])

  it('recipient "patient" of a patient who requires a guardian: 422 guardian_override_required without it', async () => {
    const { client, patient, principal } = company(ward())
    for (const override_guardian of [undefined, false]) {
      const res = await client.post('/comms/send', {
        patient_id: patient.id,
        body: 'x',
        recipient: 'patient',
        override_guardian,
      })
      expect([res.statusCode, res.json().code]).toEqual([422, 'guardian_override_required'])
    }
    expect(await h.owner('messages').where({ idempresa: principal.companyId })).toHaveLength(0)
  })

  it('with it: sent to the patient, stored and shown, and carried by the queued event for the audit trail', async () => {
    const { client, patient, principal } = company(ward())
    const res = await client.post('/comms/send', {
      patient_id: patient.id,
      body: 'x',
      recipient: 'patient',
      override_guardian: true,
    })
    expect(res.statusCode).toBe(202)
    const m = res.json()
    expect(m).toMatchObject({
      recipient: { role: 'patient', address: patient.email },
      override_guardian: true,
    })
    expect((await client.get(`/comms/messages/${m.id}`)).json().override_guardian).toBe(true)
    expect(await h.owner('messages').where({ id: m.id }).first()).toMatchObject({ override_guardian: true })
    const [event] = await eventsOf(principal.companyId, m.id)
    expect(event.type).toBe('comms.message.queued')
    expect(event.payload.data).toMatchObject({ id: m.id, recipient_role: 'patient', override_guardian: true })
  })

  it('overriding nothing records nothing: the guardian by default, or a patient who needs no guardian', async () => {
    const { client, patient, principal } = company(ward())
    const toGuardian = (
      await client.post('/comms/send', { patient_id: patient.id, body: 'x', override_guardian: true })
    ).json()
    expect(toGuardian).toMatchObject({ recipient: { role: 'guardian' }, override_guardian: false })
    const adult = company(makeContact(), principal).patient
    const toAdult = (
      await client.post('/comms/send', {
        patient_id: adult.id,
        body: 'x',
        recipient: 'patient',
        override_guardian: true,
      })
    ).json()
    expect(toAdult).toMatchObject({ recipient: { role: 'patient' }, override_guardian: false })
    for (const id of [toGuardian.id, toAdult.id]) {
      const [event] = await eventsOf(principal.companyId, id)
      expect(event.payload.data).not.toHaveProperty('override_guardian')
    }
  })
})

describe('metrics', () => {
  it('counts every admission by channel and outcome on /metrics', async () => {
    const { client, patient } = company(makeContact({ phone: '+12025550199' }))
    await client.post('/comms/send', sms(patient.id))
    await client.post('/comms/send', { patient_id: patient.id, body: 'x' })
    const res = await h.app.inject({ method: 'GET', url: '/metrics' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toMatch(
      /comms_messages_admitted_total\{[^}]*channel="sms"[^}]*outcome="destination_not_allowed"[^}]*\} [1-9]/,
    )
    expect(res.body).toMatch(
      /comms_messages_admitted_total\{[^}]*channel="email"[^}]*outcome="queued"[^}]*\} [1-9]/,
    )
    expect(res.body).toMatch(/outcome="quota_exceeded"/)
    expect(res.body).toMatch(/outcome="suppressed"/)
  })
})
