import { freePort, waitFor } from '@clinic/platform/testing'
import { SETTLE_MS, call, extraGateway, makeTenant, sql, stack, tokenFor, type Tenant } from '../src/client'
import { startProcess, waitHealthy } from '../src/stack'

/** A patient of the tenant, made through the API as a front desk would. */
async function patientOf(t: Tenant): Promise<string> {
  const res = await call('POST', '/patients', {
    token: t.token,
    body: { first_name: 'Testa', last_name: 'Ejemplo', birth_date: '1980-05-17' },
  })
  if (res.status !== 201) throw new Error(`patient: ${res.status}`)
  return res.body.id
}
const day = '2031-06-02'
const slot = (patient_id: string, from: string, to: string, o: Record<string, unknown> = {}) => ({
  patient_id,
  codalmacen: 'ALM1',
  practitioner: 'dra-lopez',
  starts_at: `${day}T${from}:00+02:00`,
  ends_at: `${day}T${to}:00+02:00`,
  reason: 'revision',
  ...o,
})

let a: Tenant
let b: Tenant
beforeAll(async () => {
  ;[a, b] = await Promise.all([makeTenant(['ALM1', 'ALM2']), makeTenant(['ALM1'])])
})

describe('appointments through the gateway', () => {
  it('books, lists a day, moves, checks in and cancels, with the audit trail and its actor', async () => {
    const p1 = await patientOf(a)
    const p2 = await patientOf(a)
    const booked = await call('POST', '/3/appointments', {
      token: a.token,
      headers: { 'idempotency-key': `book-${a.companyId}` },
      body: slot(p1, '09:30', '10:00'),
    })
    expect(booked.status).toBe(201)
    expect(booked.headers.get('location')).toBe(`/api/3/appointments/${booked.body.id}`)
    expect(booked.headers.get('etag')).toBe('"1"')
    expect(booked.headers.get('x-service-version')).toMatch(/^\d{6}\.\d{2}$/)
    expect(booked.body).toMatchObject({
      status: 'scheduled',
      starts_at: `${day}T07:30:00.000Z`,
      time_zone: 'Europe/Madrid',
    })
    const id = booked.body.id
    const second = await call('POST', '/appointments', { token: a.token, body: slot(p2, '10:00', '10:30') })
    expect(second.status).toBe(201)

    // The front desk's day at ALM1.
    const list = await call(
      'GET',
      `/appointments?codalmacen=ALM1&from=${day}T00:00:00Z&to=2031-06-03T00:00:00Z&status=scheduled&status=confirmed`,
      { token: a.token },
    )
    expect(list.status).toBe(200)
    expect(list.body.meta).toMatchObject({ total: 2, offset: 0, limit: 25, next: null })
    expect(list.body.data.map((x: any) => x.id)).toEqual([id, second.body.id])

    // Move it onto the second one's slot: taken; then to a free one, with the ETag.
    const clash = await call('PATCH', `/appointments/${id}`, {
      token: a.token,
      body: { starts_at: `${day}T10:00:00+02:00`, ends_at: `${day}T10:30:00+02:00` },
    })
    expect(clash.status).toBe(409)
    expect(clash.body.code).toBe('slot_conflict')
    const moved = await call('PATCH', `/appointments/${id}`, {
      token: a.token,
      headers: { 'if-match': '"1"' },
      body: { starts_at: `${day}T11:00:00+02:00`, ends_at: `${day}T11:30:00+02:00` },
    })
    expect(moved.status).toBe(200)
    expect(moved.headers.get('etag')).toBe('"2"')
    const stale = await call('PATCH', `/appointments/${id}`, {
      token: a.token,
      headers: { 'if-match': '"1"' },
      body: { notes: 'x' },
    })
    expect(stale.status).toBe(412)

    const checkedIn = await call('POST', `/appointments/${id}/checkin`, { token: a.token })
    expect(checkedIn.status).toBe(200)
    expect(checkedIn.body).toMatchObject({ status: 'checked_in', checked_in_at: expect.any(String) })
    const again = await call('POST', `/appointments/${id}/checkin`, { token: a.token })
    expect(again.status).toBe(409)
    expect(again.body.code).toBe('invalid_transition')

    const noReason = await call('PATCH', `/appointments/${second.body.id}`, {
      token: a.token,
      body: { status: 'cancelled' },
    })
    expect(noReason.status).toBe(400)
    const cancelled = await call('PATCH', `/appointments/${second.body.id}`, {
      token: a.token,
      body: { status: 'cancelled', cancellation_reason: 'el paciente avisa' },
    })
    expect(cancelled.status).toBe(200)
    // The freed slot can be booked again.
    expect(
      (await call('POST', '/appointments', { token: a.token, body: slot(p1, '10:00', '10:30') })).status,
    ).toBe(201)

    const events = await waitFor(
      async () => {
        const res = await call('GET', `/audit/events?resource_type=appointment&resource_id=${id}&limit=100`, {
          token: a.token,
        })
        const actions = (res.body.data ?? []).map((e: any) => e.action)
        return ['appointment.created', 'appointment.updated', 'appointment.checked_in'].every((x) =>
          actions.includes(x),
        )
          ? res.body.data
          : null
      },
      { timeoutMs: SETTLE_MS, intervalMs: 200, what: 'appointment events in the audit trail' },
    )
    for (const action of ['appointment.created', 'appointment.updated', 'appointment.checked_in']) {
      const e = events.find((x: any) => x.action === action)
      expect(e).toMatchObject({
        resource_type: 'appointment',
        resource_id: id,
        codalmacen: 'ALM1',
        outcome: 'success',
        actor: { username: a.username },
      })
    }
    expect(events.find((x: any) => x.action === 'appointment.updated').changes).toEqual([
      'starts_at',
      'ends_at',
    ])
    expect(JSON.stringify(events)).not.toContain('el paciente avisa')
  })

  it('keeps companies apart: 404 on ids, nothing in lists, their patients are unknown', async () => {
    const theirs = await call('POST', '/appointments', {
      token: b.token,
      body: slot(await patientOf(b), '12:00', '12:30'),
    })
    expect(theirs.status).toBe(201)
    const id = theirs.body.id
    expect((await call('GET', `/appointments/${id}`, { token: a.token })).status).toBe(404)
    const patch = await call('PATCH', `/appointments/${id}`, { token: a.token, body: { notes: 'x' } })
    expect(patch.status).toBe(404)
    expect(patch.body.code).toBe('not_found')
    expect((await call('POST', `/appointments/${id}/checkin`, { token: a.token })).status).toBe(404)
    const list = await call('GET', `/appointments?patient_id=${theirs.body.patient_id}`, { token: a.token })
    expect(list.body).toMatchObject({ data: [], meta: { total: 0 } })
    // B's patient is as unknown to A as a patient that does not exist.
    const foreign = await call('POST', '/appointments', {
      token: a.token,
      body: slot(theirs.body.patient_id, '13:00', '13:30'),
    })
    expect(foreign.status).toBe(422)
    expect(foreign.body.code).toBe('unknown_patient')
    expect((await call('GET', `/appointments/${id}`, { token: b.token })).body.notes).toBeNull()
  })

  it('a center-limited token books and sees only its centers', async () => {
    const t = await makeTenant(['ALM1', 'ALM2'])
    const p = await patientOf(t)
    for (const [code, from, to] of [
      ['ALM1', '09:00', '09:30'],
      ['ALM2', '10:00', '10:30'],
    ])
      expect(
        (
          await call('POST', '/appointments', {
            token: t.token,
            body: slot(p, from!, to!, { codalmacen: code }),
          })
        ).status,
      ).toBe(201)
    const limited = await tokenFor(t, '--centers', 'ALM2')
    const seen = await call('GET', '/appointments', { token: limited })
    expect(seen.body.meta.total).toBe(1)
    expect(seen.body.data.map((x: any) => x.codalmacen)).toEqual(['ALM2'])
    const forbidden = await call('POST', '/appointments', {
      token: limited,
      body: slot(p, '15:00', '15:30', { codalmacen: 'ALM1' }),
    })
    expect(forbidden.status).toBe(403)
    expect(forbidden.body.code).toBe('center_forbidden')
    expect((await call('GET', '/appointments?codalmacen=ALM1', { token: limited })).status).toBe(403)
  })

  it('ten concurrent bookings of one slot through the gateway: one 201, nine 409', async () => {
    const patients = await Promise.all(Array.from({ length: 10 }, () => patientOf(a)))
    const answers = await Promise.all(
      patients.map((p) =>
        call('POST', '/appointments', {
          token: a.token,
          body: slot(p, '16:00', '16:30', { practitioner: 'dr-race' }),
        }),
      ),
    )
    expect(answers.map((r) => r.status).sort()).toEqual([201, ...Array(9).fill(409)])
  })

  it('patients service down: 503 upstream_unavailable with Retry-After, nothing written', async () => {
    // A second appointments process whose PATIENTS_URL points at a port nothing listens on,
    // behind a second gateway.
    const port = await freePort()
    const child = startProcess('appointments', {
      ...stack().env,
      APPOINTMENTS_PORT: String(port),
      PATIENTS_URL: `http://127.0.0.1:${await freePort()}`,
    })
    const gw = await extraGateway({ APPOINTMENTS_URL: `http://127.0.0.1:${port}` })
    try {
      await waitHealthy(`http://127.0.0.1:${port}/health/live`)
      const p = await patientOf(a)
      const res = await call('POST', '/appointments', {
        token: a.token,
        base: gw.api,
        body: slot(p, '18:00', '18:30'),
      })
      expect(res.status).toBe(503)
      expect(res.body.code).toBe('upstream_unavailable')
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0)
      const rows = await sql(
        'select count(*)::int as n from appointments.appointments where patient_id = $1',
        [p],
      )
      expect(rows[0].n).toBe(0)
    } finally {
      await gw.stop()
      child.kill('SIGTERM')
      await waitFor(() => child.exitCode !== null || child.signalCode !== null, { what: 'appointments exit' })
    }
  }, 180_000)

  it('documents every route with its schemas, problems and examples in the merged OpenAPI', async () => {
    const doc = await call('GET', '/openapi.json')
    const paths = doc.body.paths
    const ops = {
      listAppointments: paths['/appointments']?.get,
      createAppointment: paths['/appointments']?.post,
      getAppointment: paths['/appointments/{id}']?.get,
      updateAppointment: paths['/appointments/{id}']?.patch,
      checkInAppointment: paths['/appointments/{id}/checkin']?.post,
    }
    for (const [operationId, op] of Object.entries(ops)) {
      expect(op).toMatchObject({ operationId, tags: ['appointments'], summary: expect.any(String) })
      expect(op.responses['404'] ?? op.responses['400']).toBeDefined()
    }
    const book = ops.createAppointment
    expect(Object.keys(book.responses)).toEqual(
      expect.arrayContaining(['201', '400', '403', '409', '422', '503']),
    )
    // Examples: one becomes `example`, several `examples` (Swagger UI shows both).
    expect(book.requestBody.content['application/json'].example).toMatchObject({ practitioner: 'dra-lopez' })
    expect(book.responses['201'].content['application/json'].example).toMatchObject({ status: 'scheduled' })
    expect(Object.keys(ops.updateAppointment.requestBody.content['application/json'].examples)).toHaveLength(
      2,
    )
    expect(book.responses['201'].headers).toHaveProperty('Location')
    expect(ops.updateAppointment.responses['412']).toBeDefined()
    expect(ops.listAppointments.parameters.map((p: any) => p.name)).toEqual(
      expect.arrayContaining([
        'codalmacen',
        'patient_id',
        'status',
        'practitioner',
        'from',
        'to',
        'sort',
        'after',
      ]),
    )
  })
})
