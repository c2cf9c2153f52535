import { gatewayHeaders, testPrincipal } from '@clinic/platform/testing'
import { clientFor, makePatient, newCompany, outboxOf, startApp, type Harness } from '../helpers'

let h: Harness
beforeAll(async () => {
  h = await startApp()
})
afterAll(() => h.close())

const fullPatient = {
  codalmacen: 'ALM1',
  first_name: 'Testa',
  last_name: 'Ejemplo',
  birth_date: '2015-06-01',
  sex: 'female',
  national_id: '00000000T',
  email: 'testa.ejemplo@example.test',
  phone: '+34600000001',
  address: { line1: 'Calle Falsa 123', city: 'Villaejemplo', postal_code: '00001', country: 'ES' },
  preferred_channel: 'sms',
  language: 'ca',
  requires_legal_guardian: true,
  guardian: { name: 'Tutor Ejemplo', relationship: 'father', phone: '+34600000002' },
  notes: 'free text that must never leave this service',
}

describe('POST /patients', () => {
  test('201 with every field, Location, ETag and version 1; GET reads the same', async () => {
    const c = newCompany(h.app)
    const res = await c.post('/patients', fullPatient)
    expect(res.statusCode).toBe(201)
    const body = res.json()
    expect(body).toMatchObject({
      ...fullPatient,
      address: {
        line1: 'Calle Falsa 123',
        line2: null,
        city: 'Villaejemplo',
        postal_code: '00001',
        region: null,
        country: 'ES',
      },
      guardian: { name: 'Tutor Ejemplo', relationship: 'father', email: null, phone: '+34600000002' },
      version: 1,
    })
    expect(body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(body.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/)
    expect(body.updated_at).toBe(body.created_at)
    expect(body).not.toHaveProperty('idempresa')
    expect(res.headers.location).toBe(`/patients/${body.id}`)
    expect(res.headers.etag).toBe('"1"')

    const read = await c.get(`/patients/${body.id}`)
    expect(read.statusCode).toBe(200)
    expect(read.json()).toEqual(body)
    expect(read.headers.etag).toBe('"1"')
  })

  test('defaults: language es, no guardian required, nullable fields null, no center', async () => {
    const c = newCompany(h.app)
    const res = await c.post('/patients', {
      first_name: 'Testa',
      last_name: 'Minima',
      birth_date: '1990-01-01',
    })
    expect(res.statusCode).toBe(201)
    expect(res.json()).toMatchObject({
      codalmacen: null,
      language: 'es',
      requires_legal_guardian: false,
      guardian: null,
      sex: null,
      national_id: null,
      email: null,
      phone: null,
      address: null,
      preferred_channel: null,
      notes: null,
    })
  })

  test('400 lists every bad field at once, schema and rules together', async () => {
    const c = newCompany(h.app)
    const res = await c.post('/patients', {
      first_name: '   ',
      birth_date: '2999-01-01',
      sex: 'robot',
      email: 'not-an-email',
      phone: '600000001',
      preferred_channel: 'fax',
      language: 'spanish language',
      address: { country: 'Spain', planet: 'Earth' },
      guardian: { relationship: 'aunt', phone: '12' },
      national_id: 'has spaces',
      unknown_field: 1,
    })
    expect(res.statusCode).toBe(400)
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
    const body = res.json()
    expect(body.code).toBe('validation_failed')
    const paths = body.errors.map((e: { path: string }) => e.path).sort()
    expect(paths).toEqual(
      [
        '/first_name',
        '/last_name',
        '/birth_date',
        '/sex',
        '/email',
        '/phone',
        '/preferred_channel',
        '/language',
        '/address/country',
        '/address/planet',
        '/guardian/name',
        '/guardian/phone',
        '/national_id',
        '/unknown_field',
      ].sort(),
    )
    const message = (p: string) => body.errors.find((e: { path: string }) => e.path === p).message
    expect(message('/birth_date')).toBe('must not be in the future')
    expect(message('/last_name')).toBe('is required')
    expect(message('/unknown_field')).toBe('is not an allowed field')
    expect(message('/phone')).toMatch(/E\.164/)
  })

  test.each([
    ['2023-02-30', 'must be a valid date (YYYY-MM-DD)'],
    ['01/02/1980', 'must be a valid date (YYYY-MM-DD)'],
    ['1850-01-01', 'must be on or after 1900-01-01'],
  ])('birth_date %s is refused: %s', async (birth_date, message) => {
    const c = newCompany(h.app)
    const res = await c.post('/patients', makePatient({ birth_date }))
    expect(res.statusCode).toBe(400)
    expect(res.json().errors).toEqual([{ path: '/birth_date', message }])
  })

  test('birth_date today is accepted', async () => {
    const c = newCompany(h.app)
    const today = new Date().toISOString().slice(0, 10)
    expect((await c.post('/patients', makePatient({ birth_date: today }))).statusCode).toBe(201)
  })

  test('string length limits', async () => {
    const c = newCompany(h.app)
    const res = await c.post(
      '/patients',
      makePatient({ first_name: 'x'.repeat(101), notes: 'n'.repeat(4001) }),
    )
    expect(res.statusCode).toBe(400)
    expect(
      res
        .json()
        .errors.map((e: { path: string }) => e.path)
        .sort(),
    ).toEqual(['/first_name', '/notes'])
  })

  test('read-only fields in a create body are named as read-only', async () => {
    const c = newCompany(h.app)
    const res = await c.post(
      '/patients',
      makePatient({ id: '01900000-0000-7000-8000-000000000000', idEmpresa: 99, version: 3 }),
    )
    expect(res.statusCode).toBe(400)
    expect(res.json().errors).toEqual(
      expect.arrayContaining([
        { path: '/id', message: 'is read-only' },
        { path: '/idEmpresa', message: 'is read-only' },
        { path: '/version', message: 'is read-only' },
      ]),
    )
  })

  test.each([
    ['no guardian', {}],
    ['a guardian without contact', { guardian: { name: 'Tutor Ejemplo' } }],
    ['a guardian with only null contacts', { guardian: { name: 'Tutor Ejemplo', email: null, phone: null } }],
  ])('422 guardian_required with requires_legal_guardian and %s', async (_case, extra) => {
    const c = newCompany(h.app)
    const res = await c.post('/patients', makePatient({ requires_legal_guardian: true, ...extra }))
    expect(res.statusCode).toBe(422)
    expect(res.json().code).toBe('guardian_required')
  })

  test('a guardian with name and email satisfies the rule', async () => {
    const c = newCompany(h.app)
    const res = await c.post(
      '/patients',
      makePatient({
        requires_legal_guardian: true,
        guardian: { name: 'Tutor Ejemplo', email: 'tutor@example.test' },
      }),
    )
    expect(res.statusCode).toBe(201)
  })

  test('409 duplicate_national_id within a company; another company may use it', async () => {
    const a = newCompany(h.app)
    const b = newCompany(h.app)
    expect((await a.post('/patients', makePatient({ national_id: 'X1234567L' }))).statusCode).toBe(201)
    const dup = await a.post('/patients', makePatient({ national_id: 'X1234567L' }))
    expect(dup.statusCode).toBe(409)
    expect(dup.json().code).toBe('duplicate_national_id')
    expect((await b.post('/patients', makePatient({ national_id: 'X1234567L' }))).statusCode).toBe(201)
  })

  test('a client-sent company is ignored: the patient belongs to the token company', async () => {
    const a = newCompany(h.app)
    const b = newCompany(h.app)
    const res = await a.post(`/patients?idEmpresa=${b.principal.companyId}`, makePatient())
    expect(res.statusCode).toBe(400) // unknown query parameter
    const created = (await a.post('/patients', makePatient())).json()
    expect((await b.get(`/patients/${created.id}`)).statusCode).toBe(404)
  })
})

describe('centers on create', () => {
  test('body codalmacen wins over the query; the query applies when the body has none', async () => {
    const c = newCompany(h.app)
    expect(
      (await c.post('/patients?codalmacen=ALM1', makePatient({ codalmacen: 'ALM2' }))).json().codalmacen,
    ).toBe('ALM2')
    expect((await c.post('/patients?codalmacen=ALM1', makePatient())).json().codalmacen).toBe('ALM1')
    expect(
      (await c.post('/patients?codalmacen=ALM1', makePatient({ codalmacen: null }))).json().codalmacen,
    ).toBeNull()
  })

  test('400 unknown_center for a code that is not a center of the company (body or query)', async () => {
    const c = newCompany(h.app)
    for (const res of [
      await c.post('/patients', makePatient({ codalmacen: 'NOPE' })),
      await c.post('/patients?codalmacen=NOPE', makePatient()),
    ]) {
      expect(res.statusCode).toBe(400)
      expect(res.json().code).toBe('unknown_center')
    }
  })

  test('center-limited token: 403 center_forbidden elsewhere, 400 without a center, 201 in its center', async () => {
    const c = newCompany(h.app, { allowedCenters: ['ALM1'] })
    const forbidden = await c.post('/patients', makePatient({ codalmacen: 'ALM2' }))
    expect(forbidden.statusCode).toBe(403)
    expect(forbidden.json().code).toBe('center_forbidden')
    const none = await c.post('/patients', makePatient())
    expect(none.statusCode).toBe(400)
    expect(none.json().errors).toEqual([
      { path: '/codalmacen', message: 'is required for a token limited to centers' },
    ])
    expect((await c.post('/patients?codalmacen=ALM1', makePatient())).statusCode).toBe(201)
  })
})

describe('Idempotency-Key', () => {
  test('same key and body replays the first answer; another body is 409; other companies are separate', async () => {
    const c = newCompany(h.app)
    const body = makePatient({ national_id: 'IDEM0001' })
    const first = await c.post('/patients', body, { 'idempotency-key': 'create-1' })
    expect(first.statusCode).toBe(201)
    expect(first.headers['idempotent-replayed']).toBeUndefined()

    const again = await c.post('/patients', { ...body }, { 'idempotency-key': 'create-1' })
    expect(again.statusCode).toBe(201)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.headers.location).toBe(first.headers.location)
    expect(again.headers.etag).toBe('"1"')
    expect(again.json()).toEqual(first.json())

    const conflict = await c.post(
      '/patients',
      { ...body, first_name: 'Otra' },
      { 'idempotency-key': 'create-1' },
    )
    expect(conflict.statusCode).toBe(409)
    expect(conflict.json().code).toBe('idempotency_conflict')

    const list = await c.get('/patients')
    expect(list.json().meta.total).toBe(1)
    const rows = await h.owner('patients').where({ idempresa: c.principal.companyId })
    expect(rows).toHaveLength(1)

    const other = newCompany(h.app)
    const theirs = await other.post('/patients', body, { 'idempotency-key': 'create-1' })
    expect(theirs.statusCode).toBe(201)
    expect(theirs.headers['idempotent-replayed']).toBeUndefined()
  })

  test('a failed first attempt stores no key, so a corrected retry with the same key succeeds', async () => {
    const c = newCompany(h.app)
    await c.post('/patients', makePatient({ national_id: 'IDEM0002' }))
    const body = makePatient({ national_id: 'IDEM0002' })
    expect((await c.post('/patients', body, { 'idempotency-key': 'k2' })).statusCode).toBe(409)
    const retry = await c.post('/patients', { ...body, national_id: 'IDEM0003' }, { 'idempotency-key': 'k2' })
    expect(retry.statusCode).toBe(201)
  })

  test('concurrent requests with one key create one patient', async () => {
    const c = newCompany(h.app)
    const body = makePatient()
    const answers = await Promise.all(
      [1, 2, 3].map(() => c.post('/patients', body, { 'idempotency-key': 'race' })),
    )
    expect(answers.map((a) => a.statusCode)).toEqual([201, 201, 201])
    expect(new Set(answers.map((a) => a.json().id)).size).toBe(1)
    expect(await h.owner('patients').where({ idempresa: c.principal.companyId })).toHaveLength(1)
  })

  test('keys are per token: another token of the company with the same key and body gets its own patient', async () => {
    const first = newCompany(h.app)
    const second = clientFor(
      h.app,
      testPrincipal({
        companyId: first.principal.companyId,
        username: 'second-user',
        userId: '0190c5a0-0000-7000-8000-0000000000b1',
        tokenId: '0190c5a0-0000-7000-8000-0000000000b2',
      }),
    )
    const body = makePatient({ codalmacen: 'ALM1' })
    const mine = await first.post('/patients', body, { 'idempotency-key': 'shared-key' })
    expect(mine.statusCode).toBe(201)
    const theirs = await second.post('/patients', body, { 'idempotency-key': 'shared-key' })
    expect(theirs.statusCode).toBe(201)
    expect(theirs.headers['idempotent-replayed']).toBeUndefined()
    expect(theirs.json().id).not.toBe(mine.json().id)
    // And each token still replays its own answer.
    const again = await second.post('/patients', body, { 'idempotency-key': 'shared-key' })
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.json().id).toBe(theirs.json().id)
  })

  test('a replay is a read: a patient the token can no longer see is 404', async () => {
    const admin = newCompany(h.app)
    const limited = clientFor(
      h.app,
      testPrincipal({
        companyId: admin.principal.companyId,
        username: 'alm1-only',
        tokenId: '0190c5a0-0000-7000-8000-0000000000c2',
        allowedCenters: ['ALM1'],
      }),
    )
    const body = makePatient({ codalmacen: 'ALM1', national_id: 'IDEMVIS01' })
    const created = await limited.post('/patients', body, { 'idempotency-key': 'moved' })
    expect(created.statusCode).toBe(201)
    const moved = await admin.patch(`/patients/${created.json().id}`, { codalmacen: 'ALM2' })
    expect(moved.statusCode).toBe(200)
    const replay = await limited.post('/patients', body, { 'idempotency-key': 'moved' })
    expect(replay.statusCode).toBe(404)
    expect(replay.json().code).toBe('not_found')
    expect(replay.body).not.toContain('IDEMVIS01')
  })

  test('a key that is not 1-255 printable characters is 400', async () => {
    const c = newCompany(h.app)
    const res = await c.post('/patients', makePatient(), { 'idempotency-key': 'x'.repeat(256) })
    expect(res.statusCode).toBe(400)
  })
})

