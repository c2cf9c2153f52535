import { encodeCursor, uuidv7 } from '@clinic/platform/core'
import type { Knex } from 'knex'
import { listStatement } from '../../src/db/repositories/appointments-repository'
import type { Appointment } from '../../src/schemas/appointment'
import { companyOf, startApp, type Company, type Harness } from '../helpers'

let h: Harness
beforeAll(async () => {
  h = await startApp({ poolMax: 6 })
})
afterAll(() => h.close())

type Page = {
  data: Array<{ id: string; starts_at: string; codalmacen: string; status: string; practitioner: string }>
  meta: { total: number; offset: number; limit: number; next: string | null }
}
const page = async (c: Company, url: string): Promise<Page> => {
  const res = await c.send('GET', url)
  if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
  return res.json()
}
const at = (day: number, hour: number, minute = 0) =>
  new Date(Date.UTC(2031, 2, day, hour, minute)).toISOString()
/** A booking at day/hour (UTC) of March 2031, 30 minutes long. */
const bookAt = (c: Company, day: number, hour: number, o: Record<string, unknown> = {}) =>
  c.book({ starts_at: at(day, hour), ends_at: at(day, hour, 30), ...o })

/** Follows meta.next to the end; returns the ids in order. */
async function walk(c: Company, base: string): Promise<string[]> {
  const ids: string[] = []
  let url = base
  for (let i = 0; i < 50; i++) {
    const p = await page(c, url)
    ids.push(...p.data.map((r) => r.id))
    if (!p.meta.next) return ids
    url = `${base}&after=${p.meta.next}`
  }
  throw new Error('cursor never ended')
}

