import type { Knex } from 'knex'
import { makeEvent, uuidv7, type Amqp, type CloudEvent, type Principal } from '@clinic/platform'
import {
  appointmentEventData,
  fhirProblems,
  gatewayHeaders,
  testPrincipal,
  walkFhirSearch,
} from '@clinic/platform/testing'
import { domainEvent, httpEvent, patientData } from '../helpers'
import { buildTestApp, connectAmqp, migrateAudit, record, writerDb } from './setup'

jest.setTimeout(60_000)

let knex: Knex
let amqp: Amqp
let app: Awaited<ReturnType<typeof buildTestApp>>

const FHIR_JSON = /^application\/fhir\+json/
type Resource = { id: string; resourceType: string } & Record<string, unknown>
type Bundle = {
  resourceType: string
  total: number
  link: Array<{ relation: string; url: string }>
  entry?: Array<{ resource: Resource }>
}

const alice = testPrincipal({ username: 'alice' })
const company = alice.companyId
const bob = testPrincipal({
  companyId: company,
  username: 'bob',
  userId: '0190c5a0-0000-7000-8000-0000000000b0',
  tokenId: '0190c5a0-0000-7000-8000-0000000000b1',
})
const patientId = '0190c5a0-2222-7000-8000-000000000001'
const appointmentId = '0190c5a0-2222-7000-8000-000000000002'
const messageId = '0190c5a0-2222-7000-8000-000000000003'
const endpointId = '0190c5a0-2222-7000-8000-000000000004'

/** Built in order (their ids ascend with it), recorded in two runs some milliseconds apart. */
const events: CloudEvent[] = [
  domainEvent('patient.created', patientData({ id: patientId }), { principal: alice }), // 0: ALM1
  domainEvent(
    'patient.updated',
    { ...patientData({ id: patientId }), changes: ['email'] },
    { principal: bob },
  ), // 1
  httpEvent(bob, { path: `/api/patients/${patientId}`, resource_id: patientId }, { codalmacen: 'ALM2' }), // 2
  domainEvent(
    'appointment.created',
    appointmentEventData({ id: appointmentId, patient_id: patientId, status: 'scheduled' }),
    { principal: alice, codalmacen: 'ALM2' },
  ), // 3
  domainEvent(
    'comms.message.queued',
    {
      id: messageId,
      patient_id: patientId,
      appointment_id: null,
      channel: 'email',
      recipient_role: 'patient',
      status: 'queued',
    },
    { principal: alice, codalmacen: null },
  ), // 4
  httpEvent(
    bob,
    { method: 'POST', path: '/api/comms/send', status: 500, resource_type: 'message' },
    { codalmacen: 'ALM1' },
  ), // 5
  httpEvent(
    alice,
    {
      path: `/api/fhir/R4/Communication/${messageId}`,
      status: 404,
      resource_type: 'communication',
      resource_id: messageId,
    },
    { codalmacen: 'ALM2' },
  ), // 6
  httpEvent(bob, {
    method: 'DELETE',
    path: `/api/webhooks/endpoints/${endpointId}`,
    status: 204,
    resource_type: 'webhook_endpoint',
    resource_id: endpointId,
  }), // 7
  makeEvent({
    type: 'http.refused',
    source: 'clinic/gateway',
    data: { ip: '203.0.113.7', count: 3, window_start: '2026-03-01T10:00:00Z', paths: ['/api/patients'] },
    companyId: company,
    ctx: { auth: { ...alice, userId: '', username: '', tokenId: '' }, requestId: `req-${uuidv7()}` },
  }), // 8
]
const ids = events.map((e) => e.id.toLowerCase())
/** When the second run (events 4 on) was recorded: its first event's recorded_at. */
let secondRun = ''
const otherCompany = testPrincipal()
let otherCompanysEvent = ''

beforeAll(async () => {
  await migrateAudit()
  knex = writerDb()
  amqp = await connectAmqp()
  app = await buildTestApp(knex, amqp)
  await record(knex, events.slice(0, 4))
  await new Promise((r) => setTimeout(r, 20))
  const second = await record(knex, events.slice(4))
  secondRun = second[0]!.recorded_at
  const [theirs] = await record(knex, [
    domainEvent('patient.created', patientData({ id: patientId }), { principal: otherCompany }),
  ])
  otherCompanysEvent = theirs!.id
})
afterAll(async () => {
  await app.close()
  await amqp.close()
  await knex.destroy()
})

const get = async (principal: Principal, url: string) =>
  app.inject({ method: 'GET', url, headers: await gatewayHeaders(principal, 'GET', url) })
async function search(principal: Principal, query: string): Promise<Bundle> {
  const res = await get(principal, `/fhir/R4/AuditEvent${query ? `?${query}` : ''}`)
  expect(res.statusCode).toBe(200)
  expect(res.headers['content-type']).toMatch(FHIR_JSON)
  const bundle = res.json() as Bundle
  expect(fhirProblems(bundle)).toEqual([])
  return bundle
}
const idsOf = (b: Bundle) => (b.entry ?? []).map((e) => e.resource.id)
const pick = (...n: number[]) => n.map((i) => ids[i]!)
const read = async (principal: Principal, id: string) => {
  const res = await get(principal, `/fhir/R4/AuditEvent/${id}`)
  return { res, body: res.json() as Resource }
}

