import { createPatient, newCompany, startApp, type Client, type Harness } from '../helpers'

let h: Harness
beforeAll(async () => {
  h = await startApp()
})
afterAll(() => h.close())

type Page = {
  data: Array<{
    id: string
    last_name: string
    first_name: string
    created_at: string
    codalmacen: string | null
  }>
  meta: { total: number; offset: number; limit: number; next: string | null }
}
const page = async (c: Client, url: string): Promise<Page> => {
  const res = await c.get(url)
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
  return res.json()
}

/** Follows meta.next to the end; returns the ids in order. */
async function walk(c: Client, base: string): Promise<string[]> {
  const ids: string[] = []
  let url = base
  for (let i = 0; i < 100; i++) {
    const p = await page(c, url)
    ids.push(...p.data.map((r) => r.id))
    if (!p.meta.next) return ids
    url = `${base}${base.includes('?') ? '&' : '?'}after=${p.meta.next}`
  }
  throw new Error('cursor never ended')
}

const exactCount = async (companyId: number, center?: string | null) => {
  const q = h.owner('patients').where({ idempresa: companyId })
  if (center === null) q.whereNull('codalmacen')
  else if (center) q.where({ codalmacen: center })
  const [row] = await q.count({ n: '*' })
  return Number(row!.n)
}

