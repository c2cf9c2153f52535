import { gatewayHeaders, injectAs, testSigner } from '@clinic/platform/testing'
import { createPatient, newCompany, outboxOf, startApp, type Harness } from '../helpers'

let h: Harness
beforeAll(async () => {
  h = await startApp()
})
afterAll(() => h.close())

describe('GET /patients/{id}', () => {
  test("404 for another company's id and for an unknown id; 400 for a malformed id", async () => {
    const a = newCompany(h.app)
    const b = newCompany(h.app)
    const p = await createPatient(a)
    const other = await b.get(`/patients/${p.id}`)
    expect(other.statusCode).toBe(404)
    expect(other.json().code).toBe('not_found')
    expect((await a.get('/patients/01900000-0000-7000-8000-000000000000')).statusCode).toBe(404)
    expect((await a.get('/patients/not-a-uuid')).statusCode).toBe(400)
  })

  test('codalmacen: a patient outside the asked center is 404; unknown center 400', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c, { codalmacen: 'ALM1' })
    const none = await createPatient(c)
    expect((await c.get(`/patients/${p.id}?codalmacen=ALM1`)).statusCode).toBe(200)
    expect((await c.get(`/patients/${p.id}?codalmacen=ALM2`)).statusCode).toBe(404)
    expect((await c.get(`/patients/${none.id}?codalmacen=ALM1`)).statusCode).toBe(404)
    expect((await c.get(`/patients/${none.id}`)).statusCode).toBe(200)
    const unknown = await c.get(`/patients/${p.id}?codalmacen=NOPE`)
    expect(unknown.statusCode).toBe(400)
    expect(unknown.json().code).toBe('unknown_center')
  })

  test('center-limited token: its centers only; 403 when asking for another', async () => {
    const company = newCompany(h.app)
    const limited = newCompany(h.app, { companyId: company.principal.companyId, allowedCenters: ['ALM1'] })
    const mine = await createPatient(company, { codalmacen: 'ALM1' })
    const theirs = await createPatient(company, { codalmacen: 'ALM2' })
    const centerless = await createPatient(company)
    expect((await limited.get(`/patients/${mine.id}`)).statusCode).toBe(200)
    expect((await limited.get(`/patients/${theirs.id}`)).statusCode).toBe(404)
    expect((await limited.get(`/patients/${centerless.id}`)).statusCode).toBe(404)
    const forbidden = await limited.get(`/patients/${theirs.id}?codalmacen=ALM2`)
    expect(forbidden.statusCode).toBe(403)
    expect(forbidden.json().code).toBe('center_forbidden')
  })
})

