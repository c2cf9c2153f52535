import { companyOf, outboxOf, slot, startApp, type Harness } from '../helpers'

let h: Harness
beforeAll(async () => {
  // The lookup timeout is the service default: a loaded machine must not turn slow answers into
  // 503s (the hang test waits for it once).
  h = await startApp({ poolMax: 10 })
})
afterAll(() => h.close())
afterEach(() => {
  h.patients.mode = 'ok'
})

const countOf = async (companyId: number) =>
  Number((await h.owner('appointments').where({ idempresa: companyId }).count({ n: '*' }))[0]!.n)

describe('POST /appointments', () => {
  test('201 with Location, ETag, version 1, scheduled, UTC instants and the default time zone', async () => {
    const c = companyOf(h)
    const patient_id = c.newPatient()
    const res = await c.send('POST', '/appointments', {
      patient_id,
      codalmacen: 'ALM1',
      practitioner: 'dra-ficticia',
      starts_at: '2030-03-02T09:30:00+01:00',
      ends_at: '2030-03-02T05:00:00-04:00',
      reason: 'revision',
    })
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      patient_id,
      codalmacen: 'ALM1',
      practitioner: 'dra-ficticia',
      starts_at: '2030-03-02T08:30:00.000Z',
      ends_at: '2030-03-02T09:00:00.000Z',
      time_zone: 'Europe/Madrid',
      reason: 'revision',
      notes: null,
      status: 'scheduled',
      cancellation_reason: null,
      checked_in_at: null,
      series_id: null,
      occurrence: null,
      recurrence_id: null,
      waitlist_entry_id: null,
      created_at: expect.stringMatching(/Z$/),
      updated_at: body.created_at,
      version: 1,
    })
    expect(res.headers.location).toBe(`/appointments/${body.id}`)
    expect(res.headers.etag).toBe('"1"')
    const read = await c.send('GET', `/appointments/${body.id}`)
    expect(read.json()).toEqual(body)
    // The lookup went to the patients service for this company, with the request id.
    expect(h.patients.seen).toContainEqual({
      companyId: c.principal.companyId,
      path: `/internal/patients/${patient_id}`,
      requestId: expect.any(String),
    })
  })

  test('the center comes from ?codalmacen= when the body has none; a time zone is kept', async () => {
    const c = companyOf(h)
    const { codalmacen: _c, ...body } = slot({ patient_id: c.newPatient(), time_zone: 'atlantic/canary' })
    const res = await c.send('POST', '/appointments?codalmacen=ALM2', body)
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({ codalmacen: 'ALM2', time_zone: 'Atlantic/Canary' })
  })

  test('400 lists every bad field at once, never a 5xx', async () => {
    const c = companyOf(h)
    const res = await c.send('POST', '/appointments', {
      patient_id: 'not-a-uuid',
      practitioner: 'dra\u0007bell',
      starts_at: '1850-01-01T00:00:00Z',
      ends_at: '20300101',
      time_zone: 'Mars/Olympus_Mons',
      reason: ['an', 'array'],
      notes: 'bell \u0007 in a note',
      status: 'confirmed',
      id: '01900000-0000-7000-8000-000000000000',
      planet: 'earth',
    })
    expect(res.statusCode).toBe(400)
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
    const body = res.json()
    expect(body.code).toBe('validation_failed')
    const message = Object.fromEntries(
      body.errors.map((e: { path: string; message: string }) => [e.path, e.message]),
    )
    expect(Object.keys(message).sort()).toEqual(
      [
        '/patient_id',
        '/practitioner',
        '/starts_at',
        '/ends_at',
        '/time_zone',
        '/reason',
        '/notes',
        '/status',
        '/id',
        '/planet',
        '/codalmacen',
      ]
        .filter((p) => p !== '/codalmacen')
        .sort(),
    )
    expect(message['/starts_at']).toBe('must be between 1900 and 2200')
    expect(message['/status']).toBe('cannot be set on create: new appointments are scheduled')
    expect(message['/id']).toBe('is read-only')
    expect(message['/planet']).toBe('is not an allowed field')
    expect(message['/practitioner']).toMatch(/control characters/)
    expect(await countOf(c.principal.companyId)).toBe(0)
  })

  test('NUL and lone surrogates are refused before anything else, naming each field', async () => {
    const c = companyOf(h)
    const res = await c.send('POST', '/appointments', {
      ...slot({ patient_id: c.newPatient() }),
      practitioner: 'dra\u0000nul',
      notes: 'a lone \ud800 surrogate',
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().code).toBe('validation_failed')
    expect(
      res
        .json()
        .errors.map((e: { path: string }) => e.path)
        .sort(),
    ).toEqual(['/notes', '/practitioner'])
    expect(await countOf(c.principal.companyId)).toBe(0)
  })

  test.each([
    [
      'ends before it starts',
      { ends_at: '2030-01-01T08:00:00Z', starts_at: '2030-01-01T09:00:00Z' },
      '/ends_at',
    ],
    ['longer than 12 h', { starts_at: '2030-01-01T08:00:00Z', ends_at: '2030-01-01T20:00:01Z' }, '/ends_at'],
    ['far future', { starts_at: '9999-12-31T23:00:00Z', ends_at: '9999-12-31T23:30:00Z' }, '/starts_at'],
    ['leap second', { starts_at: '2030-06-30T23:59:60Z' }, '/starts_at'],
    ['an offset for a zone', { time_zone: '+01:00' }, '/time_zone'],
    ['a number for a string', { practitioner: 1e308 }, '/practitioner'],
    ['an array for the center', { codalmacen: ['ALM1', 'ALM2'] }, '/codalmacen'],
    ['a huge string', { notes: 'x'.repeat(4001) }, '/notes'],
    ['a blank practitioner', { practitioner: '   ' }, '/practitioner'],
    ['a line break in the practitioner', { practitioner: 'dra\nficticia' }, '/practitioner'],
    ['a C1 control (NEL) in the practitioner', { practitioner: 'dra\u0085ficticia' }, '/practitioner'],
    ['a line separator in the practitioner', { practitioner: 'dra\u2028ficticia' }, '/practitioner'],
    ['a paragraph separator in the practitioner', { practitioner: 'dra\u2029ficticia' }, '/practitioner'],
    ['a C1 control in the reason', { reason: 'revision \u0080' }, '/reason'],
    ['a C1 control (CSI) in the notes', { notes: 'nota \u009b[31m' }, '/notes'],
    ['an empty patient id', { patient_id: '' }, '/patient_id'],
  ])('%s is 400 naming the field', async (_case, o, path) => {
    const c = companyOf(h)
    const res = await c.send('POST', '/appointments', slot({ patient_id: c.newPatient(), ...o }))
    expect(res.statusCode).toBe(400)
    expect(res.json().errors.map((e: { path: string }) => e.path)).toContain(path)
  })

  test('a body that is not JSON, or not an object, is 4xx', async () => {
    const c = companyOf(h)
    const headers = { 'content-type': 'application/json' }
    expect((await c.send('POST', '/appointments', '{"patient_id":', headers)).statusCode).toBe(400)
    expect((await c.send('POST', '/appointments', '[1,2]', headers)).statusCode).toBe(400)
    expect((await c.send('POST', '/appointments', 'null', headers)).statusCode).toBe(400)
  })

  test('codalmacen is required, must be a center of the company and one the token may use', async () => {
    const c = companyOf(h)
    const { codalmacen: _c, ...none } = slot({ patient_id: c.newPatient() })
    const missing = await c.send('POST', '/appointments', none)
    expect(missing.statusCode).toBe(400)
    expect(missing.json().errors).toEqual([
      { path: '/codalmacen', message: 'is required (in the body or ?codalmacen=)' },
    ])
    const unknown = await c.send(
      'POST',
      '/appointments',
      slot({ patient_id: c.newPatient(), codalmacen: 'NOPE' }),
    )
    expect(unknown.statusCode).toBe(400)
    expect(unknown.json().code).toBe('unknown_center')
    const limited = companyOf(h, { companyId: c.principal.companyId, allowedCenters: ['ALM1'] })
    const forbidden = await limited.send(
      'POST',
      '/appointments',
      slot({ patient_id: c.newPatient(), codalmacen: 'ALM2' }),
    )
    expect(forbidden.statusCode).toBe(403)
    expect(forbidden.json().code).toBe('center_forbidden')
    const viaQuery = await limited.send('POST', '/appointments?codalmacen=ALM2', none)
    expect(viaQuery.statusCode).toBe(403)
    expect(
      (await limited.send('POST', '/appointments', slot({ patient_id: c.newPatient() }))).statusCode,
    ).toBe(201)
    expect(await countOf(c.principal.companyId)).toBe(1)
  })

  test("422 unknown_patient for an unknown id and for another company's patient, alike", async () => {
    const a = companyOf(h)
    const b = companyOf(h)
    const theirs = b.newPatient()
    const other = await a.send('POST', '/appointments', slot({ patient_id: theirs }))
    const none = await a.send(
      'POST',
      '/appointments',
      slot({ patient_id: '01900000-0000-7000-8000-000000000000' }),
    )
    for (const res of [other, none]) {
      expect(res.statusCode).toBe(422)
      expect(res.json()).toMatchObject({
        code: 'unknown_patient',
        detail: 'patient_id is not a patient of this company',
      })
    }
    expect(await countOf(a.principal.companyId)).toBe(0)
  })

  test.each([
    ['answers 500', 'error'],
    ['does not answer in time', 'hang'],
  ] as const)(
    '503 upstream_unavailable with Retry-After when the patients service %s; nothing written',
    async (_c, mode) => {
      const c = companyOf(h)
      const patient_id = c.newPatient()
      h.patients.mode = mode
      const res = await c.send('POST', '/appointments', slot({ patient_id }), {
        'idempotency-key': `down-${mode}`,
      })
      expect(res.statusCode).toBe(503)
      expect(res.json().code).toBe('upstream_unavailable')
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0)
      expect(await countOf(c.principal.companyId)).toBe(0)
      expect(await h.owner('outbox').where({ idempresa: c.principal.companyId })).toHaveLength(0)
      // The key was not spent: the same request succeeds once the patients service is back.
      h.patients.mode = 'ok'
      const again = await c.send('POST', '/appointments', slot({ patient_id }), {
        'idempotency-key': `down-${mode}`,
      })
      expect(again.statusCode).toBe(201)
    },
  )

  test('Idempotency-Key: the same body replays the first answer; another body is 409', async () => {
    const c = companyOf(h)
    const body = slot({ patient_id: c.newPatient() })
    const first = await c.send('POST', '/appointments', body, { 'idempotency-key': 'k-1' })
    const again = await c.send('POST', '/appointments', body, { 'idempotency-key': 'k-1' })
    expect(first.statusCode).toBe(201)
    expect(again.statusCode).toBe(201)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.headers.location).toBe(first.headers.location)
    expect(again.json()).toEqual(first.json())
    const other = await c.send(
      'POST',
      '/appointments',
      { ...body, reason: 'otra' },
      { 'idempotency-key': 'k-1' },
    )
    expect(other.statusCode).toBe(409)
    expect(other.json().code).toBe('idempotency_conflict')
    expect(await countOf(c.principal.companyId)).toBe(1)
  })

  test('a replay does not depend on the patients service: 201 replayed during an outage', async () => {
    const c = companyOf(h)
    const body = slot({ patient_id: c.newPatient() })
    const first = await c.send('POST', '/appointments', body, { 'idempotency-key': 'k-outage' })
    expect(first.statusCode).toBe(201)
    h.patients.mode = 'error'
    const again = await c.send('POST', '/appointments', body, { 'idempotency-key': 'k-outage' })
    expect(again.statusCode).toBe(201)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.headers.location).toBe(first.headers.location)
    expect(again.json()).toEqual(first.json())
    // The same key with another body is still a conflict, also without the patients service.
    const other = await c.send(
      'POST',
      '/appointments',
      { ...body, reason: 'otra' },
      { 'idempotency-key': 'k-outage' },
    )
    expect(other.statusCode).toBe(409)
    expect(other.json().code).toBe('idempotency_conflict')
    // A new key still needs the patient: 503, nothing written.
    const fresh = await c.send('POST', '/appointments', slot({ patient_id: c.newPatient() }), {
      'idempotency-key': 'k-outage-2',
    })
    expect(fresh.statusCode).toBe(503)
    expect(await countOf(c.principal.companyId)).toBe(1)
  })

  test('a replay is a read: an appointment the token can no longer see is 404', async () => {
    const admin = companyOf(h)
    const limited = companyOf(h, {
      companyId: admin.principal.companyId,
      tokenId: '0190c5a0-0000-7000-8000-0000000000c2',
      allowedCenters: ['ALM1'],
    })
    const body = slot({ patient_id: admin.newPatient(), codalmacen: 'ALM1', notes: 'IDEMVIS01' })
    const booked = await limited.send('POST', '/appointments', body, { 'idempotency-key': 'moved' })
    expect(booked.statusCode).toBe(201)
    const moved = await admin.send('PATCH', `/appointments/${booked.json().id}`, { codalmacen: 'ALM2' })
    expect(moved.statusCode).toBe(200)
    for (const mode of ['ok', 'error'] as const) {
      h.patients.mode = mode
      const replay = await limited.send('POST', '/appointments', body, { 'idempotency-key': 'moved' })
      expect(replay.statusCode).toBe(404)
      expect(replay.json().code).toBe('not_found')
      expect(replay.body).not.toContain('IDEMVIS01')
    }
  })

  test('writes appointment.created to the outbox with the actor and request id, never reason or notes', async () => {
    const c = companyOf(h)
    const a = await c.book({ notes: 'texto libre que no sale del servicio' })
    const [row, ...more] = await outboxOf(h.owner, c.principal.companyId, a.id)
    expect(more).toEqual([])
    expect(row!.type).toBe('appointment.created')
    expect(row!.payload).toMatchObject({
      source: 'clinic/appointments',
      subject: a.id,
      idempresa: c.principal.companyId,
      codalmacen: 'ALM1',
      actorid: c.principal.userId,
      actorname: c.principal.username,
      requestid: expect.any(String),
      data: { id: a.id, patient_id: a.patient_id, status: 'scheduled', starts_at: a.starts_at, version: 1 },
    })
    expect(JSON.stringify(row!.payload)).not.toMatch(/texto libre|revision de prueba/)
  })
})

