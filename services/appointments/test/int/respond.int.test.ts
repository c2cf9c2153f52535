import { asComms, companyOf, outboxOf, startApp, type Company, type Harness } from '../helpers'

let h: Harness
beforeAll(async () => {
  h = await startApp()
})
afterAll(() => h.close())

/** comms calling for a patient link: the token's company, no user, no token. */
const patientLink = (c: Company) => asComms(h, c)
const respond = (c: Company, id: string, body: unknown) =>
  patientLink(c)('POST', `/internal/appointments/${id}/respond`, body)
const eventsOf = async (c: Company, id: string) =>
  (await outboxOf(h.owner, c.principal.companyId, id)).map((e) => [
    e.type,
    e.payload.data.changes,
    e.payload.data.old_status,
    e.payload.data.new_status,
  ])

describe('POST /internal/appointments/{id}/respond (patient links)', () => {
  test('confirm: scheduled -> confirmed, one appointment.updated with patient-link as the actor; again: 200, unchanged, no event', async () => {
    const c = companyOf(h)
    const a = await c.book()
    const res = await respond(c, a.id, { action: 'confirm' })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ id: a.id, status: 'confirmed', starts_at: a.starts_at })
    expect(res.json().reason).toBeUndefined()
    const outbox = await outboxOf(h.owner, c.principal.companyId, a.id)
    // No user and no token: empty, which the audit trail shows as null beside the username.
    expect(outbox[1]!.payload).toMatchObject({
      actorname: 'patient-link',
      actorid: '',
      actortokenid: '',
      requestid: expect.any(String),
    })

    const again = await respond(c, a.id, { action: 'confirm' })
    expect(again.statusCode).toBe(200)
    expect(again.json().status).toBe('confirmed')
    expect(await eventsOf(c, a.id)).toEqual([
      ['appointment.created', undefined, undefined, undefined],
      ['appointment.updated', ['status'], 'scheduled', 'confirmed'],
    ])
  })

  test('cancel (scheduled or confirmed): cancelled with the reason "cancelled by patient"; again: 200, unchanged', async () => {
    const c = companyOf(h)
    for (const confirmFirst of [false, true]) {
      const a = await c.book()
      if (confirmFirst) expect((await respond(c, a.id, { action: 'confirm' })).statusCode).toBe(200)
      const res = await respond(c, a.id, { action: 'cancel' })
      expect(res.statusCode).toBe(200)
      expect(res.json().status).toBe('cancelled')
      const read = await c.send('GET', `/appointments/${a.id}`)
      expect(read.json()).toMatchObject({ status: 'cancelled', cancellation_reason: 'cancelled by patient' })
      expect((await respond(c, a.id, { action: 'cancel' })).statusCode).toBe(200)
      const events = await eventsOf(c, a.id)
      expect(events.at(-1)).toEqual([
        'appointment.updated',
        ['status', 'cancellation_reason'],
        confirmFirst ? 'confirmed' : 'scheduled',
        'cancelled',
      ])
      expect(events).toHaveLength(confirmFirst ? 3 : 2)
      const outbox = await outboxOf(h.owner, c.principal.companyId, a.id)
      expect(JSON.stringify(outbox)).not.toMatch(/cancelled by patient/)
    }
  })

  test('409 invalid_transition for what the state machine refuses; nothing changes', async () => {
    const c = companyOf(h)
    const byClinic = await c.book()
    await c.send('PATCH', `/appointments/${byClinic.id}`, {
      status: 'cancelled',
      cancellation_reason: 'aviso por telefono',
    })
    const checkedIn = await c.book()
    await c.send('POST', `/appointments/${checkedIn.id}/checkin`)
    const completed = await c.book()
    await c.send('POST', `/appointments/${completed.id}/checkin`)
    await c.send('PATCH', `/appointments/${completed.id}`, { status: 'completed' })
    const noShow = await c.book()
    await c.send('PATCH', `/appointments/${noShow.id}`, { status: 'no_show' })
    for (const [a, action] of [
      [byClinic, 'confirm'],
      [byClinic, 'cancel'],
      [checkedIn, 'confirm'],
      [checkedIn, 'cancel'],
      [completed, 'confirm'],
      [completed, 'cancel'],
      [noShow, 'confirm'],
      [noShow, 'cancel'],
    ] as const) {
      const before = await c.send('GET', `/appointments/${a.id}`)
      const res = await respond(c, a.id, { action })
      expect([a.id, action, res.statusCode, res.json().code]).toEqual([
        a.id,
        action,
        409,
        'invalid_transition',
      ])
      expect((await c.send('GET', `/appointments/${a.id}`)).json()).toEqual(before.json())
    }
  })

  test("404 for another company's appointment or an unknown id; 400 for another action; 401 without an assertion", async () => {
    const a = companyOf(h)
    const b = companyOf(h)
    const mine = await a.book()
    const other = await respond(b, mine.id, { action: 'cancel' })
    expect(other.statusCode).toBe(404)
    expect(other.json().code).toBe('not_found')
    expect((await a.send('GET', `/appointments/${mine.id}`)).json().status).toBe('scheduled')
    expect((await respond(a, '01900000-0000-7000-8000-000000000000', { action: 'confirm' })).statusCode).toBe(
      404,
    )
    for (const body of [{ action: 'complete' }, {}, { action: 'confirm', status: 'cancelled' }]) {
      const res = await respond(a, mine.id, body)
      expect(res.statusCode).toBe(400)
      expect(res.json().code).toBe('validation_failed')
    }
    const bare = await h.app.inject({
      method: 'POST',
      url: `/internal/appointments/${mine.id}/respond`,
      payload: { action: 'cancel' },
    })
    expect(bare.statusCode).toBe(401)
    expect((await a.send('GET', `/appointments/${mine.id}`)).json().status).toBe('scheduled')
  })
})