const allPages = (principal: Principal, query: string) =>
  walkFhirSearch((url) => get(principal, url), `/fhir/R4/AuditEvent?${query}`)

describe('GET /fhir/R4/AuditEvent/{id}', () => {
  it('maps a domain event: lifecycle type, our action, agent, observer, entity', async () => {
    const { res, body } = await read(alice, ids[1]!)
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toMatch(FHIR_JSON)
    expect(res.headers.etag).toBe('W/"1"')
    expect(fhirProblems(body)).toEqual([])
    expect(body).toEqual({
      resourceType: 'AuditEvent',
      id: ids[1],
      meta: { versionId: '1', lastUpdated: expect.any(String) },
      type: {
        system: 'http://terminology.hl7.org/CodeSystem/iso-21089-lifecycle',
        code: 'amend',
        display: 'Amend (Update) Record Lifecycle Event',
      },
      subtype: [{ system: 'https://clinic.example/fhir/CodeSystem/event-type', code: 'patient.updated' }],
      action: 'U',
      period: { start: events[1]!.time, end: events[1]!.time },
      recorded: (body.meta as { lastUpdated: string }).lastUpdated,
      outcome: '0',
      agent: [
        {
          who: {
            type: 'Practitioner',
            identifier: { system: 'https://clinic.example/fhir/sid/user', value: bob.userId },
            display: 'bob',
          },
          name: 'bob',
          altId: bob.tokenId,
          requestor: true,
        },
      ],
      source: { site: 'ALM1', observer: { display: 'clinic/patients' } },
      entity: [
        {
          what: { reference: `Patient/${patientId}` },
          type: { system: 'http://hl7.org/fhir/resource-types', code: 'Patient', display: 'Patient' },
          detail: [
            { type: 'changes', valueString: 'email' },
            { type: 'request_id', valueString: events[1]!.requestid },
          ],
        },
      ],
    })
  })

  it('maps a request: RESTful read, the method, path and status, the address', async () => {
    const { body } = await read(alice, ids[2]!)
    expect(fhirProblems(body)).toEqual([])
    expect(body).toMatchObject({
      type: { system: 'http://terminology.hl7.org/CodeSystem/audit-event-type', code: 'rest' },
      subtype: [
        { system: 'http://hl7.org/fhir/restful-interaction', code: 'read' },
        { code: 'http.request' },
      ],
      action: 'R',
      outcome: '0',
      outcomeDesc: 'HTTP 200',
      agent: [{ network: { address: '203.0.113.9', type: '2' }, requestor: true }],
      source: { site: 'ALM2', observer: { display: 'clinic/gateway' } },
      entity: [
        {
          what: { reference: `Patient/${patientId}` },
          detail: expect.arrayContaining([
            { type: 'http.method', valueString: 'GET' },
            { type: 'http.path', valueString: `/api/patients/${patientId}` },
            { type: 'http.status', valueString: '200' },
          ]),
        },
      ],
    })
  })

  it.each([
    [0, 'originate', 'C', '0', 'Patient'],
    [3, 'originate', 'C', '0', 'Appointment'],
    [4, 'originate', 'C', '0', 'Communication'],
    [5, 'rest', 'C', '8', null],
    [6, 'rest', 'R', '4', 'Communication'],
    [7, 'rest', 'D', '0', null],
    [8, '110114', 'E', '4', null],
  ])(
    'maps event %i: type %s, action %s, outcome %s, entity %s',
    async (i, type, action, outcome, fhirType) => {
      const { res, body } = await read(alice, ids[i]!)
      expect(res.statusCode).toBe(200)
      expect(fhirProblems(body)).toEqual([])
      expect(body).toMatchObject({ type: { code: type }, action, outcome })
      const entity = (
        body.entity as Array<{ what?: { reference?: string; identifier?: unknown } }> | undefined
      )?.[0]
      if (fhirType) expect(entity?.what?.reference).toMatch(new RegExp(`^${fhirType}/`))
      else expect(entity?.what?.reference).toBeUndefined()
    },
  )

  it('names a resource of no FHIR type by its id, and an event without an actor by its source', async () => {
    const { body } = await read(alice, ids[7]!)
    expect((body.entity as unknown[])[0]).toMatchObject({
      what: { identifier: { type: { text: 'webhook_endpoint' }, value: endpointId } },
      type: { system: 'http://terminology.hl7.org/CodeSystem/audit-entity-type', code: '2' },
    })
    const refused = (await read(alice, ids[8]!)).body
    expect(refused.agent).toEqual([
      { who: { display: 'clinic/gateway' }, requestor: true, network: { address: '203.0.113.7', type: '2' } },
    ])
    expect(refused.subtype).toEqual([
      { system: 'http://dicom.nema.org/resources/ontology/DCM', code: '110122', display: 'Login' },
      { system: 'https://clinic.example/fhir/CodeSystem/event-type', code: 'http.refused' },
    ])
  })

  it.each([
    ['an unknown id', () => uuidv7()],
    ['an id that is no UUID', () => 'nope'],
    ["another company's event", () => otherCompanysEvent],
  ])('answers 404 OperationOutcome for %s', async (_what, id) => {
    const { res, body } = await read(alice, id())
    expect(res.statusCode).toBe(404)
    expect(res.headers['content-type']).toMatch(FHIR_JSON)
    expect(body.resourceType).toBe('OperationOutcome')
    expect(fhirProblems(body)).toEqual([])
  })
})