describe('events', () => {
  test('patient.created goes to the outbox with contact data, actor and request id; never notes', async () => {
    const c = newCompany(h.app)
    const created = (await c.post('/patients', fullPatient)).json()
    const rows = await outboxOf(h.owner, c.principal.companyId, created.id)
    expect(rows.map((r) => r.type)).toEqual(['patient.created'])
    const event = rows[0]!.payload
    expect(event).toMatchObject({
      type: 'patient.created',
      source: 'clinic/patients',
      subject: created.id,
      idempresa: c.principal.companyId,
      codalmacen: 'ALM1',
      actorid: c.principal.userId,
    })
    expect(event.requestid).toMatch(/^test-/)
    expect(event.data).toEqual({
      id: created.id,
      codalmacen: 'ALM1',
      first_name: 'Testa',
      last_name: 'Ejemplo',
      email: 'testa.ejemplo@example.test',
      phone: '+34600000001',
      preferred_channel: 'sms',
      language: 'ca',
      requires_legal_guardian: true,
      guardian: { name: 'Tutor Ejemplo', relationship: 'father', email: null, phone: '+34600000002' },
      version: 1,
    })
    expect(JSON.stringify(event)).not.toContain('never leave')
  })

  test('without an Idempotency-Key the row and its event are one statement, of the caller company', async () => {
    const c = newCompany(h.app)
    const sent: string[] = []
    const onQuery = (q: { sql: string }) => void sent.push(q.sql)
    h.knex.on('query', onQuery)
    const res = await c.post('/patients', makePatient({ codalmacen: 'ALM1' }))
    h.knex.off('query', onQuery)
    expect(res.statusCode).toBe(201)
    expect(sent).toHaveLength(1)
    const id = res.json().id
    expect(await h.owner('patients').where({ id }).select('idempresa')).toEqual([
      { idempresa: c.principal.companyId },
    ])
    expect((await outboxOf(h.owner, c.principal.companyId, id)).map((r) => r.type)).toEqual([
      'patient.created',
    ])
    const [count] = await h
      .owner('patient_counts')
      .where({ idempresa: c.principal.companyId, codalmacen: 'ALM1' })
      .sum({ n: 'n' })
    expect(Number(count?.n)).toBe(1)
  })

  test('creates of different shapes in turn each store their own fields (one statement text per shape)', async () => {
    const c = newCompany(h.app)
    const bodies = [
      makePatient({ codalmacen: 'ALM1', email: 'una@example.test', national_id: 'SHAPE0001' }),
      makePatient(),
      makePatient({ codalmacen: 'ALM2', email: 'otra@example.test', national_id: 'SHAPE0002' }),
      makePatient({ notes: 'nota ficticia', address: { city: 'Ejemplo' } }),
    ]
    for (const body of bodies) {
      const res = await c.post('/patients', body)
      expect(res.statusCode).toBe(201)
      expect(res.json()).toMatchObject(body)
      expect((await c.get(`/patients/${res.json().id}`)).json()).toEqual(res.json())
    }
  })

  test('a create refused by the database (a duplicate national id) writes no event and counts nothing', async () => {
    const c = newCompany(h.app)
    const first = await c.post('/patients', makePatient({ national_id: 'DUP00001', codalmacen: 'ALM1' }))
    expect(first.statusCode).toBe(201)
    const dup = await c.post('/patients', makePatient({ national_id: 'DUP00001', codalmacen: 'ALM1' }))
    expect(dup.statusCode).toBe(409)
    const outbox = await h.owner('outbox').where({ idempresa: c.principal.companyId })
    expect(outbox.map((r) => r.payload.subject)).toEqual([first.json().id])
    const [count] = await h
      .owner('patient_counts')
      .where({ idempresa: c.principal.companyId, codalmacen: 'ALM1' })
      .sum({ n: 'n' })
    expect(Number(count?.n)).toBe(1)
  })

  test('a refused create writes no event', async () => {
    const c = newCompany(h.app)
    await c.post('/patients', makePatient({ requires_legal_guardian: true }))
    expect(await h.owner('outbox').where({ idempresa: c.principal.companyId })).toHaveLength(0)
  })
})

