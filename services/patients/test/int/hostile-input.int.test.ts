import { encodeCursor, uuidv7 } from '@clinic/platform'
import { createPatient, makePatient, newCompany, startApp, type Harness } from '../helpers'

// Every log line the app writes, to show that refused values never reach it.
const logLines: string[] = []
let h: Harness
beforeAll(async () => {
  h = await startApp({ logLines })
})
afterAll(() => h.close())

const NUL = '\u0000'
const LONE_HIGH = '\ud800'
const LONE_LOW = '\udc00'

const expectFieldRefused = (res: { statusCode: number; json: () => unknown }, path: string) => {
  expect(res.statusCode).toBe(400)
  const body = res.json() as { code: string; errors: Array<{ path: string; message: string }> }
  expect(body.code).toBe('validation_failed')
  expect(body.errors.map((e) => e.path)).toContain(path)
}

describe('NUL and lone surrogates are 400 naming the field, never a 500', () => {
  test.each([
    ['first_name', { first_name: `Nulname${NUL}A` }, '/first_name'],
    ['last_name', { last_name: `Lonelast${LONE_HIGH}` }, '/last_name'],
    ['notes', { notes: `Lonenote${LONE_LOW}x` }, '/notes'],
    [
      'guardian name',
      {
        requires_legal_guardian: true,
        guardian: { name: `Nulguard${NUL}`, email: 'guardian@example.invalid' },
      },
      '/guardian/name',
    ],
    ['address line', { address: { line1: `Nulstreet${NUL}1` } }, '/address/line1'],
  ])('POST body: %s', async (_name, over, path) => {
    const c = newCompany(h.app)
    const res = await c.post('/patients', makePatient(over))
    expectFieldRefused(res, path)
  })

  test('PATCH body', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c)
    const res = await c.patch(`/patients/${p.id}`, { notes: `Patchnote${NUL}` })
    expectFieldRefused(res, '/notes')
  })

  test('query string: q and codalmacen', async () => {
    const c = newCompany(h.app)
    expectFieldRefused(await c.get('/patients?q=Nulquery%00x'), '/q')
    expectFieldRefused(await c.get('/patients?codalmacen=A%00'), '/codalmacen')
  })

  test('a field name with NUL is refused too', async () => {
    const c = newCompany(h.app)
    const res = await c.post('/patients', { ...makePatient(), [`x${NUL}`]: 1 })
    expect(res.statusCode).toBe(400)
  })

  test('the refused values never reach the log', () => {
    const all = logLines.join('\n')
    for (const v of ['Nulname', 'Lonelast', 'Lonenote', 'Nulguard', 'Nulstreet', 'Patchnote', 'Nulquery'])
      expect(all).not.toContain(v)
  })
})

describe('forged cursors are 400', () => {
  const id = uuidv7()
  test.each([
    ['a day that does not exist', '-created_at', ['c', '2026-02-30T00:00:00.000Z', id]],
    ['an instant out of range', '-created_at', ['c', '+275760-09-13T00:00:00.000Z', id]],
    ['a non-RFC 3339 date', '-created_at', ['c', 'Tue, 1 Jan 2026', id]],
    ['a number for the instant', '-created_at', ['c', 5, id]],
    ['an id that is not a UUID', '-created_at', ['c', '2026-01-01T00:00:00.000Z', 'x']],
    ['NUL in a name', 'last_name', ['l', `Cursorname${NUL}`, 'a', id]],
    ['a lone surrogate in a name', 'last_name', ['l', 'a', `b${LONE_HIGH}`, id]],
    ['an object for a name', 'last_name', ['l', { a: 1 }, 'a', id]],
  ])('%s', async (_name, sort, values) => {
    const c = newCompany(h.app)
    await createPatient(c)
    const res = await c.get(`/patients?sort=${sort}&after=${encodeCursor(values)}`)
    expectFieldRefused(res, '/after')
  })

  test('a cursor from meta.next still works', async () => {
    const c = newCompany(h.app)
    await createPatient(c)
    await createPatient(c)
    const first = (await c.get('/patients?sort=-created_at&limit=1')).json() as { meta: { next: string } }
    const res = await c.get(`/patients?sort=-created_at&limit=1&after=${first.meta.next}`)
    expect(res.statusCode).toBe(200)
  })
})
