import { uuidv7, type Principal } from '@clinic/platform'
import { fhirProblems, testPrincipal, walkFhirSearch } from '@clinic/platform/testing'
import { makeContact } from '../fixtures'
import { clientFor, startComms, type Harness } from '../helpers'

let h: Harness
beforeAll(async () => {
  h = await startComms()
})
afterAll(() => h.close())

const FHIR_JSON = /^application\/fhir\+json/
type Bundle = {
  resourceType: string
  total: number
  link: Array<{ relation: string; url: string }>
  entry?: Array<{ resource: { id: string; resourceType: string } & Record<string, unknown> }>
}

const alice = testPrincipal()
const company = alice.companyId
const other = testPrincipal()
const p1 = '0190c5a0-0000-7000-8000-00000000f001'
const p2 = '0190c5a0-0000-7000-8000-00000000f002'
const appointment = '0190c5a0-0000-7000-8000-00000000fa01'

/** A message row as the service stores it, written as the owner (fields not given at their defaults). */
interface Seed {
  id: string
  patient_id: string
  codalmacen: string | null
  channel: 'email' | 'sms'
  status: string
  recipient_role?: 'patient' | 'guardian'
  sent_at?: string
  updated_at: string
  last_error?: string
  appointment_id?: string
  template?: string
  subject?: string
  version?: number
}
const ids = Array.from({ length: 7 }, () => uuidv7())
const [mDelivered, mGuardian, mQueued, mUnknown, mSuppressed, mUndelivered, mFailed] = ids as [
  string,
  string,
  string,
  string,
  string,
  string,
  string,
]
const seeds: Seed[] = [
  {
    id: mDelivered,
    patient_id: p1,
    codalmacen: 'ALM1',
    channel: 'email',
    status: 'delivered',
    sent_at: '2026-03-01T10:00:00.000Z',
    updated_at: '2026-03-01T10:05:00.000Z',
    appointment_id: appointment,
    template: 'appointment_reminder',
    subject: 'Recordatorio de cita',
    version: 3,
  },
  {
    id: mGuardian,
    patient_id: p1,
    codalmacen: 'ALM2',
    channel: 'sms',
    status: 'sent',
    recipient_role: 'guardian',
    sent_at: '2026-03-02T10:00:00.000Z',
    updated_at: '2026-03-02T10:00:00.000Z',
  },
  {
    id: mQueued,
    patient_id: p2,
    codalmacen: 'ALM1',
    channel: 'email',
    status: 'sending',
    updated_at: '2026-03-02T11:00:00.000Z',
  },
  {
    id: mUnknown,
    patient_id: p2,
    codalmacen: 'ALM2',
    channel: 'sms',
    status: 'failed',
    last_error: 'outcome unknown: left sending for 10 minutes',
    updated_at: '2026-03-02T12:00:00.000Z',
  },
  {
    id: mSuppressed,
    patient_id: p1,
    codalmacen: null,
    channel: 'email',
    status: 'suppressed',
    updated_at: '2026-03-02T13:00:00.000Z',
  },
  {
    id: mUndelivered,
    patient_id: p2,
    codalmacen: 'ALM1',
    channel: 'sms',
    status: 'undelivered',
    last_error: 'twilio error 30003',
    sent_at: '2026-03-03T09:00:00.000Z',
    updated_at: '2026-03-03T09:30:00.000Z',
  },
  {
    id: mFailed,
    patient_id: p2,
    codalmacen: 'ALM2',
    channel: 'email',
    status: 'failed',
    last_error: 'smtp 550 mailbox unavailable',
    updated_at: '2026-03-04T08:00:00.000Z',
  },
]
const otherCompanysMessage = uuidv7()

async function seed(companyId: number, s: Seed) {
  await h.owner('messages').insert({
    idempresa: companyId,
    recipient_role: 'patient',
    recipient_name: s.recipient_role === 'guardian' ? 'Tutora Ficticia' : 'Testa Ficticia',
    recipient_address: s.channel === 'email' ? 'ficticia@example.test' : '+34600000001',
    body: 'Texto que la API no muestra',
    version: 1,
    ...s,
  })
}

beforeAll(async () => {
  for (const s of seeds) await seed(company, s)
  await seed(other.companyId, { ...seeds[0]!, id: otherCompanysMessage })
})

const get = (principal: Principal, url: string) => clientFor(h.app, principal).get(url)
async function search(principal: Principal, query: string): Promise<Bundle> {
  const res = await get(principal, `/fhir/R4/Communication${query ? `?${query}` : ''}`)
  expect(res.statusCode).toBe(200)
  expect(res.headers['content-type']).toMatch(FHIR_JSON)
  const bundle = res.json() as Bundle
  expect(fhirProblems(bundle)).toEqual([])
  return bundle
}
const idsOf = (b: Bundle) => (b.entry ?? []).map((e) => e.resource.id)
const sorted = (a: string[]) => [...a].sort()