describe('GET /patients', () => {
  test('envelope, defaults, sort by last name then first name (accents and case as a person expects)', async () => {
    const c = newCompany(h.app)
    for (const [first_name, last_name] of [
      ['Beta', 'zapata'],
      ['Alfa', 'Álvarez'],
      ['Zeta', 'Alonso'],
      ['Alfa', 'Alonso'],
      ['Eme', 'Muñoz'],
      ['Eme', 'Murillo'],
    ])
      await createPatient(c, { first_name, last_name })
    const p = await page(c, '/patients')
    expect(p.meta).toEqual({ total: 6, offset: 0, limit: 25, next: null })
    expect(p.data.map((r) => `${r.last_name}, ${r.first_name}`)).toEqual([
      'Alonso, Alfa',
      'Alonso, Zeta',
      'Álvarez, Alfa',
      'Muñoz, Eme',
      'Murillo, Eme',
      'zapata, Beta',
    ])
    expect(p.data[0]).not.toHaveProperty('idempresa')
  })

  test('-created_at: newest first', async () => {
    const c = newCompany(h.app)
    const ids = []
    for (let i = 0; i < 4; i++) ids.push((await createPatient(c)).id)
    const p = await page(c, '/patients?sort=-created_at')
    expect(p.data.map((r) => r.id)).toEqual(ids.reverse())
  })

  test('offset/limit pages; meta.next is null on the last page', async () => {
    const c = newCompany(h.app)
    for (let i = 0; i < 5; i++) await createPatient(c, { last_name: `Pagina${i}` })
    const first = await page(c, '/patients?limit=2')
    expect(first.meta).toMatchObject({ total: 5, offset: 0, limit: 2 })
    expect(first.meta.next).toEqual(expect.any(String))
    expect(first.data.map((r) => r.last_name)).toEqual(['Pagina0', 'Pagina1'])
    const third = await page(c, '/patients?limit=2&offset=4')
    expect(third.data.map((r) => r.last_name)).toEqual(['Pagina4'])
    expect(third.meta).toEqual({ total: 5, offset: 4, limit: 2, next: null })
    const exact = await page(c, '/patients?limit=5')
    expect(exact.meta.next).toBeNull()
    const beyond = await page(c, '/patients?offset=10')
    expect(beyond.data).toEqual([])
    expect(beyond.meta.total).toBe(5)
  })

  test.each(['last_name', '-created_at'])(
    'cursor paging (sort %s) visits every row once, in order, ties broken by id',
    async (sort) => {
      const c = newCompany(h.app)
      // Same names everywhere: the id tie-breaker alone orders them.
      for (let i = 0; i < 7; i++)
        await createPatient(c, { first_name: 'Igual', last_name: i < 4 ? 'Mismo' : 'Otro' })
      const all = (await page(c, `/patients?sort=${sort}&limit=100`)).data.map((r) => r.id)
      expect(all).toHaveLength(7)
      expect(await walk(c, `/patients?sort=${sort}&limit=3`)).toEqual(all)
      expect(await walk(c, `/patients?sort=${sort}&limit=1`)).toEqual(all)
    },
  )

  test('a cursor continues after an offset page, and keeps its place when rows are added before it', async () => {
    const c = newCompany(h.app)
    for (const n of ['Bb', 'Cc', 'Dd', 'Ee']) await createPatient(c, { last_name: n })
    const first = await page(c, '/patients?limit=2&offset=1')
    expect(first.data.map((r) => r.last_name)).toEqual(['Cc', 'Dd'])
    await createPatient(c, { last_name: 'Aa' })
    const next = await page(c, `/patients?limit=2&after=${first.meta.next}`)
    expect(next.data.map((r) => r.last_name)).toEqual(['Ee'])
    expect(next.meta.next).toBeNull()
    expect(next.meta.total).toBe(5)
  })

  test.each([
    ['limit=101', '/limit'],
    ['limit=0', '/limit'],
    ['offset=10001', '/offset'],
    ['offset=-1', '/offset'],
    ['sort=first_name', '/sort'],
    ['after=garbage', '/after'],
    ['colour=blue', '/colour'],
    ['q=', '/q'],
  ])('400 validation_failed for %s', async (query, path) => {
    const c = newCompany(h.app)
    const res = await c.get(`/patients?${query}`)
    expect(res.statusCode).toBe(400)
    expect(res.json().code).toBe('validation_failed')
    expect(res.json().errors.map((e: { path: string }) => e.path)).toContain(path)
  })

  test('offset 10000 and limit 100 are the edges that still work', async () => {
    const c = newCompany(h.app)
    expect((await c.get('/patients?offset=10000&limit=100')).statusCode).toBe(200)
  })

  test('a cursor of one sort is refused by the other; after and offset together are refused', async () => {
    const c = newCompany(h.app)
    for (let i = 0; i < 3; i++) await createPatient(c)
    const byName = await page(c, '/patients?limit=1')
    const byDate = await page(c, '/patients?limit=1&sort=-created_at')
    expect((await c.get(`/patients?sort=-created_at&after=${byName.meta.next}`)).statusCode).toBe(400)
    expect((await c.get(`/patients?after=${byDate.meta.next}`)).statusCode).toBe(400)
    expect((await c.get(`/patients?offset=1&after=${byName.meta.next}`)).statusCode).toBe(400)
  })

  test('q: part of a name in any case or order, or an exact national id; total counts the matches', async () => {
    const c = newCompany(h.app)
    const ana = await createPatient(c, {
      first_name: 'Ana María',
      last_name: 'García López',
      national_id: '11111111H',
    })
    const juan = await createPatient(c, {
      first_name: 'Juan',
      last_name: 'Garcíaz',
      national_id: '22222222J',
    })
    await createPatient(c, { first_name: 'Pedro', last_name: 'Ruiz' })
    const ids = async (q: string) =>
      (await page(c, `/patients?q=${encodeURIComponent(q)}`)).data.map((r) => r.id).sort()
    expect(await ids('garcía')).toEqual([ana.id, juan.id].sort())
    expect(await ids('ARÍA')).toEqual([ana.id])
    expect(await ids('maría garcía')).toEqual([ana.id])
    expect(await ids('garcía lópez ana')).toEqual([ana.id])
    expect(await ids('  juan   garcíaz ')).toEqual([juan.id])
    expect(await ids('11111111H')).toEqual([ana.id])
    expect(await ids('1111111')).toEqual([]) // national ids match exactly, not by part
    expect(await ids('%')).toEqual([]) // LIKE wildcards are literal
    expect(await ids('_')).toEqual([])
    expect((await page(c, '/patients?q=garc')).meta.total).toBe(2)
    expect((await page(c, '/patients?q=garc&limit=1')).meta).toMatchObject({
      total: 2,
      next: expect.any(String),
    })
  })

  test('q does not reach other companies', async () => {
    const a = newCompany(h.app)
    const b = newCompany(h.app)
    await createPatient(a, { last_name: 'Unicoapellido', national_id: 'ZZ000001' })
    expect((await page(b, '/patients?q=Unicoapellido')).meta.total).toBe(0)
    expect((await page(b, '/patients?q=ZZ000001')).meta.total).toBe(0)
  })
})