describe('PATCH /patients/{id}', () => {
  test('changes only the fields sent, bumps version and updated_at, answers the new ETag', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c, { email: 'old@example.test', phone: '+34600000003', notes: 'keep' })
    const res = await c.patch(`/patients/${p.id}`, { email: 'new@example.test', phone: null })
    expect(res.statusCode).toBe(200)
    const body = res.json()
    expect(body).toMatchObject({
      email: 'new@example.test',
      phone: null,
      notes: 'keep',
      first_name: p.first_name,
      version: 2,
    })
    expect(res.headers.etag).toBe('"2"')
    expect(Date.parse(body.updated_at)).toBeGreaterThanOrEqual(Date.parse(p.created_at as string))
    expect(body.updated_at).not.toBe(p.updated_at)
    expect(body.created_at).toBe(p.created_at)
    expect((await c.get(`/patients/${p.id}`)).json()).toEqual(body)
  })

  test('every writable field can be changed', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c)
    const patch = {
      codalmacen: 'ALM2',
      first_name: 'Nueva',
      last_name: 'Prueba',
      birth_date: '2001-12-31',
      sex: 'other',
      national_id: 'Y0000000Z',
      email: 'nueva@example.test',
      phone: '+441234567890',
      address: {
        line1: 'Rue Exemple 1',
        line2: 'Piso 2',
        city: 'Ejemplo',
        postal_code: '99999',
        region: 'Norte',
        country: 'FR',
      },
      preferred_channel: 'email',
      language: 'en-GB',
      requires_legal_guardian: true,
      guardian: {
        name: 'Tutora',
        relationship: 'mother',
        email: 'tutora@example.test',
        phone: '+34600000004',
      },
      notes: 'changed',
    }
    const res = await c.patch(`/patients/${p.id}`, patch)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ ...patch, version: 2 })
  })

  test('a PATCH that changes nothing keeps version and updated_at and emits no event', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c, { email: 'same@example.test', address: { city: 'Igual' } })
    const res = await c.patch(`/patients/${p.id}`, {
      email: 'same@example.test',
      address: { city: 'Igual', line1: null },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json().version).toBe(1)
    expect(res.json().updated_at).toBe(p.updated_at)
    expect((await c.patch(`/patients/${p.id}`, {})).json().version).toBe(1)
    expect((await outboxOf(h.owner, c.principal.companyId, p.id)).map((r) => r.type)).toEqual([
      'patient.created',
    ])
  })

  test('patient.updated carries the names of the changed fields, never values of notes', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c, { codalmacen: 'ALM1' })
    await c.patch(`/patients/${p.id}`, {
      notes: 'secret clinical remark',
      email: 'x@example.test',
      first_name: p.first_name,
    })
    await c.patch(`/patients/${p.id}`, { codalmacen: 'ALM2' })
    const rows = await outboxOf(h.owner, c.principal.companyId, p.id)
    expect(rows.map((r) => r.type)).toEqual(['patient.created', 'patient.updated', 'patient.updated'])
    expect(rows[1]!.payload.data.changes).toEqual(['email', 'notes'])
    expect(rows[1]!.payload.data).toMatchObject({ id: p.id, email: 'x@example.test', version: 2 })
    expect(rows[2]!.payload.data.changes).toEqual(['codalmacen'])
    expect(rows[2]!.payload.codalmacen).toBe('ALM2')
    expect(rows[2]!.payload.data.version).toBe(3)
    for (const r of rows) {
      expect(r.payload.data).not.toHaveProperty('notes')
      expect(JSON.stringify(r.payload)).not.toContain('secret clinical remark')
    }
  })

  test('read-only fields are 400, each listed as read-only; unknown fields are 400 too', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c)
    const res = await c.patch(`/patients/${p.id}`, {
      id: p.id,
      version: 9,
      created_at: '2020-01-01T00:00:00Z',
      updated_at: '2020-01-01T00:00:00Z',
      idempresa: 1,
      idEmpresa: 1,
      email: 'fine@example.test',
    })
    expect(res.statusCode).toBe(400)
    expect(res.json().errors).toEqual([
      { path: '/id', message: 'is read-only' },
      { path: '/version', message: 'is read-only' },
      { path: '/created_at', message: 'is read-only' },
      { path: '/updated_at', message: 'is read-only' },
      { path: '/idempresa', message: 'is read-only' },
      { path: '/idEmpresa', message: 'is read-only' },
    ])
    const unknown = await c.patch(`/patients/${p.id}`, { favourite_colour: 'blue' })
    expect(unknown.statusCode).toBe(400)
    expect(unknown.json().errors).toEqual([{ path: '/favourite_colour', message: 'is not an allowed field' }])
    expect((await c.get(`/patients/${p.id}`)).json().version).toBe(1)
  })

  test('validation lists every bad field; required fields cannot be cleared', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c)
    const res = await c.patch(`/patients/${p.id}`, {
      first_name: null,
      birth_date: '2999-12-31',
      language: null,
      requires_legal_guardian: 'maybe',
      email: 'nope',
    })
    expect(res.statusCode).toBe(400)
    expect(
      res
        .json()
        .errors.map((e: { path: string }) => e.path)
        .sort(),
    ).toEqual(['/birth_date', '/email', '/first_name', '/language', '/requires_legal_guardian'].sort())
  })

  test('If-Match: matching "N", W/"N" and * pass; stale is 412 version_mismatch and changes nothing', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c)
    const url = `/patients/${p.id}`
    expect((await c.patch(url, { notes: 'a' }, { 'if-match': '"1"' })).statusCode).toBe(200)
    expect((await c.patch(url, { notes: 'b' }, { 'if-match': 'W/"2"' })).statusCode).toBe(200)
    expect((await c.patch(url, { notes: 'c' }, { 'if-match': '*' })).statusCode).toBe(200)
    expect((await c.patch(url, { notes: 'd' }, { 'if-match': '"7", "4"' })).statusCode).toBe(200)
    const stale = await c.patch(url, { notes: 'e' }, { 'if-match': '"1"' })
    expect(stale.statusCode).toBe(412)
    expect(stale.json().code).toBe('version_mismatch')
    expect((await c.patch(url, { notes: 'e' }, { 'if-match': 'garbage' })).statusCode).toBe(412)
    const now = await c.get(url)
    expect(now.json()).toMatchObject({ notes: 'd', version: 5 })
    expect(now.headers.etag).toBe('"5"')
  })

  test('guardian rule on the merged result: 422 when a PATCH leaves it unmet', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c)
    const url = `/patients/${p.id}`
    const turnOn = await c.patch(url, { requires_legal_guardian: true })
    expect(turnOn.statusCode).toBe(422)
    expect(turnOn.json().code).toBe('guardian_required')
    const ok = await c.patch(url, {
      requires_legal_guardian: true,
      guardian: { name: 'Tutor', phone: '+34600000005' },
    })
    expect(ok.statusCode).toBe(200)
    const clear = await c.patch(url, { guardian: null })
    expect(clear.statusCode).toBe(422)
    const noContact = await c.patch(url, { guardian: { name: 'Tutor' } })
    expect(noContact.statusCode).toBe(422)
    expect((await c.get(url)).json().guardian).toEqual({
      name: 'Tutor',
      relationship: null,
      email: null,
      phone: '+34600000005',
    })
  })

  test('address and guardian are replaced as a whole; null clears them', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c, {
      address: { line1: 'Calle 1', city: 'Uno' },
      guardian: { name: 'Tutor', relationship: 'uncle', email: 't@example.test' },
    })
    const url = `/patients/${p.id}`
    const res = await c.patch(url, { address: { city: 'Dos' }, guardian: { name: 'Otro' } })
    expect(res.json().address).toEqual({
      line1: null,
      line2: null,
      city: 'Dos',
      postal_code: null,
      region: null,
      country: null,
    })
    expect(res.json().guardian).toEqual({ name: 'Otro', relationship: null, email: null, phone: null })
    const cleared = await c.patch(url, { address: null, guardian: null })
    expect(cleared.json()).toMatchObject({ address: null, guardian: null })
  })

  test('409 duplicate_national_id on PATCH; own national id again is fine', async () => {
    const c = newCompany(h.app)
    await createPatient(c, { national_id: 'DUP00001' })
    const p = await createPatient(c, { national_id: 'DUP00002' })
    const dup = await c.patch(`/patients/${p.id}`, { national_id: 'DUP00001' })
    expect(dup.statusCode).toBe(409)
    expect(dup.json().code).toBe('duplicate_national_id')
    expect((await c.patch(`/patients/${p.id}`, { national_id: 'DUP00002' })).statusCode).toBe(200)
    expect((await c.patch(`/patients/${p.id}`, { national_id: null })).statusCode).toBe(200)
  })

  test("404 for another company's id, and nothing changes", async () => {
    const a = newCompany(h.app)
    const b = newCompany(h.app)
    const p = await createPatient(a)
    const res = await b.patch(`/patients/${p.id}`, { notes: 'intrusion' })
    expect(res.statusCode).toBe(404)
    expect((await a.get(`/patients/${p.id}`)).json()).toMatchObject({ notes: null, version: 1 })
  })

  test("centers: limited tokens cannot patch other centers' patients nor move patients out", async () => {
    const company = newCompany(h.app)
    const limited = newCompany(h.app, { companyId: company.principal.companyId, allowedCenters: ['ALM1'] })
    const mine = await createPatient(company, { codalmacen: 'ALM1' })
    const theirs = await createPatient(company, { codalmacen: 'ALM2' })
    expect((await limited.patch(`/patients/${theirs.id}`, { notes: 'x' })).statusCode).toBe(404)
    const move = await limited.patch(`/patients/${mine.id}`, { codalmacen: 'ALM2' })
    expect(move.statusCode).toBe(403)
    expect(move.json().code).toBe('center_forbidden')
    expect((await limited.patch(`/patients/${mine.id}`, { codalmacen: null })).statusCode).toBe(400)
    expect((await limited.patch(`/patients/${mine.id}`, { notes: 'ok' })).statusCode).toBe(200)
    expect((await company.patch(`/patients/${mine.id}`, { codalmacen: 'NOPE' })).json().code).toBe(
      'unknown_center',
    )
    expect((await company.patch(`/patients/${mine.id}?codalmacen=ALM2`, { notes: 'y' })).statusCode).toBe(404)
  })

  test('application/merge-patch+json is accepted', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c)
    const url = `/patients/${p.id}`
    const res = await h.app.inject({
      method: 'PATCH',
      url,
      payload: JSON.stringify({ notes: 'merge' }),
      headers: {
        ...(await gatewayHeaders(
          c.principal,
          'PATCH',
          url,
          undefined,
          undefined,
          JSON.stringify({ notes: 'merge' }),
        )),
        'content-type': 'application/merge-patch+json',
      },
    })
    expect(res.statusCode).toBe(200)
    expect(res.json().notes).toBe('merge')
  })

  test('concurrent PATCHes with the same If-Match: exactly one wins', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c)
    const answers = await Promise.all(
      ['a', 'b', 'c'].map((notes) => c.patch(`/patients/${p.id}`, { notes }, { 'if-match': '"1"' })),
    )
    expect(answers.map((a) => a.statusCode).sort()).toEqual([200, 412, 412])
    expect((await c.get(`/patients/${p.id}`)).json().version).toBe(2)
  })
})