/** Every page of a search, following `next` links: the ids in the order served. */
const allPages = (principal: Principal, query: string) =>
  walkFhirSearch((url) => get(principal, url), `/fhir/R4/Communication?${query}`)

describe('GET /fhir/R4/Communication/{id}', () => {
  it('maps a delivered reminder: status, medium, subject, recipient, about, sent, meta; no body, no address', async () => {
    const res = await get(alice, `/fhir/R4/Communication/${mDelivered}`)
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(FHIR_JSON)
    expect(res.headers.etag).toBe('W/"3"')
    const c = res.json()
    expect(fhirProblems(c)).toEqual([])
    expect(c).toEqual({
      resourceType: 'Communication',
      id: mDelivered,
      meta: { versionId: '3', lastUpdated: '2026-03-01T10:05:00.000Z' },
      status: 'completed',
      category: [
        {
          coding: [
            {
              system: 'http://terminology.hl7.org/CodeSystem/communication-category',
              code: 'reminder',
              display: 'Reminder',
            },
          ],
        },
      ],
      medium: [
        {
          coding: [
            {
              system: 'http://terminology.hl7.org/CodeSystem/v3-ParticipationMode',
              code: 'EMAILWRIT',
              display: 'email',
            },
          ],
        },
      ],
      subject: { reference: `Patient/${p1}` },
      topic: { text: 'Recordatorio de cita' },
      about: [{ reference: `Appointment/${appointment}` }],
      sent: '2026-03-01T10:00:00.000Z',
      recipient: [{ reference: `Patient/${p1}`, display: 'Testa Ficticia' }],
      sender: { reference: `Organization/${company}` },
    })
    expect(res.body).not.toContain('Texto que la API no muestra')
    expect(res.body).not.toContain('ficticia@example.test')
  })

  it.each([
    [mGuardian, 'completed', undefined],
    [mQueued, 'in-progress', undefined],
    [mUnknown, 'unknown', 'outcome unknown: left sending for 10 minutes'],
    [mSuppressed, 'not-done', 'suppressed: the recipient address opted out'],
    [mUndelivered, 'stopped', 'twilio error 30003'],
    [mFailed, 'not-done', 'smtp 550 mailbox unavailable'],
  ])('maps message %s to status %s', async (id, status, reason) => {
    const res = await get(alice, `/fhir/R4/Communication/${id}`)
    expect(res.statusCode).toBe(200)
    const c = res.json()
    expect(fhirProblems(c)).toEqual([])
    expect(c.status).toBe(status)
    expect(c.statusReason).toEqual(reason === undefined ? undefined : { text: reason })
    expect(c.meta.versionId).toBe('1')
  })

  it('names a guardian by name only, and an SMS by SMSWRIT', async () => {
    const c = (await get(alice, `/fhir/R4/Communication/${mGuardian}`)).json()
    expect(c.recipient).toEqual([{ type: 'RelatedPerson', display: 'Tutora Ficticia' }])
    expect(c.subject).toEqual({ reference: `Patient/${p1}` })
    expect(c.medium[0].coding[0]).toEqual({
      system: 'http://terminology.hl7.org/CodeSystem/v3-ParticipationMode',
      code: 'SMSWRIT',
      display: 'SMS message',
    })
    expect(c.sent).toBe('2026-03-02T10:00:00.000Z')
  })

  it('maps a message queued through POST /comms/send', async () => {
    // A company of its own: the searches below count the seeded rows of alice's.
    const carol = testPrincipal()
    const contact = makeContact()
    h.directory.addPatient(carol.companyId, contact)
    const sent = await clientFor(h.app, carol).post('/comms/send', {
      patient_id: contact.id,
      subject: 'Hola',
      body: 'Cuerpo',
    })
    expect(sent.statusCode).toBe(202)
    const c = (await get(carol, `/fhir/R4/Communication/${sent.json().id}`)).json()
    expect(fhirProblems(c)).toEqual([])
    expect(c).toMatchObject({
      status: 'in-progress',
      subject: { reference: `Patient/${contact.id}` },
      recipient: [{ reference: `Patient/${contact.id}` }],
      meta: { versionId: '1', lastUpdated: expect.stringMatching(/Z$/) },
    })
    expect(c.sent).toBeUndefined()
  })

  it.each([
    ['an unknown id', () => uuidv7()],
    ['an id that is no UUID', () => 'not-a-uuid'],
    ["another company's message", () => otherCompanysMessage],
  ])('answers 404 OperationOutcome for %s', async (_what, id) => {
    const res = await get(alice, `/fhir/R4/Communication/${id()}`)
    expect(res.statusCode).toBe(404)
    expect(res.headers['content-type']).toMatch(FHIR_JSON)
    const outcome = res.json()
    expect(outcome.resourceType).toBe('OperationOutcome')
    expect(fhirProblems(outcome)).toEqual([])
  })
})

