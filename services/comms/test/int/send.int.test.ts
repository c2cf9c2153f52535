import { testPrincipal } from '@clinic/platform/testing'
import { guardianOf, makeContact } from '../fixtures'
import { clientFor, startComms, type Harness } from '../helpers'

let h: Harness
beforeAll(async () => {
  h = await startComms()
})
afterAll(() => h.close())

/** A company with a patient the directory knows. */
function setup(contact = makeContact(), principal = testPrincipal()) {
  h.directory.addPatient(principal.companyId, contact)
  return { client: clientFor(h.app, principal), patient: contact, principal }
}

describe('POST /comms/send', () => {
  it('answers 202 with the queued message; the row and its queued event commit together', async () => {
    const { client, patient, principal } = setup()
    const res = await client.post('/comms/send', {
      patient_id: patient.id,
      subject: 'Hola',
      body: 'Su cita es mañana',
    })
    expect(res.statusCode).toBe(202)
    const m = res.json()
    expect(m).toEqual({
      id: expect.any(String),
      patient_id: patient.id,
      appointment_id: null,
      codalmacen: 'ALM1',
      status: 'queued',
      recipient: { role: 'patient', name: `Testa ${patient.last_name}`, address: patient.email },
      channel: 'email',
      subject: 'Hola',
      template: null,
      override_guardian: false,
      attempts: 0,
      last_error: null,
      provider_id: null,
      created_at: expect.any(String),
      sent_at: null,
    })
    expect(res.headers.location).toBe(`/comms/messages/${m.id}`)
    // Reads carry the row version as ETag (DESIGN.md section 3), the 202 too.
    expect(res.headers.etag).toBe('"1"')
    const row = await h.owner('messages').where({ idempresa: principal.companyId, id: m.id }).first()
    expect(row).toMatchObject({
      status: 'queued',
      body: 'Su cita es mañana',
      recipient_address: patient.email,
    })
    const events = await h
      .owner('outbox')
      .where({ idempresa: principal.companyId })
      .whereRaw(`payload->>'subject' = ?`, [m.id])
    expect(events.map((e) => e.type)).toEqual(['comms.message.queued'])
    // Ids, channel, role and status only: never the body, subject or address.
    expect(events[0].payload.data).toEqual({
      id: m.id,
      patient_id: patient.id,
      appointment_id: null,
      channel: 'email',
      recipient_role: 'patient',
      status: 'queued',
    })
    expect(JSON.stringify(events[0].payload)).not.toContain(patient.email!)
    const read = await client.get(`/comms/messages/${m.id}`)
    expect(read.json()).toEqual(m)
    expect(read.headers.etag).toBe('"1"')
    // The ETag follows the row's version; the version itself is not a field of the message.
    await h.owner('messages').where({ id: m.id }).update({ version: 4 })
    const later = await client.get(`/comms/messages/${m.id}`)
    expect(later.headers.etag).toBe('"4"')
    expect(later.json()).not.toHaveProperty('version')
  })

  it('writes to the guardian by default when the patient requires one', async () => {
    const { client, patient } = setup(
      makeContact({ requires_legal_guardian: true, guardian: guardianOf({ email: null }) }),
    )
    const res = await client.post('/comms/send', { patient_id: patient.id, body: 'Recordatorio' })
    expect(res.statusCode).toBe(202)
    expect(res.json()).toMatchObject({
      channel: 'sms',
      recipient: { role: 'guardian', name: 'Tutora Ficticia', address: '+34600000002' },
    })
  })

  it('recipient "patient" with override_guardian overrides the guardian default', async () => {
    const { client, patient } = setup(makeContact({ requires_legal_guardian: true, guardian: guardianOf() }))
    const res = await client.post('/comms/send', {
      patient_id: patient.id,
      body: 'x',
      recipient: 'patient',
      override_guardian: true,
    })
    expect(res.statusCode).toBe(202)
    expect(res.json()).toMatchObject({
      recipient: { role: 'patient', address: patient.email },
      override_guardian: true,
    })
    // Without override_guardian: refused (test/int/limits.int.test.ts has the rest of the rule).
    const bare = await client.post('/comms/send', { patient_id: patient.id, body: 'x', recipient: 'patient' })
    expect([bare.statusCode, bare.json().code]).toEqual([422, 'guardian_override_required'])
  })

  it('422 guardian_required, 422 no_contact_address; nothing written', async () => {
    const { client, patient, principal } = setup(makeContact({ phone: null }))
    const g = await client.post('/comms/send', { patient_id: patient.id, body: 'x', recipient: 'guardian' })
    expect(g.statusCode).toBe(422)
    expect(g.headers['content-type']).toContain('application/problem+json')
    expect(g.json().code).toBe('guardian_required')
    const n = await client.post('/comms/send', { patient_id: patient.id, body: 'x', channel: 'sms' })
    expect([n.statusCode, n.json().code]).toEqual([422, 'no_contact_address'])
    expect(await h.owner('messages').where({ idempresa: principal.companyId })).toHaveLength(0)
  })

  it("another company's patient is unknown_patient, like a missing one", async () => {
    const { patient } = setup()
    const other = clientFor(h.app, testPrincipal())
    const res = await other.post('/comms/send', { patient_id: patient.id, body: 'x' })
    const missing = await other.post('/comms/send', {
      patient_id: '0190c5a0-0000-7000-8000-00000000dead',
      body: 'x',
    })
    expect([res.statusCode, res.json().code]).toEqual([422, 'unknown_patient'])
    expect({ ...missing.json(), request_id: 0 }).toEqual({ ...res.json(), request_id: 0 })
    expect(await h.owner('messages').where({ idempresa: other.principal.companyId })).toHaveLength(0)
  })

  it("a center-limited token may only write to its centers' patients", async () => {
    const principal = testPrincipal({ allowedCenters: ['ALM2'] })
    const { client, patient } = setup(makeContact({ codalmacen: 'ALM1' }), principal)
    const res = await client.post('/comms/send', { patient_id: patient.id, body: 'x' })
    expect([res.statusCode, res.json().code]).toEqual([422, 'unknown_patient'])
    const ok = setup(makeContact({ codalmacen: 'ALM2' }), principal)
    expect((await client.post('/comms/send', { patient_id: ok.patient.id, body: 'x' })).statusCode).toBe(202)
  })

  it('400 for CR/LF in subject, subject on sms, and bodies over the limits', async () => {
    const { client, patient } = setup()
    const cases = [
      { patient_id: patient.id, body: 'x', subject: 'Hi\r\nBcc: someone@example.test' },
      { patient_id: patient.id, body: 'x', subject: 'Hi', channel: 'sms' },
      { patient_id: patient.id, body: 'a'.repeat(1601), channel: 'sms' },
      { patient_id: patient.id },
      { patient_id: patient.id, body: 'x', unknown: 1 },
    ]
    for (const body of cases) {
      const res = await client.post('/comms/send', body)
      expect([res.statusCode, res.json().code]).toEqual([400, 'validation_failed'])
    }
    // The SMS limit applies to a channel that defaulted to sms too.
    const smsOnly = setup(makeContact({ email: null }))
    const long = await smsOnly.client.post('/comms/send', {
      patient_id: smsOnly.patient.id,
      body: 'a'.repeat(1601),
    })
    expect([long.statusCode, long.json().errors[0].path]).toEqual([400, '/body'])
  })

  it('each 400 names its field: SMS over 1,600 characters, CR/LF in subject, email body over 64 KiB', async () => {
    const { client, patient } = setup()
    const errorsOf = async (body: Record<string, unknown>) => {
      const res = await client.post('/comms/send', { patient_id: patient.id, ...body })
      expect([res.statusCode, res.json().code]).toEqual([400, 'validation_failed'])
      return res.json().errors.map((e: { path: string }) => e.path)
    }
    expect(await errorsOf({ channel: 'sms', body: '€'.repeat(1601) })).toEqual(['/body'])
    expect(await errorsOf({ body: 'x', subject: 'Hola\nBcc: someone@example.test' })).toEqual(['/subject'])
    expect(await errorsOf({ body: 'x', subject: 'Hola\r' })).toEqual(['/subject'])
    // 64 KiB of UTF-8 and one byte more: the body rule (400), not the request size (413).
    expect(await errorsOf({ channel: 'email', body: 'a'.repeat(64 * 1024 + 1) })).toEqual(['/body'])
    expect(await errorsOf({ channel: 'email', body: 'é'.repeat(32 * 1024) + 'a' })).toEqual(['/body'])
    // At the limits, accepted: 1,600 characters (not bytes) by SMS, 64 KiB by email even when every
    // character is escaped in JSON.
    for (const ok of [
      { channel: 'sms', body: '€'.repeat(1600) },
      { channel: 'email', body: 'a'.repeat(64 * 1024) },
      { channel: 'email', body: '\u0001'.repeat(64 * 1024) },
    ])
      expect((await client.post('/comms/send', { patient_id: patient.id, ...ok })).statusCode).toBe(202)
  })

  it('the subject is one line: CR, LF, tabs, C0 and C1 controls and line separators are 400 naming it', async () => {
    const { client, patient, principal } = setup()
    for (const subject of [
      'Hola\tBcc',
      'Hola \u0007',
      'Hola \u001b[31m',
      'Hola \u007f',
      'Hola \u0085Bcc: x',
      'Hola \u009b31m',
      'Hola \u2028Bcc: x',
      'Hola \u2029',
      '   ',
    ]) {
      const res = await client.post('/comms/send', { patient_id: patient.id, body: 'x', subject })
      expect([res.statusCode, res.json().code]).toEqual([400, 'validation_failed'])
      expect(res.json().errors).toEqual([
        { path: '/subject', message: 'must not be blank nor contain line breaks or control characters' },
      ])
    }
    expect(await h.owner('messages').where({ idempresa: principal.companyId })).toHaveLength(0)
    // Accents and punctuation are fine.
    const ok = await client.post('/comms/send', {
      patient_id: patient.id,
      body: 'x',
      subject: 'Recordatorio: cita el 23/11 a las 9:30 — Centro Norte',
    })
    expect(ok.statusCode).toBe(202)
  })

  it('Idempotency-Key: a retry replays the first answer and queues nothing new', async () => {
    const { client, patient, principal } = setup()
    const body = { patient_id: patient.id, body: 'Una vez' }
    const first = await client.post('/comms/send', body, { 'idempotency-key': 'k-1' })
    const again = await client.post('/comms/send', body, { 'idempotency-key': 'k-1' })
    expect(again.statusCode).toBe(202)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.json().id).toBe(first.json().id)
    const conflict = await client.post('/comms/send', { ...body, body: 'Otra' }, { 'idempotency-key': 'k-1' })
    expect([conflict.statusCode, conflict.json().code]).toEqual([409, 'idempotency_conflict'])
    expect(await h.owner('messages').where({ idempresa: principal.companyId })).toHaveLength(1)
    expect(await h.owner('outbox').where({ idempresa: principal.companyId })).toHaveLength(1)
  })

  it('Idempotency-Key: a retry replays the stored 202 with the patients service down or the contact changed', async () => {
    const { client, patient, principal } = setup()
    const body = { patient_id: patient.id, body: 'Solo una vez' }
    const first = await client.post('/comms/send', body, { 'idempotency-key': 'k-down' })
    expect(first.statusCode).toBe(202)
    h.directory.setDown(true)
    try {
      const calls = h.directory.calls
      const again = await client.post('/comms/send', body, { 'idempotency-key': 'k-down' })
      expect([again.statusCode, again.headers['idempotent-replayed']]).toEqual([202, 'true'])
      expect(again.json()).toEqual(first.json())
      expect([again.headers.location, again.headers.etag]).toEqual([first.headers.location, '"1"'])
      // Another body under the key is still a conflict, also without asking the patients service.
      const other = await client.post(
        '/comms/send',
        { ...body, body: 'Otra' },
        { 'idempotency-key': 'k-down' },
      )
      expect([other.statusCode, other.json().code]).toEqual([409, 'idempotency_conflict'])
      expect(h.directory.calls).toBe(calls)
    } finally {
      h.directory.setDown(false)
    }
    // The patient lost every address since: a new send would be 422; the retry is the stored 202.
    h.directory.addPatient(principal.companyId, { ...patient, email: null, phone: null })
    const later = await client.post('/comms/send', body, { 'idempotency-key': 'k-down' })
    expect([later.statusCode, later.headers['idempotent-replayed'], later.json().id]).toEqual([
      202,
      'true',
      first.json().id,
    ])
    expect(await h.owner('messages').where({ idempresa: principal.companyId })).toHaveLength(1)
    // A replay is a read: the same token, now limited to a center the message is not in, gets 404.
    const narrowed = clientFor(h.app, { ...principal, allowedCenters: ['ALM9'] })
    const hidden = await narrowed.post('/comms/send', body, { 'idempotency-key': 'k-down' })
    expect([hidden.statusCode, hidden.json().code]).toEqual([404, 'not_found'])
  })

  it('appointment_reminder renders in the recipient language with the local time', async () => {
    const { client, patient, principal } = setup(
      makeContact({ language: 'en', requires_legal_guardian: true, guardian: guardianOf() }),
    )
    const appointment = {
      id: '0190c5a0-0000-7000-8000-0000000a0001',
      patient_id: patient.id,
      codalmacen: 'ALM1',
      practitioner: 'Dr. Test',
      starts_at: '2026-07-01T07:15:00Z',
      ends_at: '2026-07-01T07:45:00Z',
      time_zone: 'Europe/Madrid',
      status: 'scheduled',
      version: 1,
    }
    h.directory.addAppointment(principal.companyId, appointment)
    const res = await client.post('/comms/send', {
      patient_id: patient.id,
      appointment_id: appointment.id,
      template: 'appointment_reminder',
    })
    expect(res.statusCode).toBe(202)
    expect(res.json()).toMatchObject({
      appointment_id: appointment.id,
      template: 'appointment_reminder',
      subject: 'Appointment reminder',
    })
    const row = await h.owner('messages').where({ idempresa: principal.companyId, id: res.json().id }).first()
    expect(row.body).toContain('09:15')
    expect(row.body).toContain('Dr. Test')
    const other = clientFor(h.app, testPrincipal())
    h.directory.addPatient(other.principal.companyId, patient)
    const wrong = await other.post('/comms/send', {
      patient_id: patient.id,
      appointment_id: appointment.id,
      template: 'appointment_reminder',
    })
    expect([wrong.statusCode, wrong.json().code]).toEqual([422, 'unknown_appointment'])
  })

  it('patients unreachable is 503 upstream_unavailable', async () => {
    const { client, patient } = setup()
    h.directory.setDown(true)
    try {
      const res = await client.post('/comms/send', { patient_id: patient.id, body: 'x' })
      expect([res.statusCode, res.json().code]).toEqual([503, 'upstream_unavailable'])
      expect(res.headers['retry-after']).toBeDefined()
    } finally {
      h.directory.setDown(false)
    }
  })
})