describe('GET /fhir/R4/AuditEvent', () => {
  it('finds the company trail in recording order, with the exact total', async () => {
    const b = await search(alice, '')
    expect(b.total).toBe(ids.length)
    expect(idsOf(b)).toEqual(ids)
    expect(idsOf(await search(alice, '_sort=-_lastUpdated'))).toEqual([...ids].reverse())
  })

  it.each([
    [`entity=Patient/${patientId}`, () => pick(0, 1, 2)],
    [`entity=Communication/${messageId}`, () => pick(4, 6)],
    [`entity=Appointment/${appointmentId},Patient/${patientId}`, () => pick(0, 1, 2, 3)],
    [`entity=Appointment/${appointmentId}&entity=Patient/${patientId}`, () => []],
    [`entity=Basic/${endpointId}`, () => []],
    [`agent=Practitioner/${bob.userId}`, () => pick(1, 2, 5, 7)],
    [`agent=Device/${alice.tokenId}`, () => pick(0, 3, 4, 6)],
    [`agent=Device/${alice.tokenId},Practitioner/${bob.userId}`, () => pick(0, 1, 2, 3, 4, 5, 6, 7)],
    [`agent=Organization/${company}`, () => []],
    [`agent=Practitioner/${bob.userId}&entity=Patient/${patientId}`, () => pick(1, 2)],
    ['date=lt2020', () => []],
    ['date=ge2020-01-01', () => ids],
    [`date=geSECOND`, () => pick(4, 5, 6, 7, 8)],
    [`date=ltSECOND`, () => pick(0, 1, 2, 3)],
    [`date=ge2020&date=ltSECOND`, () => pick(0, 1, 2, 3)],
    [`_lastUpdated=ltSECOND`, () => pick(0, 1, 2, 3)],
    [`_id=${ids[2]},${ids[5]}`, () => pick(2, 5)],
    ['_id=OTHER', () => []],
  ])('searches %s', async (query, expected) => {
    // SECOND and OTHER stand for values the beforeAll sets: put in here, after it ran.
    const b = await search(alice, query.replace('SECOND', secondRun).replace('OTHER', otherCompanysEvent))
    expect(idsOf(b)).toEqual(expected())
    expect(b.total).toBe(expected().length)
  })

  it('pages through next links, each event once', async () => {
    for (const [query, size] of [
      ['_count=2', 2],
      ['_count=4&_sort=-_lastUpdated', 4],
      [`_count=1&entity=Patient/${patientId}`, 1],
    ] as const) {
      const whole = idsOf(await search(alice, query.replace(/_count=\d/, '_count=100')))
      const { ids: paged, pages } = await allPages(alice, query)
      expect(paged).toEqual(whole)
      expect(new Set(paged).size).toBe(paged.length)
      expect(pages).toBe(Math.ceil(whole.length / size))
    }
  })

  it.each(['action=patient.created', 'date:missing=true', 'entity=Patient', 'date=today', '_sort=date'])(
    'refuses %s with 400 OperationOutcome',
    async (query) => {
      const res = await get(alice, `/fhir/R4/AuditEvent?${query}`)
      expect(res.statusCode).toBe(400)
      expect(res.headers['content-type']).toMatch(FHIR_JSON)
      expect(res.json().resourceType).toBe('OperationOutcome')
      expect(fhirProblems(res.json())).toEqual([])
    },
  )

  it('shows nothing of another company', async () => {
    expect(idsOf(await search(otherCompany, `entity=Patient/${patientId}`))).toEqual([otherCompanysEvent])
    expect(idsOf(await search(testPrincipal(), ''))).toEqual([])
  })

  it('shows a center-limited token what the native list shows it, and reads no other', async () => {
    const limited = { ...alice, allowedCenters: ['ALM2'] }
    const native = await get(limited, '/audit/events?limit=100')
    expect(native.statusCode).toBe(200)
    const nativeIds = (native.json().data as Array<{ id: string }>).map((e) => e.id)
    const b = await search(limited, '')
    expect([...idsOf(b)].sort()).toEqual([...nativeIds].sort())
    expect(idsOf(b)).toEqual(pick(2, 3, 6))
    expect((await allPages(limited, '_count=1')).ids).toEqual(pick(2, 3, 6))
    expect(idsOf(await search(limited, `entity=Patient/${patientId}`))).toEqual(pick(2))
    for (const i of [0, 4, 7]) expect((await read(limited, ids[i]!)).res.statusCode).toBe(404)
    expect((await read(limited, ids[3]!)).res.statusCode).toBe(200)
  })
})