describe('GET /appointments', () => {
  let c: Company
  const booked: Record<'a' | 'b' | 'c' | 'd' | 'e' | 'f', Appointment> = {} as never
  beforeAll(async () => {
    c = companyOf(h)
    // Day 3: three in ALM1 (two practitioners), one in ALM2; day 4: one in ALM1; day 2: one in ALM1.
    booked.a = await bookAt(c, 3, 9)
    booked.b = await bookAt(c, 3, 8, { practitioner: 'dr-otro' })
    booked.c = await bookAt(c, 3, 11)
    booked.d = await bookAt(c, 3, 9, { codalmacen: 'ALM2', practitioner: 'dr-tercero' })
    booked.e = await bookAt(c, 4, 9)
    booked.f = await bookAt(c, 2, 23)
    await c.send('PATCH', `/appointments/${booked.c.id}`, { status: 'confirmed' })
    await c.send('PATCH', `/appointments/${booked.e.id}`, {
      status: 'cancelled',
      cancellation_reason: 'aviso',
    })
  })
  const ids = (p: Page) => p.data.map((r) => r.id)

  test('envelope and defaults: earliest first, limit 25, exact total', async () => {
    const p = await page(c, '/appointments')
    expect(p.meta).toEqual({ total: 6, offset: 0, limit: 25, next: null })
    expect(ids(p)).toEqual([booked.f, booked.b, booked.a, booked.d, booked.c, booked.e].map((x) => x!.id))
  })

  test("a center's day: codalmacen + from/to (from inclusive, to exclusive, any offset)", async () => {
    const p = await page(
      c,
      `/appointments?codalmacen=ALM1&from=${encodeURIComponent('2031-03-03T01:00:00+01:00')}&to=2031-03-04T00:00:00Z`,
    )
    expect(ids(p)).toEqual([booked.b, booked.a, booked.c].map((x) => x!.id))
    expect(p.meta.total).toBe(3)
    const edge = await page(
      c,
      `/appointments?from=${booked.a!.starts_at}&to=${booked.c!.starts_at}&codalmacen=ALM1`,
    )
    expect(ids(edge)).toEqual([booked.a!.id])
  })

  test('filters: status (one or repeated), practitioner, patient_id; -starts_at', async () => {
    expect((await page(c, '/appointments?status=confirmed')).data.map((r) => r.status)).toEqual(['confirmed'])
    const two = await page(c, '/appointments?status=confirmed&status=cancelled&sort=-starts_at')
    expect(ids(two)).toEqual([booked.e!.id, booked.c!.id])
    expect(two.meta.total).toBe(2)
    const dr = await page(c, '/appointments?practitioner=dr-otro')
    expect(ids(dr)).toEqual([booked.b!.id])
    const full = (await c.send('GET', `/appointments/${booked.d!.id}`)).json()
    const mine = await page(c, `/appointments?patient_id=${full.patient_id}`)
    expect(ids(mine)).toEqual([booked.d!.id])
    expect((await page(c, '/appointments?sort=-starts_at')).data[0]!.id).toBe(booked.e!.id)
  })

  test('meta.total is exact with every filter combination, against count(*)', async () => {
    const cases: Array<[string, (q: ReturnType<typeof h.owner>) => unknown]> = [
      ['', () => undefined],
      ['codalmacen=ALM1', (q) => q.where({ codalmacen: 'ALM1' })],
      ['status=scheduled', (q) => q.where({ status: 'scheduled' })],
      [
        'codalmacen=ALM1&status=scheduled&status=confirmed',
        (q) => q.where({ codalmacen: 'ALM1' }).whereIn('status', ['scheduled', 'confirmed']),
      ],
      ['from=2031-03-03T00:00:00Z', (q) => q.where('starts_at', '>=', '2031-03-03T00:00:00Z')],
      [
        'practitioner=dra-ficticia&to=2031-03-04T00:00:00Z',
        (q) => q.where({ practitioner: 'dra-ficticia' }).where('starts_at', '<', '2031-03-04T00:00:00Z'),
      ],
    ]
    for (const [query, where] of cases) {
      const q = h.owner('appointments').where({ idempresa: c.principal.companyId })
      where(q)
      const [row] = await q.count({ n: '*' })
      const p = await page(c, `/appointments?limit=1&${query}`)
      expect([query, p.meta.total]).toEqual([query, Number(row!.n)])
    }
  })

  test('pages with offset/limit and with the cursor, both sorts, same order', async () => {
    const all = ids(await page(c, '/appointments?limit=100'))
    expect(await walk(c, '/appointments?limit=2')).toEqual(all)
    expect(await walk(c, '/appointments?limit=4&sort=-starts_at')).toEqual([...all].reverse())
    const second = await page(c, '/appointments?limit=2&offset=2')
    expect(ids(second)).toEqual(all.slice(2, 4))
    expect(second.meta).toMatchObject({ total: 6, offset: 2, limit: 2 })
  })

  test('a center-limited token lists only its centers', async () => {
    const limited = companyOf(h, { companyId: c.principal.companyId, allowedCenters: ['ALM2'] })
    const p = await page(limited, '/appointments')
    expect(ids(p)).toEqual([booked.d!.id])
    expect(p.meta.total).toBe(1)
    expect((await limited.send('GET', '/appointments?codalmacen=ALM1')).statusCode).toBe(403)
  })

  test('another company sees none of them', async () => {
    const other = companyOf(h)
    expect((await page(other, '/appointments')).meta.total).toBe(0)
    expect((await page(other, `/appointments?patient_id=${booked.a!.id}`)).data).toEqual([])
  })

  test.each([
    ['limit=101', '/limit'],
    ['limit=0', '/limit'],
    ['offset=10001', '/offset'],
    ['offset=99999999999999999999999', '/offset'],
    ['limit=1e400', '/limit'],
    ['from=1800-01-01T00:00:00Z', '/from'],
    ['to=3000-01-01T00:00:00Z', '/to'],
    ['from=yesterday', '/from'],
    ['from=2031-03-04T00:00:00Z&to=2031-03-03T00:00:00Z', '/to'],
    ['status=lost', '/status/0'],
    ['status=scheduled,confirmed', '/status/0'],
    ['sort=practitioner', '/sort'],
    ['patient_id=nope', '/patient_id'],
    ['practitioner=a%00b', '/practitioner'],
    ['practitioner=a%0Ab', '/practitioner'],
    ['practitioner=a%C2%85b', '/practitioner'],
    ['practitioner=a%E2%80%A8b', '/practitioner'],
    ['codalmacen=ALM1&codalmacen=ALM2', '/codalmacen'],
    ['after=bm90LWEtY3Vyc29y', '/after'],
    ['after=%00', '/after'],
    ['offset=2&after=W10', '/offset'],
    ['color=red', '/color'],
  ])('%s is 400 naming %s', async (query, path) => {
    const res = await c.send('GET', `/appointments?${query}`)
    expect(res.statusCode).toBe(400)
    expect(res.json().code).toBe('validation_failed')
    expect(res.json().errors.map((e: { path: string }) => e.path)).toContain(path)
  })

  // Cursors are client input: one encoded exactly as the service encodes them but carrying values
  // it never writes must be a 400 naming `after`, never reach PostgreSQL (22008 was a 500).
  test.each([
    ['an impossible day', ['a', '2026-02-30T10:00:00Z', '0190c5a0-0000-7000-8000-0000000000a1']],
    ['an impossible day, as the service writes instants', ['a', '2026-02-30T10:00:00.000Z', uuidv7()]],
    ['an offset PostgreSQL refuses', ['a', '2030-01-01T10:00:00+23:59', uuidv7()]],
    ['an instant not in the form the service writes', ['a', '2030-01-01T10:00:00Z', uuidv7()]],
    ['an instant out of the window', ['a', '0000-01-01T00:00:00.000Z', uuidv7()]],
    ['a bad id', ['a', '2030-01-01T10:00:00.000Z', 'not-a-uuid']],
    ['an id that is not a string', ['a', '2030-01-01T10:00:00.000Z', 7]],
  ])('a well-formed cursor with %s is 400 naming after', async (_case, values) => {
    const res = await c.send('GET', `/appointments?after=${encodeCursor(values)}`)
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: '/after', message: 'is not a cursor from meta.next for this sort' }],
    })
  })

  test('a cursor of one sort is refused by the other', async () => {
    const { meta } = await page(c, '/appointments?limit=1')
    const res = await c.send('GET', `/appointments?limit=1&sort=-starts_at&after=${meta.next}`)
    expect(res.statusCode).toBe(400)
    expect(res.json().errors).toEqual([
      { path: '/after', message: 'is not a cursor from meta.next for this sort' },
    ])
  })
})