describe('GET /fhir/R4/Communication', () => {
  it("finds the company's messages, oldest update first, with the exact total", async () => {
    const b = await search(alice, '')
    expect(b.resourceType).toBe('Bundle')
    expect(b.total).toBe(7)
    expect(idsOf(b)).toEqual(ids)
    expect(b.link).toEqual([{ relation: 'self', url: '/fhir/R4/Communication' }])
  })

  it('sorts by -_lastUpdated', async () => {
    expect(idsOf(await search(alice, '_sort=-_lastUpdated'))).toEqual([...ids].reverse())
  })

  it.each([
    [`patient=Patient/${p1}`, [mDelivered, mGuardian, mSuppressed]],
    [`patient=${p2}`, [mQueued, mUnknown, mUndelivered, mFailed]],
    [`patient=${p1},Patient/${p2}`, ids],
    [`patient=${p1}&patient=${p2}`, []],
    ['patient=Patient/not-a-uuid', []],
    ['sent=2026-03-02', [mGuardian]],
    ['sent=ge2026-03-02', [mGuardian, mUndelivered]],
    ['sent=lt2026-03-02', [mDelivered]],
    ['sent=gt2026-03-01&sent=le2026-03-03T09:00:00Z', [mGuardian, mUndelivered]],
    ['sent=2026-03-01T10:00:00.000Z', [mDelivered]],
    [`patient=${p1}&sent=2026-03`, [mDelivered, mGuardian]],
    [`_id=${mQueued},${mFailed}`, [mQueued, mFailed]],
    [`_id=${otherCompanysMessage}`, []],
    ['_lastUpdated=2026-03-02', [mGuardian, mQueued, mUnknown, mSuppressed]],
    ['_lastUpdated=ge2026-03-03', [mUndelivered, mFailed]],
    ['_lastUpdated=lt2026-03-02T11:00:00Z', [mDelivered, mGuardian]],
  ])('searches %s', async (query, expected) => {
    const b = await search(alice, query)
    expect(idsOf(b)).toEqual(expected)
    expect(b.total).toBe(expected.length)
  })

  it('pages through next links, each message once', async () => {
    for (const query of ['_count=2', '_count=2&_sort=-_lastUpdated', `_count=1&patient=${p2}`]) {
      const whole = idsOf(await search(alice, query.replace(/_count=\d/, '_count=100')))
      const { ids: paged, pages } = await allPages(alice, query)
      expect(paged).toEqual(whole)
      expect(new Set(paged).size).toBe(paged.length)
      expect(pages).toBe(Math.ceil(whole.length / Number(/_count=(\d)/.exec(query)![1])))
    }
    const first = await search(alice, '_count=3')
    expect(first.total).toBe(7)
    expect(first.link.find((l) => l.relation === 'next')?.url).toMatch(
      /^\/fhir\/R4\/Communication\?_count=3&_cursor=/,
    )
  })

  it('answers _count=0 with the total only', async () => {
    const b = await search(alice, '_count=0')
    expect(b.total).toBe(7)
    expect(b.entry ?? []).toEqual([])
  })

  it.each([
    'status=completed',
    'patient:missing=true',
    'sent=yesterday',
    'patient=Practitioner/x',
    '_count=abc',
  ])('refuses %s with 400 OperationOutcome', async (query) => {
    const res = await get(alice, `/fhir/R4/Communication?${query}`)
    expect(res.statusCode).toBe(400)
    expect(res.headers['content-type']).toMatch(FHIR_JSON)
    const outcome = res.json()
    expect(outcome.resourceType).toBe('OperationOutcome')
    expect(fhirProblems(outcome)).toEqual([])
  })

  it('refuses a cursor that is not one of ours', async () => {
    const res = await get(alice, '/fhir/R4/Communication?_cursor=bm9wZQ')
    expect(res.statusCode).toBe(400)
    expect(res.json().resourceType).toBe('OperationOutcome')
  })

  it('shows nothing of another company', async () => {
    const b = await search(other, `patient=${p1}`)
    expect(idsOf(b)).toEqual([otherCompanysMessage])
    expect(idsOf(await search(testPrincipal(), ''))).toEqual([])
  })

  it('shows a center-limited token what the native list shows it, and reads no other', async () => {
    const limited = { ...alice, allowedCenters: ['ALM2'] }
    const native = await get(limited, '/comms/messages?limit=100')
    expect(native.statusCode).toBe(200)
    const nativeIds = (native.json().data as Array<{ id: string }>).map((m) => m.id)
    const b = await search(limited, '')
    expect(sorted(idsOf(b))).toEqual(sorted(nativeIds))
    expect(idsOf(b)).toEqual([mGuardian, mUnknown, mFailed])
    expect(b.total).toBe(3)
    expect(idsOf(await search(limited, `patient=${p2}&_count=1&_sort=-_lastUpdated`))).toEqual([mFailed])
    expect((await allPages(limited, '_count=1')).ids).toEqual([mGuardian, mUnknown, mFailed])
    for (const id of [mDelivered, mSuppressed])
      expect((await get(limited, `/fhir/R4/Communication/${id}`)).statusCode).toBe(404)
    expect((await get(limited, `/fhir/R4/Communication/${mGuardian}`)).statusCode).toBe(200)
  })
})
