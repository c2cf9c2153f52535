import { injectAs, testSigner } from '@clinic/platform/testing'
import { companyOf, outboxOf, slot, startApp, type Company, type Harness } from '../helpers'

let h: Harness
beforeAll(async () => {
  h = await startApp({ poolMax: 6 })
})
afterAll(() => h.close())

const patch = (c: Company, id: string, body: unknown, headers?: Record<string, string>) =>
  c.send('PATCH', `/appointments/${id}`, body, headers)
const checkin = (c: Company, id: string, headers?: Record<string, string>) =>
  c.send('POST', `/appointments/${id}/checkin`, undefined, headers)

describe('GET /appointments/{id}', () => {
  test("404 for another company's id and an unknown id; 400 for a malformed id", async () => {
    const a = companyOf(h)
    const b = companyOf(h)
    const mine = await a.book()
    const other = await b.send('GET', `/appointments/${mine.id}`)
    expect(other.statusCode).toBe(404)
    expect(other.json().code).toBe('not_found')
    expect((await a.send('GET', '/appointments/01900000-0000-7000-8000-000000000000')).statusCode).toBe(404)
    expect((await a.send('GET', '/appointments/not-a-uuid')).statusCode).toBe(400)
    const read = await a.send('GET', `/appointments/${mine.id}`)
    expect(read.statusCode).toBe(200)
    expect(read.headers.etag).toBe('"1"')
  })

  test('a center-limited token sees its centers only; ?codalmacen= narrows', async () => {
    const c = companyOf(h)
    const limited = companyOf(h, { companyId: c.principal.companyId, allowedCenters: ['ALM1'] })
    const one = await c.book({ codalmacen: 'ALM1' })
    const two = await c.book({ codalmacen: 'ALM2' })
    expect((await limited.send('GET', `/appointments/${one.id}`)).statusCode).toBe(200)
    expect((await limited.send('GET', `/appointments/${two.id}`)).statusCode).toBe(404)
    expect((await limited.send('GET', `/appointments/${two.id}?codalmacen=ALM2`)).statusCode).toBe(403)
    expect((await c.send('GET', `/appointments/${one.id}?codalmacen=ALM2`)).statusCode).toBe(404)
    expect((await c.send('GET', `/appointments/${one.id}?codalmacen=NOPE`)).json().code).toBe(
      'unknown_center',
    )
    // Nor can it change or check in what it cannot see.
    expect((await patch(limited, two.id, { notes: 'x' })).statusCode).toBe(404)
    expect((await checkin(limited, two.id)).statusCode).toBe(404)
  })
})