describe('GET /comms/messages', () => {
  it('filters, exact total, paging, company isolation', async () => {
    const a = setup(makeContact({ codalmacen: 'ALM1' }))
    const b = makeContact({ codalmacen: 'ALM2', email: null })
    h.directory.addPatient(a.principal.companyId, b)
    for (let i = 0; i < 3; i++)
      expect(
        (await a.client.post('/comms/send', { patient_id: a.patient.id, body: `m${i}` })).statusCode,
      ).toBe(202)
    expect((await a.client.post('/comms/send', { patient_id: b.id, body: 'sms' })).statusCode).toBe(202)
    const all = await a.client.get('/comms/messages?limit=2')
    expect(all.json().meta).toMatchObject({ total: 4, offset: 0, limit: 2, next: expect.any(String) })
    const next = await a.client.get(`/comms/messages?limit=2&after=${all.json().meta.next}`)
    expect(next.json().data).toHaveLength(2)
    expect(new Set([...all.json().data, ...next.json().data].map((m: { id: string }) => m.id)).size).toBe(4)
    expect((await a.client.get(`/comms/messages?patient_id=${a.patient.id}`)).json().meta.total).toBe(3)
    expect((await a.client.get('/comms/messages?channel=sms')).json().meta.total).toBe(1)
    expect((await a.client.get('/comms/messages?codalmacen=ALM2')).json().meta.total).toBe(1)
    expect((await a.client.get('/comms/messages?status=queued')).json().meta.total).toBe(4)
    expect((await a.client.get('/comms/messages?status=sent')).json().meta.total).toBe(0)
    const future = new Date(Date.now() + 60_000).toISOString()
    expect((await a.client.get(`/comms/messages?from=${future}`)).json().meta.total).toBe(0)
    expect((await a.client.get(`/comms/messages?to=${future}`)).json().meta.total).toBe(4)
    const limited = clientFor(h.app, { ...a.principal, allowedCenters: ['ALM2'] })
    expect((await limited.get('/comms/messages')).json().meta.total).toBe(1)
    const other = clientFor(h.app, testPrincipal())
    expect((await other.get('/comms/messages')).json().meta.total).toBe(0)
    const id = all.json().data[0].id
    expect((await other.get(`/comms/messages/${id}`)).statusCode).toBe(404)
    expect((await a.client.get('/comms/messages?status=bogus')).statusCode).toBe(400)
  })

  it('GET /comms/messages/{id}?codalmacen= honours the center (DESIGN.md section 2): another center is 404, an unknown one 400', async () => {
    const a = setup(makeContact({ codalmacen: 'ALM1' }))
    const sent = await a.client.post('/comms/send', { patient_id: a.patient.id, body: 'hola' })
    expect(sent.statusCode).toBe(202)
    const id = sent.json().id as string
    expect(sent.json().codalmacen).toBe('ALM1')
    // A token of every center: the center asked for decides.
    expect((await a.client.get(`/comms/messages/${id}`)).statusCode).toBe(200)
    expect((await a.client.get(`/comms/messages/${id}?codalmacen=ALM1`)).json().id).toBe(id)
    const other = await a.client.get(`/comms/messages/${id}?codalmacen=ALM2`)
    expect([other.statusCode, other.json().code]).toEqual([404, 'not_found'])
    expect(JSON.stringify(other.json())).not.toContain(id)
    const unknown = await a.client.get(`/comms/messages/${id}?codalmacen=NOPE`)
    expect([unknown.statusCode, unknown.json().code]).toEqual([400, 'unknown_center'])
    // A token limited to ALM1 asking for ALM2: forbidden, whatever the message.
    const limited = clientFor(h.app, { ...a.principal, allowedCenters: ['ALM1'] })
    expect((await limited.get(`/comms/messages/${id}`)).statusCode).toBe(200)
    const forbidden = await limited.get(`/comms/messages/${id}?codalmacen=ALM2`)
    expect([forbidden.statusCode, forbidden.json().code]).toEqual([403, 'center_forbidden'])
    // Only codalmacen: any other query parameter is refused, as on every read-one.
    expect((await a.client.get(`/comms/messages/${id}?idempresa=1`)).statusCode).toBe(400)
  })

  it('refuses offset together with after (DESIGN.md), as every list does', async () => {
    const { client, patient } = setup()
    for (const body of ['m1', 'm2'])
      expect((await client.post('/comms/send', { patient_id: patient.id, body })).statusCode).toBe(202)
    const next = (await client.get('/comms/messages?limit=1')).json().meta.next as string
    const both = await client.get(`/comms/messages?limit=1&offset=1&after=${next}`)
    expect(both.statusCode).toBe(400)
    expect(both.json()).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: '/offset', message: 'cannot be combined with after' }],
    })
    // The second page by the cursor alone (offset=0, the default, is no conflict).
    const second = await client.get(`/comms/messages?limit=1&offset=0&after=${next}`)
    expect([second.statusCode, second.json().data.length, second.json().meta.next]).toEqual([200, 1, null])
  })

  it('a forged cursor is 400 validation_failed naming after, never a 500', async () => {
    const { client, patient } = setup()
    expect((await client.post('/comms/send', { patient_id: patient.id, body: 'x' })).statusCode).toBe(202)
    const id = '0190c5a0-0000-7000-8000-0000000e0001'
    const cursor = (values: unknown[]) => Buffer.from(JSON.stringify(values)).toString('base64url')
    for (const values of [
      ['2026-02-30T10:00:00Z', id],
      ['2026-02-30T10:00:00.000Z', id],
      ['1 2 3', id],
      ['2026-01-01', id],
      ['+275760-09-13T00:00:00.000Z', id],
      [new Date().toISOString(), 'not-a-uuid'],
      [new Date().toISOString(), `${id}x`],
      [new Date().toISOString(), 7],
    ]) {
      const res = await client.get(`/comms/messages?after=${cursor(values)}`)
      expect([res.statusCode, res.json().code, res.json().errors]).toEqual([
        400,
        'validation_failed',
        [{ path: '/after', message: expect.any(String) }],
      ])
    }
    // A cursor from meta.next still works.
    const ok = await client.get(`/comms/messages?after=${cursor([new Date().toISOString(), id])}`)
    expect([ok.statusCode, ok.json().meta.total]).toEqual([200, 1])
  })

  it('shows a message a worker is handing to its provider (sending) as queued, and finds it as queued', async () => {
    const { client, patient, principal } = setup()
    const res = await client.post('/comms/send', { patient_id: patient.id, body: 'x' })
    const id = res.json().id as string
    await h.owner('messages').where({ idempresa: principal.companyId, id }).update({ status: 'sending' })
    expect((await client.get(`/comms/messages/${id}`)).json().status).toBe('queued')
    const queued = (await client.get('/comms/messages?status=queued')).json()
    expect([queued.meta.total, queued.data[0].id, queued.data[0].status]).toEqual([1, id, 'queued'])
    expect((await client.get('/comms/messages')).json().data[0].status).toBe('queued')
    // `sending` is no status of the API.
    const asked = await client.get('/comms/messages?status=sending')
    expect([asked.statusCode, asked.json().code]).toEqual([400, 'validation_failed'])
  })
})