describe('no double booking, through the API', () => {
  test('ten concurrent bookings of one slot: exactly one 201, nine 409 slot_conflict', async () => {
    const c = companyOf(h)
    const at = slot()
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        c.send('POST', '/appointments', { ...at, patient_id: c.newPatient() }),
      ),
    )
    const codes = answers.map((r) => r.statusCode).sort()
    expect(codes).toEqual([201, ...Array(9).fill(409)])
    for (const r of answers.filter((r) => r.statusCode === 409))
      expect(r.json()).toMatchObject({ code: 'slot_conflict', detail: expect.stringMatching(/practitioner/) })
    expect(await countOf(c.principal.companyId)).toBe(1)
  })

  test('a patient cannot be in two places at once: 409 naming the patient', async () => {
    const c = companyOf(h)
    const patient_id = c.newPatient()
    const at = slot({ patient_id })
    expect((await c.send('POST', '/appointments', at)).statusCode).toBe(201)
    const res = await c.send('POST', '/appointments', { ...at, practitioner: 'dr-otro', codalmacen: 'ALM2' })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toMatchObject({
      code: 'slot_conflict',
      detail: 'The patient already has an overlapping appointment',
    })
  })

  test.each([
    ['cancelled', { status: 'cancelled', cancellation_reason: 'aviso del paciente' }],
    ['no_show', { status: 'no_show' }],
  ])('a %s slot can be booked again', async (_s, patch) => {
    const c = companyOf(h)
    const at = slot()
    const first = await c.book(at)
    expect((await c.send('POST', '/appointments', { ...at, patient_id: c.newPatient() })).statusCode).toBe(
      409,
    )
    expect((await c.send('PATCH', `/appointments/${first.id}`, patch)).statusCode).toBe(200)
    expect((await c.send('POST', '/appointments', { ...at, patient_id: c.newPatient() })).statusCode).toBe(
      201,
    )
  })

  test('another company may book the same practitioner name at the same time', async () => {
    const at = slot()
    await companyOf(h).book(at)
    await companyOf(h).book(at)
  })
})