describe('PATCH /appointments/{id}', () => {
  test('moves an appointment: only the fields sent change, version and ETag go up, UTC out', async () => {
    const c = companyOf(h)
    const a = await c.book()
    const res = await patch(
      c,
      a.id,
      { starts_at: '2031-05-05T10:00:00+02:00', ends_at: '2031-05-05T10:45:00+02:00' },
      { 'if-match': '"1"' },
    )
    expect(res.statusCode).toBe(200)
    expect(res.headers.etag).toBe('"2"')
    expect(res.json()).toMatchObject({
      ...a,
      starts_at: '2031-05-05T08:00:00.000Z',
      ends_at: '2031-05-05T08:45:00.000Z',
      version: 2,
      updated_at: expect.any(String),
    })
  })

  test('If-Match: stale is 412 version_mismatch and changes nothing; W/ and * pass', async () => {
    const c = companyOf(h)
    const a = await c.book()
    expect((await patch(c, a.id, { notes: 'a' }, { 'if-match': 'W/"1"' })).statusCode).toBe(200)
    expect((await patch(c, a.id, { notes: 'b' }, { 'if-match': '*' })).statusCode).toBe(200)
    const stale = await patch(c, a.id, { notes: 'c' }, { 'if-match': '"1"' })
    expect(stale.statusCode).toBe(412)
    expect(stale.json().code).toBe('version_mismatch')
    expect((await c.send('GET', `/appointments/${a.id}`)).json()).toMatchObject({ notes: 'b', version: 3 })
  })

  test('concurrent PATCHes with the same If-Match: exactly one wins', async () => {
    const c = companyOf(h)
    const a = await c.book()
    const answers = await Promise.all(
      ['uno', 'dos', 'tres', 'cuatro'].map((notes) => patch(c, a.id, { notes }, { 'if-match': '"1"' })),
    )
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 412, 412, 412])
  })

  test('moving onto a taken slot is 409 slot_conflict and changes nothing', async () => {
    const c = companyOf(h)
    const taken = await c.book()
    const other = await c.book()
    const res = await patch(c, other.id, { starts_at: taken.starts_at, ends_at: taken.ends_at, notes: 'x' })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toMatchObject({ code: 'slot_conflict', detail: expect.stringMatching(/practitioner/) })
    expect((await c.send('GET', `/appointments/${other.id}`)).json()).toEqual(other)
    expect((await outboxOf(h.owner, c.principal.companyId, other.id)).map((r) => r.type)).toEqual([
      'appointment.created',
    ])
  })

  test('read-only and unknown fields are 400, each named', async () => {
    const c = companyOf(h)
    const a = await c.book()
    const res = await patch(c, a.id, {
      id: a.id,
      version: 7,
      patient_id: c.newPatient(),
      checked_in_at: '2030-01-01T00:00:00Z',
      idEmpresa: 9,
      color: 'red',
    })
    expect(res.statusCode).toBe(400)
    const message = Object.fromEntries(
      res.json().errors.map((e: { path: string; message: string }) => [e.path, e.message]),
    )
    expect(message).toEqual({
      '/id': 'is read-only',
      '/version': 'is read-only',
      '/idEmpresa': 'is read-only',
      '/patient_id': 'cannot be changed: cancel this appointment and book another',
      '/checked_in_at': 'is read-only: set by POST /appointments/{id}/checkin',
      '/color': 'is not an allowed field',
    })
  })

  test('C1 controls are 400 in every text field, U+2028 in the single-line practitioner', async () => {
    const c = companyOf(h)
    const a = await c.book()
    const res = await patch(c, a.id, {
      status: 'cancelled',
      cancellation_reason: 'aviso \u0090',
      practitioner: 'dr\u2028otro',
      reason: '\u009fotra',
    })
    expect(res.statusCode).toBe(400)
    expect(
      res
        .json()
        .errors.map((e: { path: string }) => e.path)
        .sort(),
    ).toEqual(['/cancellation_reason', '/practitioner', '/reason'])
    // Line breaks, tabs and U+2028 stay fine in multi-line text.
    expect((await patch(c, a.id, { notes: 'linea 1\n\tlinea 2\u2028linea 3' })).statusCode).toBe(200)
  })

  test('a move that breaks the times is 400 on the field sent; a zone is checked', async () => {
    const c = companyOf(h)
    const a = await c.book()
    const late = await patch(c, a.id, { starts_at: a.ends_at })
    expect(late.statusCode).toBe(400)
    expect(late.json().errors).toEqual([{ path: '/starts_at', message: 'must be before ends_at' }])
    const long = await patch(c, a.id, { ends_at: '2099-01-01T00:00:00Z' })
    expect(long.json().errors).toEqual([
      { path: '/ends_at', message: 'must be at most 12 h after starts_at' },
    ])
    expect((await patch(c, a.id, { time_zone: 'Europe/Atlantis' })).statusCode).toBe(400)
  })

  test('a center move checks the center and the token', async () => {
    const c = companyOf(h)
    const limited = companyOf(h, { companyId: c.principal.companyId, allowedCenters: ['ALM1'] })
    const a = await c.book({ codalmacen: 'ALM1' })
    expect((await patch(c, a.id, { codalmacen: 'NOPE' })).json().code).toBe('unknown_center')
    expect((await patch(limited, a.id, { codalmacen: 'ALM2' })).statusCode).toBe(403)
    expect((await patch(c, a.id, { codalmacen: 'ALM2' })).json().codalmacen).toBe('ALM2')
  })

  test('confirm, then cancel with a reason: appointment.updated names the fields and the statuses', async () => {
    const c = companyOf(h)
    const a = await c.book()
    expect((await patch(c, a.id, { status: 'confirmed' })).json().status).toBe('confirmed')
    const noReason = await patch(c, a.id, { status: 'cancelled' })
    expect(noReason.statusCode).toBe(400)
    expect(noReason.json().errors).toEqual([
      { path: '/cancellation_reason', message: 'is required to cancel' },
    ])
    const cancelled = await patch(c, a.id, { status: 'cancelled', cancellation_reason: 'aviso por telefono' })
    expect(cancelled.json()).toMatchObject({
      status: 'cancelled',
      cancellation_reason: 'aviso por telefono',
      version: 3,
    })
    const events = await outboxOf(h.owner, c.principal.companyId, a.id)
    expect(
      events.map((e) => [
        e.type,
        e.payload.data.changes,
        e.payload.data.old_status,
        e.payload.data.new_status,
      ]),
    ).toEqual([
      ['appointment.created', undefined, undefined, undefined],
      ['appointment.updated', ['status'], 'scheduled', 'confirmed'],
      ['appointment.updated', ['status', 'cancellation_reason'], 'confirmed', 'cancelled'],
    ])
    expect(JSON.stringify(events)).not.toMatch(/aviso por telefono/)
    expect(events[2]!.payload).toMatchObject({ actorid: c.principal.userId, requestid: expect.any(String) })
  })

  test('a move emits the changed field names, never their values, and no status change; a PATCH that changes nothing emits nothing', async () => {
    const c = companyOf(h)
    const a = await c.book()
    await patch(c, a.id, { practitioner: 'dr-otro', reason: a.reason })
    const same = await patch(c, a.id, { practitioner: 'dr-otro' })
    expect(same.json().version).toBe(2)
    const events = await outboxOf(h.owner, c.principal.companyId, a.id)
    expect(events).toHaveLength(2)
    expect(events[1]!.payload.data).toEqual({
      id: a.id,
      patient_id: a.patient_id,
      version: 2,
      changes: ['practitioner'],
      old_status: null,
      new_status: null,
    })
    expect(JSON.stringify(events[1])).not.toContain('dr-otro')
  })

  test.each(['completed', 'cancelled', 'no_show'])('a %s appointment takes notes only', async (final) => {
    const c = companyOf(h)
    const a = await c.book()
    if (final === 'completed') expect((await checkin(c, a.id)).statusCode).toBe(200)
    const to = final === 'cancelled' ? { status: final, cancellation_reason: 'aviso' } : { status: final }
    expect((await patch(c, a.id, to)).statusCode).toBe(200)
    for (const body of [
      { status: 'scheduled' },
      { reason: 'otra' },
      { starts_at: '2040-01-01T10:00:00Z', ends_at: '2040-01-01T10:30:00Z' },
      { practitioner: 'dr-otro' },
    ]) {
      const res = await patch(c, a.id, body)
      expect(res.statusCode).toBe(409)
      expect(res.json().code).toBe('invalid_transition')
    }
    expect((await patch(c, a.id, { notes: 'llamar para otra cita' })).statusCode).toBe(200)
  })

  test('application/merge-patch+json is accepted; a text body is 415', async () => {
    const c = companyOf(h)
    const a = await c.book()
    const merge = await c.send('PATCH', `/appointments/${a.id}`, JSON.stringify({ notes: 'x' }), {
      'content-type': 'application/merge-patch+json',
    })
    expect(merge.statusCode).toBe(200)
    expect(merge.json().notes).toBe('x')
    const text = await c.send('PATCH', `/appointments/${a.id}`, 'notes=x', { 'content-type': 'text/plain' })
    expect(text.statusCode).toBe(415)
  })

  test('checked_in cannot be set by PATCH', async () => {
    const c = companyOf(h)
    const a = await c.book()
    const res = await patch(c, a.id, { status: 'checked_in' })
    expect(res.statusCode).toBe(409)
    expect(res.json()).toMatchObject({ code: 'invalid_transition', detail: expect.stringMatching(/checkin/) })
  })
})

