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

describe('single-line fields refuse line breaks and control characters, as appointments do', () => {
  /** Every single-line field of a patient, as a body that sets it to `v`, and the path a 400 names. */
  const singleLine: Array<[string, (v: string) => Record<string, unknown>]> = [
    ['/first_name', (v) => ({ first_name: v })],
    ['/last_name', (v) => ({ last_name: v })],
    ['/address/line1', (v) => ({ address: { line1: v } })],
    ['/address/line2', (v) => ({ address: { line2: v } })],
    ['/address/city', (v) => ({ address: { city: v } })],
    ['/address/postal_code', (v) => ({ address: { postal_code: v } })],
    ['/address/region', (v) => ({ address: { region: v } })],
    [
      '/guardian/name',
      (v) => ({ requires_legal_guardian: true, guardian: { name: v, phone: '+34600111222' } }),
    ],
    [
      '/guardian/relationship',
      (v) => ({
        requires_legal_guardian: true,
        guardian: { name: 'Tutora', relationship: v, phone: '+34600111222' },
      }),
    ],
    ['/email', (v) => ({ email: v })],
    ['/phone', (v) => ({ phone: v })],
    ['/national_id', (v) => ({ national_id: v })],
  ]
  const hostile: Array<[string, string]> = [
    ['CR LF', 'Ana\r\nBcc: x'],
    ['LF', 'Ana\nMaria'],
    ['CR', 'Ana\rMaria'],
    ['a tab', 'Ana\tMaria'],
    ['a C0 control (BEL)', 'Ana\u0007'],
    ['ESC', 'Ana\u001b[31m'],
    ['DEL', 'Ana\u007f'],
    ['a C1 control (NEL)', 'Ana\u0085Maria'],
    ['a C1 control (CSI)', 'Ana\u009b31m'],
    ['a line separator', 'Ana\u2028Maria'],
    ['a paragraph separator', 'Ana\u2029Maria'],
  ]
  const cases = singleLine.flatMap(([path, set]) => hostile.map(([what, v]) => [path, what, set, v] as const))

  test.each(cases)('POST %s with %s is 400 naming it', async (path, _what, set, v) => {
    const c = newCompany(h.app)
    const res = await c.post('/patients', makePatient(set(`x${v}`)))
    expectFieldRefused(res, path)
    const message = (res.json() as { errors: Array<{ path: string; message: string }> }).errors.find(
      (e) => e.path === path,
    )?.message
    if (!['/email', '/phone', '/national_id'].includes(path))
      expect(message).toBe('must not be blank nor contain line breaks or control characters')
    expect((await c.get('/patients')).json().meta.total).toBe(0)
  })

  test.each(singleLine.slice(0, 8))(
    'PATCH %s with a line break is 400, the patient unchanged',
    async (path, set) => {
      const c = newCompany(h.app)
      const p = await createPatient(c)
      const res = await c.patch(`/patients/${p.id}`, set('Calle\nMayor'))
      expectFieldRefused(res, path)
      expect((await c.get(`/patients/${p.id}`)).json()).toEqual(p)
    },
  )

  test('notes are free text: line breaks and tabs pass, control characters do not', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c, { notes: 'Primera linea\r\n\tsegunda linea\u2028tercera' })
    expect(p.notes).toBe('Primera linea\r\n\tsegunda linea\u2028tercera')
    for (const v of ['nota \u0007', 'nota \u001b[31m', 'nota \u0085', 'nota \u009b31m', 'nota \u007f']) {
      expectFieldRefused(await c.post('/patients', makePatient({ notes: v })), '/notes')
      expectFieldRefused(await c.patch(`/patients/${p.id}`, { notes: v }), '/notes')
    }
    expect((await c.get(`/patients/${p.id}`)).json().notes).toBe(p.notes)
  })

  test('names with accents, apostrophes, hyphens and inner spaces still pass', async () => {
    const c = newCompany(h.app)
    const p = await createPatient(c, {
      first_name: 'María José',
      last_name: "O'Connor-Núñez",
      address: { line1: 'C/ Mayor, 1, 2º B', city: 'Alcalá de Henares', postal_code: '28801' },
      requires_legal_guardian: true,
      guardian: { name: 'Ana Núñez', relationship: 'madre', phone: '+34600111222' },
    })
    expect(p).toMatchObject({ first_name: 'María José', last_name: "O'Connor-Núñez" })
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
