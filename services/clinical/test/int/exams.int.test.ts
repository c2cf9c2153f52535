import { FINDINGS, companyOf, outboxOf, startApp, type Company, type Harness } from '../helpers'

let h: Harness
let c: Company
beforeAll(async () => {
  h = await startApp()
  c = companyOf(h)
})
afterAll(() => h.close())

describe('exams', () => {
  it('opens a draft at the patient’s home center, with Location, ETag and an event', async () => {
    const patient = c.newPatient('ALM2')
    const res = await c.send('POST', '/clinical/exams', { patient_id: patient, practitioner: 'dr-ficticio' })
    expect(res.statusCode).toBe(201)
    const exam = res.json()
    expect(exam).toMatchObject({
      patient_id: patient,
      codalmacen: 'ALM2',
      status: 'draft',
      kind: 'comprehensive',
      amendments: 0,
      version: 1,
      visual_acuity: [],
      iop: [],
      prescriptions: [],
    })
    expect(res.headers.location).toBe(`/clinical/exams/${exam.id}`)
    expect(res.headers.etag).toBe('"1"')
    const events = await outboxOf(h.owner, c.principal.companyId, exam.id)
    expect(events.map((e) => e.type)).toEqual(['clinical.exam.created'])
  })

  it('refuses an unknown patient (another company’s too) and an appointment of another patient', async () => {
    const other = companyOf(h)
    const res = await c.send('POST', '/clinical/exams', { patient_id: other.newPatient(), practitioner: 'x' })
    expect(res.statusCode).toBe(422)
    expect(res.json().code).toBe('unknown_patient')

    const patient = c.newPatient()
    const appointment = h.far.addAppointment(c.principal.companyId, c.newPatient())
    const wrong = await c.send('POST', '/clinical/exams', {
      patient_id: patient,
      practitioner: 'x',
      appointment_id: appointment,
    })
    expect(wrong.statusCode).toBe(422)
    expect(wrong.json().code).toBe('unknown_appointment')

    const own = h.far.addAppointment(c.principal.companyId, patient)
    const ok = await c.send('POST', '/clinical/exams', {
      patient_id: patient,
      practitioner: 'x',
      appointment_id: own,
    })
    expect(ok.statusCode).toBe(201)
    expect(ok.json().appointment_id).toBe(own)
  })

  it('answers 503 when the patients service cannot, and writes nothing', async () => {
    h.far.mode = 'error'
    try {
      const res = await c.send('POST', '/clinical/exams', { patient_id: c.newPatient(), practitioner: 'x' })
      expect(res.statusCode).toBe(503)
      expect(res.json().code).toBe('upstream_unavailable')
    } finally {
      h.far.mode = 'ok'
    }
  })

  it('adds and removes findings while a draft, each kind with what the service computes', async () => {
    const exam = await c.exam()
    const added: Record<string, { id: string }> = {}
    for (const [kind, body] of Object.entries(FINDINGS)) {
      const res = await c.send('POST', `/clinical/exams/${exam.id}/${kind}`, body)
      expect(res.statusCode).toBe(201)
      added[kind] = res.json()
    }
    expect(added['visual-acuity']).toMatchObject({ value: '6/9', logmar: 0.18, distance_m: 6, state: 'live' })
    // Plus cylinder transposed: -2.25 +0.75 x 30 is -1.50 -0.75 x 120.
    expect(added.refraction).toMatchObject({ sphere: -1.5, cylinder: -0.75, axis: 120 })
    expect(added.iop).toMatchObject({
      mmhg: 17.5,
      method: 'goldmann',
      measured_at: '2026-11-20T09:15:00.000Z',
    })
    expect(added.diagnoses).toMatchObject({ code: 'H40.11', eye: 'both', status: 'active' })

    const del = await c.send('DELETE', `/clinical/exams/${exam.id}/iop/${added.iop!.id}`)
    expect(del.statusCode).toBe(204)
    const again = await c.send('DELETE', `/clinical/exams/${exam.id}/iop/${added.iop!.id}`)
    expect(again.statusCode).toBe(404)

    const read = await c.send('GET', `/clinical/exams/${exam.id}`)
    expect(read.statusCode).toBe(200)
    const body = read.json()
    expect(body.iop).toEqual([])
    expect(body.visual_acuity).toHaveLength(1)
    expect(body.version).toBe(6)
    expect(read.headers.etag).toBe('"6"')
  })

  it('adds a finding once per Idempotency-Key: a retry answers the first, another body is a conflict', async () => {
    const exam = await c.exam()
    const url = `/clinical/exams/${exam.id}/iop`
    const key = { 'idempotency-key': `iop-${exam.id}` }
    const first = await c.send('POST', url, FINDINGS.iop, key)
    expect(first.statusCode).toBe(201)
    const retry = await c.send('POST', url, FINDINGS.iop, key)
    expect([retry.statusCode, retry.json().id]).toEqual([201, first.json().id])
    expect(retry.headers.location).toBe(first.headers.location)
    const other = await c.send('POST', url, { ...FINDINGS.iop, mmhg: 21 }, key)
    expect([other.statusCode, other.json().code]).toEqual([409, 'idempotency_conflict'])
    const now = (await c.send('GET', `/clinical/exams/${exam.id}`)).json()
    expect(now.iop.map((f: { id: string }) => f.id)).toEqual([first.json().id])
    expect(now.version).toBe(2)
  })

  it('refuses values that do not read, naming them', async () => {
    const exam = await c.exam()
    const bad = await c.send('POST', `/clinical/exams/${exam.id}/visual-acuity`, {
      eye: 'left',
      kind: 'uncorrected',
      value: '6/x',
      notation: 'snellen_m',
    })
    expect(bad.statusCode).toBe(400)
    expect(bad.json().errors).toEqual([{ path: '/value', message: expect.stringContaining('Snellen') }])
    const axis = await c.send('POST', `/clinical/exams/${exam.id}/refraction`, {
      eye: 'left',
      kind: 'manifest',
      sphere: -1.1,
      cylinder: -0.5,
    })
    expect(axis.statusCode).toBe(400)
    expect(
      axis
        .json()
        .errors.map((e: { path: string }) => e.path)
        .sort(),
    ).toEqual(['/axis', '/sphere'])
    const code = await c.send('POST', `/clinical/exams/${exam.id}/diagnoses`, {
      code: 'h40',
      system: 'icd10',
    })
    expect(code.statusCode).toBe(400)
    expect(code.json().errors).toEqual([{ path: '/code', message: expect.stringContaining('ICD-10') }])
  })

  it('PATCHes a draft with If-Match, and lists with filters and an exact total', async () => {
    const exam = await c.exam({ kind: 'follow_up' })
    const stale = await c.send('PATCH', `/clinical/exams/${exam.id}`, { notes: 'x' }, { 'if-match': '"9"' })
    expect(stale.statusCode).toBe(412)
    const ok = await c.send(
      'PATCH',
      `/clinical/exams/${exam.id}`,
      { chief_complaint: 'vision borrosa' },
      { 'if-match': '"1"' },
    )
    expect(ok.statusCode).toBe(200)
    expect(ok.json()).toMatchObject({ chief_complaint: 'vision borrosa', version: 2 })
    const ro = await c.send('PATCH', `/clinical/exams/${exam.id}`, { status: 'signed' })
    expect(ro.statusCode).toBe(400)

    const list = await c.send('GET', `/clinical/exams?patient_id=${exam.patient_id}`)
    expect(list.statusCode).toBe(200)
    expect(list.json().meta).toMatchObject({ total: 1 })
    expect(list.json().data[0].id).toBe(exam.id)
  })

  it('shows a center-limited token only its centers’ exams', async () => {
    const exam = await c.exam({ codalmacen: 'ALM2' })
    const limited = companyOf(h, { companyId: c.principal.companyId, allowedCenters: ['ALM1'] })
    expect((await limited.send('GET', `/clinical/exams/${exam.id}`)).statusCode).toBe(404)
    const list = await limited.send('GET', '/clinical/exams?limit=100')
    expect(list.json().data.every((e: { codalmacen: string }) => e.codalmacen === 'ALM1')).toBe(true)
    expect((await limited.send('GET', '/clinical/exams?codalmacen=ALM2')).statusCode).toBe(403)
  })

  it('is 400 naming /codalmacen for a patient without a home center when no center is named', async () => {
    const homeless = c.newPatient(null)
    const res = await c.send('POST', '/clinical/exams', { patient_id: homeless, practitioner: 'x' })
    expect([res.statusCode, res.json().code]).toEqual([400, 'validation_failed'])
    expect(res.json().errors).toEqual([
      { path: '/codalmacen', message: expect.stringContaining('home center') },
    ])
    const query = await c.send('POST', '/clinical/exams?codalmacen=ALM2', {
      patient_id: homeless,
      practitioner: 'x',
    })
    expect([query.statusCode, query.json().codalmacen]).toEqual([201, 'ALM2'])
  })

  it('opens one exam per Idempotency-Key: a retry answers the first, another body is a conflict', async () => {
    const patient = c.newPatient()
    const key = { 'idempotency-key': `exam-${patient}` }
    const body = { patient_id: patient, practitioner: 'dr-ficticio' }
    const first = await c.send('POST', '/clinical/exams', body, key)
    const retry = await c.send('POST', '/clinical/exams', body, key)
    expect([first.statusCode, retry.statusCode]).toEqual([201, 201])
    expect(retry.json()).toEqual(first.json())
    expect(retry.headers.location).toBe(first.headers.location)
    const other = await c.send('POST', '/clinical/exams', { ...body, notes: 'otra' }, key)
    expect([other.statusCode, other.json().code]).toEqual([409, 'idempotency_conflict'])
    const list = await c.send('GET', `/clinical/exams?patient_id=${patient}`)
    expect(list.json().meta.total).toBe(1)
    expect((await outboxOf(h.owner, c.principal.companyId, first.json().id)).map((e) => e.type)).toEqual([
      'clinical.exam.created',
    ])
  })

  it('keeps the version, the ETag and the outbox for a PATCH that changes nothing', async () => {
    const exam = await c.exam({ notes: 'igual' })
    const res = await c.send('PATCH', `/clinical/exams/${exam.id}`, { notes: 'igual' }, { 'if-match': '"1"' })
    expect([res.statusCode, res.json().version, res.headers.etag]).toEqual([200, 1, '"1"'])
    expect((await outboxOf(h.owner, c.principal.companyId, exam.id)).map((e) => e.type)).toEqual([
      'clinical.exam.created',
    ])
  })
})