describe('POST /appointments/{id}/checkin', () => {
  test.each(['scheduled', 'confirmed'])(
    'from %s: 200, checked_in_at set, appointment.checked_in',
    async (from) => {
      const c = companyOf(h)
      const a = await c.book()
      if (from === 'confirmed') await patch(c, a.id, { status: 'confirmed' })
      const before = Date.now()
      const res = await checkin(c, a.id)
      expect(res.statusCode).toBe(200)
      const body = res.json()
      expect(body.status).toBe('checked_in')
      expect(Date.parse(body.checked_in_at)).toBeGreaterThanOrEqual(before - 1000)
      expect(res.headers.etag).toBe(`"${body.version}"`)
      const events = await outboxOf(h.owner, c.principal.companyId, a.id)
      expect(events.at(-1)).toMatchObject({
        type: 'appointment.checked_in',
        payload: {
          actorid: c.principal.userId,
          data: {
            status: 'checked_in',
            old_status: from,
            new_status: 'checked_in',
            checked_in_at: body.checked_in_at,
          },
        },
      })
      // Then completed by PATCH; the time can no longer move.
      expect(
        (await patch(c, a.id, { starts_at: '2040-01-01T09:00:00Z', ends_at: '2040-01-01T09:30:00Z' }))
          .statusCode,
      ).toBe(409)
      expect((await patch(c, a.id, { status: 'completed' })).json().status).toBe('completed')
    },
  )

  test.each([
    ['checked_in', [] as unknown[]],
    ['cancelled', [{ status: 'cancelled', cancellation_reason: 'aviso' }]],
    ['no_show', [{ status: 'no_show' }]],
  ])('from %s: 409 invalid_transition', async (_s, patches) => {
    const c = companyOf(h)
    const a = await c.book()
    if (_s === 'checked_in') await checkin(c, a.id)
    for (const p of patches) await patch(c, a.id, p)
    const res = await checkin(c, a.id)
    expect(res.statusCode).toBe(409)
    expect(res.json().code).toBe('invalid_transition')
  })

  test('two simultaneous check-ins: one 200, one 409', async () => {
    const c = companyOf(h)
    const a = await c.book()
    const answers = await Promise.all([checkin(c, a.id), checkin(c, a.id)])
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 409])
  })

  test('with an Idempotency-Key a retry replays the check-in instead of a 409', async () => {
    const c = companyOf(h)
    const a = await c.book()
    const first = await checkin(c, a.id, { 'idempotency-key': 'ci-1' })
    const again = await checkin(c, a.id, { 'idempotency-key': 'ci-1' })
    expect(again.statusCode).toBe(200)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.json()).toEqual(first.json())
  })

  test('a check-in replay is a read: a token that can no longer see the center gets 404', async () => {
    const admin = companyOf(h)
    const token = { companyId: admin.principal.companyId, tokenId: '0190c5a0-0000-7000-8000-0000000000c3' }
    const before = companyOf(h, { ...token, allowedCenters: ['ALM1', 'ALM2'] })
    // The same token after an administrator narrowed it to ALM2.
    const after = companyOf(h, { ...token, allowedCenters: ['ALM2'] })
    const a = await admin.book({ codalmacen: 'ALM1', notes: 'IDEMVIS02' })
    const first = await checkin(before, a.id, { 'idempotency-key': 'ci-moved' })
    expect(first.statusCode).toBe(200)
    const replay = await checkin(after, a.id, { 'idempotency-key': 'ci-moved' })
    expect(replay.statusCode).toBe(404)
    expect(replay.json().code).toBe('not_found')
    expect(replay.body).not.toContain(a.id)
    expect(replay.body).not.toContain('IDEMVIS02')
    // Still visible: the stored answer.
    const again = await checkin(before, a.id, { 'idempotency-key': 'ci-moved' })
    expect(again.statusCode).toBe(200)
    expect(again.headers['idempotent-replayed']).toBe('true')
    expect(again.json()).toEqual(first.json())
  })

  test('accepts an empty JSON body, refuses fields', async () => {
    const c = companyOf(h)
    const a = await c.book()
    const res = await c.send('POST', `/appointments/${a.id}/checkin`, {})
    expect(res.statusCode).toBe(200)
    const b = await c.book()
    expect(
      (await c.send('POST', `/appointments/${b.id}/checkin`, { checked_in_at: slot().starts_at })).statusCode,
    ).toBe(400)
  })
})

