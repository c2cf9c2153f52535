import { call, makeTenant, tokenFor, type Tenant } from '../src/client'

const patient = (o: Record<string, unknown> = {}) => ({
  first_name: 'Testa',
  last_name: 'Ejemplo',
  birth_date: '1980-05-17',
  ...o,
})

let a: Tenant
let b: Tenant
beforeAll(async () => {
  ;[a, b] = await Promise.all([makeTenant(['ALM1', 'ALM2']), makeTenant(['ALM1'])])
})

describe('patients through the gateway', () => {
  it('creates, reads and patches a patient with Location, ETag and If-Match', async () => {
    const created = await call('POST', '/3/patients', {
      token: a.token,
      body: patient({
        codalmacen: 'ALM1',
        sex: 'female',
        email: 'testa@example.test',
        phone: '+34600000001',
        address: { line1: 'Calle Falsa 1', city: 'Madrid', postal_code: '28001', country: 'ES' },
        preferred_channel: 'email',
        notes: 'free text that never leaves this service in events',
      }),
    })
    expect(created.status).toBe(201)
    expect(created.headers.get('location')).toBe(`/api/3/patients/${created.body.id}`)
    expect(created.body).toMatchObject({
      codalmacen: 'ALM1',
      language: 'es',
      requires_legal_guardian: false,
      version: 1,
    })
    expect(created.body).not.toHaveProperty('idempresa')

    const read = await call('GET', `/patients/${created.body.id}`, { token: a.token })
    expect(read.status).toBe(200)
    const etag = read.headers.get('etag')!
    expect(etag).toBeTruthy()

    const patched = await call('PATCH', `/patients/${created.body.id}`, {
      token: a.token,
      headers: { 'if-match': etag },
      body: { phone: '+34600000002' },
    })
    expect(patched.status).toBe(200)
    expect(patched.body).toMatchObject({ phone: '+34600000002', email: 'testa@example.test', version: 2 })

    const stale = await call('PATCH', `/patients/${created.body.id}`, {
      token: a.token,
      headers: { 'if-match': etag },
      body: { phone: '+34600000003' },
    })
    expect(stale.status).toBe(412)
    expect(stale.body.code).toBe('version_mismatch')

    const readOnly = await call('PATCH', `/patients/${created.body.id}`, {
      token: a.token,
      body: { id: created.body.id, version: 9, idempresa: b.companyId },
    })
    expect(readOnly.status).toBe(400)
    expect(readOnly.body.code).toBe('validation_failed')
    expect(readOnly.body.errors.map((e: any) => e.path)).toEqual(
      expect.arrayContaining(['/id', '/version', '/idempresa']),
    )
  })

  it('lists every bad field at once', async () => {
    const res = await call('POST', '/patients', {
      token: a.token,
      body: { first_name: '', birth_date: '17/05/1980', sex: 'x', email: 'nope', phone: '600', idEmpresa: 3 },
    })
    expect(res.status).toBe(400)
    expect(res.headers.get('content-type')).toMatch(/problem\+json/)
    const paths = res.body.errors.map((e: any) => e.path)
    expect(paths).toEqual(
      expect.arrayContaining([
        '/first_name',
        '/last_name',
        '/birth_date',
        '/sex',
        '/email',
        '/phone',
        '/idEmpresa',
      ]),
    )
  })

  it('enforces the guardian rule and unique national ids', async () => {
    const noGuardian = await call('POST', '/patients', {
      token: a.token,
      body: patient({ requires_legal_guardian: true }),
    })
    expect(noGuardian.status).toBe(422)
    expect(noGuardian.body.code).toBe('guardian_required')
    const withGuardian = await call('POST', '/patients', {
      token: a.token,
      body: patient({
        requires_legal_guardian: true,
        birth_date: '2016-01-01',
        guardian: { name: 'Tutor Ejemplo', email: 'tutor@example.test' },
      }),
    })
    expect(withGuardian.status).toBe(201)

    const nid = `X${Date.now()}`
    expect(
      (await call('POST', '/patients', { token: a.token, body: patient({ national_id: nid }) })).status,
    ).toBe(201)
    const dup = await call('POST', '/patients', { token: a.token, body: patient({ national_id: nid }) })
    expect(dup.status).toBe(409)
    expect(dup.body.code).toBe('duplicate_national_id')
    // Another company may hold the same national id.
    expect(
      (await call('POST', '/patients', { token: b.token, body: patient({ national_id: nid }) })).status,
    ).toBe(201)
  })

  it('replays a POST with the same Idempotency-Key and refuses the key with another body', async () => {
    const key = `key-${Date.now()}`
    const first = await call('POST', '/patients', {
      token: a.token,
      headers: { 'idempotency-key': key },
      body: patient({ last_name: 'Idem' }),
    })
    const again = await call('POST', '/patients', {
      token: a.token,
      headers: { 'idempotency-key': key },
      body: patient({ last_name: 'Idem' }),
    })
    expect(first.status).toBe(201)
    expect(again.status).toBe(201)
    expect(again.body.id).toBe(first.body.id)
    const other = await call('POST', '/patients', {
      token: a.token,
      headers: { 'idempotency-key': key },
      body: patient({ last_name: 'Otro' }),
    })
    expect(other.status).toBe(409)
    expect(other.body.code).toBe('idempotency_conflict')
  })

  it('keeps companies apart on every endpoint', async () => {
    const theirs = await call('POST', '/patients', { token: b.token, body: patient({ last_name: 'DeB' }) })
    expect(theirs.status).toBe(201)
    const id = theirs.body.id
    expect((await call('GET', `/patients/${id}`, { token: a.token })).status).toBe(404)
    const patch = await call('PATCH', `/patients/${id}`, { token: a.token, body: { first_name: 'Hijacked' } })
    expect(patch.status).toBe(404)
    expect(patch.body.code).toBe('not_found')
    const list = await call('GET', '/patients?limit=100&q=DeB', { token: a.token })
    expect(list.status).toBe(200)
    expect(list.body.data.map((p: any) => p.id)).not.toContain(id)
    // B still sees it unchanged.
    const mine = await call('GET', `/patients/${id}`, { token: b.token })
    expect(mine.body.first_name).toBe('Testa')
  })

  it('scopes by center, and a center-limited token sees only its centers', async () => {
    const t = await makeTenant(['ALM1', 'ALM2'])
    for (const [code, n] of [
      ['ALM1', 3],
      ['ALM2', 2],
    ] as const)
      for (let i = 0; i < n; i++)
        expect(
          (
            await call('POST', `/patients?codalmacen=${code}`, {
              token: t.token,
              body: patient({ last_name: `C${code}${i}` }),
            })
          ).status,
        ).toBe(201)
    const all = await call('GET', '/patients', { token: t.token })
    expect(all.body.meta.total).toBe(5)
    const alm2 = await call('GET', '/patients?codalmacen=ALM2', { token: t.token })
    expect(alm2.body.meta.total).toBe(2)
    expect(alm2.body.data.every((p: any) => p.codalmacen === 'ALM2')).toBe(true)

    const limited = await tokenFor(t, '--centers', 'ALM1')
    const seen = await call('GET', '/patients', { token: limited })
    expect(seen.body.meta.total).toBe(3)
    expect(seen.body.data.every((p: any) => p.codalmacen === 'ALM1')).toBe(true)
    const other = alm2.body.data[0].id
    expect((await call('GET', `/patients/${other}`, { token: limited })).status).toBe(404)
    const forbidden = await call('POST', '/patients', {
      token: limited,
      body: patient({ codalmacen: 'ALM2' }),
    })
    expect(forbidden.status).toBe(403)
    expect(forbidden.body.code).toBe('center_forbidden')
    const mine = seen.body.data[0].id
    const move = await call('PATCH', `/patients/${mine}`, { token: limited, body: { codalmacen: 'ALM2' } })
    expect(move.status).toBe(403)
  })

  it('pages with offset/limit and with the meta.next cursor, with an exact meta.total', async () => {
    const t = await makeTenant(['ALM1'])
    const ids = new Set<string>()
    for (let i = 0; i < 7; i++)
      ids.add(
        (await call('POST', '/patients', { token: t.token, body: patient({ last_name: `Page${i}` }) })).body
          .id,
      )
    const page1 = await call('GET', '/patients?limit=3', { token: t.token })
    expect(page1.body.meta).toMatchObject({ total: 7, offset: 0, limit: 3 })
    const seen: string[] = page1.body.data.map((p: any) => p.id)
    let next = page1.body.meta.next
    while (next) {
      const page = await call('GET', `/patients?limit=3&after=${encodeURIComponent(next)}`, {
        token: t.token,
      })
      expect(page.status).toBe(200)
      seen.push(...page.body.data.map((p: any) => p.id))
      next = page.body.meta.next
    }
    expect(new Set(seen)).toEqual(ids)
    const offset = await call('GET', '/patients?limit=3&offset=6', { token: t.token })
    expect(offset.body.data).toHaveLength(1)
    const found = await call('GET', '/patients?q=page3', { token: t.token })
    expect(found.body.data.map((p: any) => p.last_name)).toEqual(['Page3'])
  })
})