describe('query plans', () => {
  test("a center's day is an index range scan on (company, center, starts_at), at scale", async () => {
    const c = companyOf(h, { companyCenters: Array.from({ length: 10 }, (_, i) => `C${i}`) })
    const company = c.principal.companyId
    // 20,000 appointments over 10 centers and 200 days, then fresh statistics.
    await h.owner.raw(
      `insert into appointments (idempresa, id, patient_id, codalmacen, practitioner, starts_at, ends_at)
       select ?, gen_random_uuid(), gen_random_uuid(), 'C' || (i % 10), 'dr-' || (i % 40),
              t, t + interval '20 minutes'
         from generate_series(0, 19999) i,
              lateral (select timestamptz '2032-01-01 08:00Z' + (i / 100) * interval '1 day'
                              + (i % 100) * interval '7 minutes' as t) s`,
      [company],
    )
    await h.owner.raw('analyze appointments')
    // The SQL the repository really sends for the front desk's call, explained as the service role.
    const sent: Array<{ sql: string; bindings: Knex.RawBinding[] }> = []
    const capture = (q: { sql: string; bindings: Knex.RawBinding[] }) => sent.push(q)
    h.knex.on('query', capture)
    const p = await page(c, '/appointments?codalmacen=C3&from=2032-01-05T00:00:00Z&to=2032-01-06T00:00:00Z')
    h.knex.off('query', capture)
    expect(p.meta.total).toBe(10)
    // One statement answers both the page and its exact total.
    const list = sent.find((q) => /from "appointments"/.test(q.sql) && /order by/.test(q.sql))!
    expect(list.sql).toMatch(/count\(\*\)/)
    // bench/appointments.mjs explains listStatement's SQL: it is this very statement.
    const filter = {
      centers: ['C3'],
      from: '2032-01-05T00:00:00.000Z',
      to: '2032-01-06T00:00:00.000Z',
      sort: 'starts_at' as const,
      offset: 0,
      limit: 26,
    }
    const built = listStatement(h.knex, company, filter).toSQL().toNative()
    expect({ sql: built.sql, bindings: built.bindings }).toEqual({ sql: list.sql, bindings: list.bindings })
    const plan = await h.knex.transaction(async (trx) => {
      await trx.raw(`select set_config('app.idempresa', ?, true)`, [String(company)])
      const { rows } = await trx.raw(`explain ${list.sql.replace(/\$\d+/g, '?')}`, list.bindings)
      return rows.map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n')
    })
    // Both the page and the count read the (company, center, starts_at) index over the day's range.
    const scans =
      plan.match(/(Index Scan|Index Only Scan|Bitmap Index Scan)( Backward)? (using|on) \w+/g) ?? []
    expect(scans).toHaveLength(2)
    for (const scan of scans) expect(scan).toMatch(/appointments_center_day$/)
    expect(plan.match(/Index Cond: .*starts_at >= .*starts_at < /g)).toHaveLength(2)
    expect(plan).not.toMatch(/Seq Scan/)
  })
})