describe('POST /appointments/{id}/checkin bodies', () => {
  test.each(['[]', '[{}]', '0', 'true', 'null', '"now"'])(
    'a JSON body %s is 400 validation_failed naming the body; nothing changes',
    async (raw) => {
      const c = companyOf(h)
      const a = await c.book()
      const res = await c.send('POST', `/appointments/${a.id}/checkin`, raw, {
        'content-type': 'application/json',
      })
      expect(res.statusCode).toBe(400)
      expect(res.json()).toMatchObject({
        code: 'validation_failed',
        errors: [{ path: '', message: 'must be empty or {}' }],
      })
      expect((await c.send('GET', `/appointments/${a.id}`)).json().status).toBe('scheduled')
    },
  )

  test('each field of an object body is named; no body and {} check in', async () => {
    const c = companyOf(h)
    const a = await c.book()
    const res = await c.send('POST', `/appointments/${a.id}/checkin`, { at: 'now', 'a/b': 1 })
    expect(res.statusCode).toBe(400)
    expect(res.json().errors).toEqual([
      { path: '/at', message: 'is not an allowed field' },
      { path: '/a~1b', message: 'is not an allowed field' },
    ])
    expect(
      (await c.send('POST', `/appointments/${a.id}/checkin`, '{}', { 'content-type': 'application/json' }))
        .statusCode,
    ).toBe(200)
    const b = await c.book()
    expect((await checkin(c, b.id)).statusCode).toBe(200)
  })
})