describe('centers and meta.total', () => {
  test('codalmacen filters; a limited token sees only its centers (not center-less patients)', async () => {
    const company = newCompany(h.app)
    const id = company.principal.companyId
    const limited = newCompany(h.app, { companyId: id, allowedCenters: ['ALM1'] })
    const a1 = await createPatient(company, { codalmacen: 'ALM1' })
    const a2 = await createPatient(company, { codalmacen: 'ALM1' })
    const b1 = await createPatient(company, { codalmacen: 'ALM2' })
    const none = await createPatient(company)

    const ids = (p: Page) => p.data.map((r) => r.id).sort()
    const all = await page(company, '/patients')
    expect(all.meta.total).toBe(4)
    expect(ids(all)).toEqual([a1.id, a2.id, b1.id, none.id].sort())
    const alm1 = await page(company, '/patients?codalmacen=ALM1')
    expect(alm1.meta.total).toBe(2)
    expect(ids(alm1)).toEqual([a1.id, a2.id].sort())
    expect((await page(company, '/patients?codalmacen=ALM2')).meta.total).toBe(1)

    const mine = await page(limited, '/patients')
    expect(mine.meta.total).toBe(2)
    expect(ids(mine)).toEqual([a1.id, a2.id].sort())
    expect((await page(limited, '/patients?codalmacen=ALM1')).meta.total).toBe(2)
    expect((await page(limited, '/patients?q=Testa')).meta.total).toBe(2)
    const forbidden = await limited.get('/patients?codalmacen=ALM2')
    expect(forbidden.statusCode).toBe(403)
    expect(forbidden.json().code).toBe('center_forbidden')
    const unknown = await company.get('/patients?codalmacen=NOPE')
    expect(unknown.statusCode).toBe(400)
    expect(unknown.json().code).toBe('unknown_center')
  })

  test('a token limited to two centers sees both', async () => {
    const company = newCompany(h.app, { companyCenters: ['ALM1', 'ALM2', 'ALM3'] })
    const both = newCompany(h.app, {
      companyId: company.principal.companyId,
      companyCenters: ['ALM1', 'ALM2', 'ALM3'],
      allowedCenters: ['ALM1', 'ALM2'],
    })
    await createPatient(company, { codalmacen: 'ALM1' })
    await createPatient(company, { codalmacen: 'ALM2' })
    await createPatient(company, { codalmacen: 'ALM3' })
    const p = await page(both, '/patients')
    expect(p.meta.total).toBe(2)
    expect(p.data.map((r) => r.codalmacen).sort()).toEqual(['ALM1', 'ALM2'])
  })

  test('counters stay exact through creates, center moves, to and from no center', async () => {
    const c = newCompany(h.app)
    const id = c.principal.companyId
    const check = async () => {
      expect((await page(c, '/patients')).meta.total).toBe(await exactCount(id))
      expect((await page(c, '/patients?codalmacen=ALM1')).meta.total).toBe(await exactCount(id, 'ALM1'))
      expect((await page(c, '/patients?codalmacen=ALM2')).meta.total).toBe(await exactCount(id, 'ALM2'))
    }
    const p1 = await createPatient(c, { codalmacen: 'ALM1' })
    const p2 = await createPatient(c, { codalmacen: 'ALM1' })
    const p3 = await createPatient(c)
    await check()
    await c.patch(`/patients/${p1.id}`, { codalmacen: 'ALM2' })
    await check()
    await c.patch(`/patients/${p2.id}`, { codalmacen: null })
    await check()
    await c.patch(`/patients/${p3.id}`, { codalmacen: 'ALM1' })
    await c.patch(`/patients/${p3.id}`, { notes: 'no center change' })
    await check()
    expect(await exactCount(id, 'ALM1')).toBe(1)
    expect(await exactCount(id, 'ALM2')).toBe(1)
    expect(await exactCount(id, null)).toBe(1)
    // Refused writes roll the counter back with them.
    await c.post('/patients', {
      first_name: 'X',
      last_name: 'Y',
      birth_date: '1990-01-01',
      requires_legal_guardian: true,
    })
    await c.post('/patients', {
      first_name: 'X',
      last_name: 'Y',
      birth_date: '1990-01-01',
      codalmacen: 'ALM1',
      national_id: 'C1',
    })
    await c.post('/patients', {
      first_name: 'X',
      last_name: 'Y',
      birth_date: '1990-01-01',
      codalmacen: 'ALM1',
      national_id: 'C1',
    })
    await check()
  })

  test('counters stay exact under concurrent creates and moves', async () => {
    const c = newCompany(h.app)
    const id = c.principal.companyId
    const created = await Promise.all(
      Array.from({ length: 12 }, (_, i) => createPatient(c, { codalmacen: i % 2 ? 'ALM1' : 'ALM2' })),
    )
    await Promise.all(
      created.map((p, i) => c.patch(`/patients/${p.id}`, { codalmacen: i % 3 ? 'ALM2' : null })),
    )
    expect((await page(c, '/patients')).meta.total).toBe(12)
    for (const center of ['ALM1', 'ALM2'])
      expect((await page(c, `/patients?codalmacen=${center}`)).meta.total).toBe(await exactCount(id, center))
  })

  test('bulk inserts by SQL (imports) are counted by the statement trigger', async () => {
    const c = newCompany(h.app)
    const id = c.principal.companyId
    await h.owner.raw(
      `INSERT INTO patients (idempresa, id, codalmacen, first_name, last_name, birth_date)
       SELECT ?, gen_random_uuid(), CASE WHEN g % 2 = 0 THEN 'ALM1' END, 'Bulk', 'Import' || g, '1970-01-01'
       FROM generate_series(1, 50) g`,
      [id],
    )
    expect((await page(c, '/patients')).meta.total).toBe(50)
    expect((await page(c, '/patients?codalmacen=ALM1')).meta.total).toBe(25)
    await h.owner('patients').where({ idempresa: id, codalmacen: 'ALM1' }).delete()
    expect((await page(c, '/patients')).meta.total).toBe(25)
    expect((await page(c, '/patients?codalmacen=ALM1')).meta.total).toBe(0)
  })
})