describe('GET /internal/patients/{id}', () => {
  test('answers the contact projection (the patient.created data), without notes', async () => {
    const c = newCompany(h.app, { allowedCenters: ['ALM1'] })
    const p = await createPatient(c, {
      codalmacen: 'ALM1',
      email: 'c@example.test',
      notes: 'private',
      national_id: 'INT00001',
      requires_legal_guardian: true,
      guardian: { name: 'Tutor', email: 'g@example.test' },
    })
    const res = await injectAs(h.app, c.principal, testSigner('comms'))('GET', `/internal/patients/${p.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      id: p.id,
      codalmacen: 'ALM1',
      first_name: p.first_name,
      last_name: p.last_name,
      email: 'c@example.test',
      phone: null,
      preferred_channel: null,
      language: 'es',
      requires_legal_guardian: true,
      guardian: { name: 'Tutor', relationship: null, email: 'g@example.test', phone: null },
      version: 1,
    })
    const [event] = await outboxOf(h.owner, c.principal.companyId, p.id)
    expect(res.json()).toEqual(event!.payload.data)
  })

  test("404 for another company's id; 401 without a caller's assertion for that exact path", async () => {
    const a = newCompany(h.app)
    const b = newCompany(h.app)
    const p = await createPatient(a)
    const res = await injectAs(
      h.app,
      b.principal,
      testSigner('appointments'),
    )('GET', `/internal/patients/${p.id}`)
    expect(res.statusCode).toBe(404)
    expect(res.json().code).toBe('not_found')
    const wrongPath = await h.app.inject({
      method: 'GET',
      url: `/internal/patients/${p.id}`,
      headers: await gatewayHeaders(a.principal, 'GET', `/patients/${p.id}`, testSigner('comms')),
    })
    expect(wrongPath.statusCode).toBe(401)
    // Callers only: the gateway's assertion (the API's) and a service that does not call patients.
    expect((await a.get(`/internal/patients/${p.id}`)).statusCode).toBe(401)
    expect(
      (await injectAs(h.app, a.principal, testSigner('audit'))('GET', `/internal/patients/${p.id}`))
        .statusCode,
    ).toBe(401)
    expect((await h.app.inject({ method: 'GET', url: `/internal/patients/${p.id}` })).statusCode).toBe(401)
  })
})