describe('GET /internal/appointments/{id} (for comms reminders)', () => {
  test("a summary for the caller's company and centers only, without reason or notes", async () => {
    const a = companyOf(h)
    const b = companyOf(h)
    const limited = companyOf(h, { companyId: a.principal.companyId, allowedCenters: ['ALM2'] })
    const mine = await a.book({ codalmacen: 'ALM1', reason: 'control', notes: 'private' })
    const asComms = (c: typeof a) => injectAs(h.app, c.principal, testSigner('comms'))
    const res = await asComms(a)('GET', `/internal/appointments/${mine.id}`)
    expect(res.statusCode).toBe(200)
    expect(res.json()).toEqual({
      id: mine.id,
      patient_id: mine.patient_id,
      codalmacen: 'ALM1',
      practitioner: mine.practitioner,
      starts_at: mine.starts_at,
      ends_at: mine.ends_at,
      time_zone: mine.time_zone,
      status: 'scheduled',
      // Reminders apply an appointment's state only forward, by its version.
      version: 1,
    })
    expect((await asComms(b)('GET', `/internal/appointments/${mine.id}`)).statusCode).toBe(404)
    expect((await asComms(limited)('GET', `/internal/appointments/${mine.id}`)).statusCode).toBe(404)
    // comms only: the gateway's assertion (the API's) is refused on an internal route.
    expect((await a.send('GET', `/internal/appointments/${mine.id}`)).statusCode).toBe(401)
  })
})