describe('transport', () => {
  test('401 without a gateway assertion, with a problem body', async () => {
    const res = await h.app.inject({ method: 'GET', url: '/patients' })
    expect(res.statusCode).toBe(401)
    expect(res.json().code).toBe('unauthenticated')
  })

  test('401 when the assertion was signed for another path or method', async () => {
    const p = testPrincipal()
    const other = await h.app.inject({
      method: 'GET',
      url: '/patients',
      headers: await gatewayHeaders(p, 'GET', '/patients/x'),
    })
    expect(other.statusCode).toBe(401)
    const post = await h.app.inject({
      method: 'POST',
      url: '/patients',
      payload: makePatient(),
      headers: await gatewayHeaders(p, 'GET', '/patients'),
    })
    expect(post.statusCode).toBe(401)
  })

  test('415 for a body that is not JSON; 400 for broken JSON', async () => {
    const c = newCompany(h.app)
    const text = await h.app.inject({
      method: 'POST',
      url: '/patients',
      payload: 'first_name=Testa',
      headers: {
        ...(await gatewayHeaders(c.principal, 'POST', '/patients')),
        'content-type': 'application/x-www-form-urlencoded',
      },
    })
    expect(text.statusCode).toBe(415)
    const broken = await h.app.inject({
      method: 'POST',
      url: '/patients',
      payload: '{"first_name":',
      headers: {
        ...(await gatewayHeaders(c.principal, 'POST', '/patients')),
        'content-type': 'application/json',
      },
    })
    expect(broken.statusCode).toBe(400)
  })

  test('the same principal object reused for another company sees nothing of the first', async () => {
    const a = newCompany(h.app)
    const created = (await a.post('/patients', makePatient())).json()
    const b = clientFor(h.app, { ...a.principal, companyId: a.principal.companyId + 1 })
    expect((await b.get(`/patients/${created.id}`)).statusCode).toBe(404)
  })
})
