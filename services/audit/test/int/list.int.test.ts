import { generateKeyPairSync } from 'node:crypto'
import type { Knex } from 'knex'
import type { Amqp, Principal } from '@clinic/platform'
import { appointmentEventData, gatewayHeaders, testPrincipal } from '@clinic/platform/testing'
import { domainEvent, httpEvent, patientData } from '../helpers'
import { buildTestApp, connectAmqp, migrateAudit, record, writerDb } from './setup'

// A loaded machine (2 cores, parallel projects) can take seconds to deliver; waitFor bounds each wait.
jest.setTimeout(60_000)

let knex: Knex
let amqp: Amqp
let app: Awaited<ReturnType<typeof buildTestApp>>

beforeAll(async () => {
  await migrateAudit()
  knex = writerDb()
  amqp = await connectAmqp()
  app = await buildTestApp(knex, amqp)
})
afterAll(async () => {
  await app.close()
  await amqp.close()
  await knex.destroy()
})

const get = async (principal: Principal, url: string) =>
  app.inject({ method: 'GET', url, headers: await gatewayHeaders(principal, 'GET', url) })

describe('GET /audit/events', () => {
  const alice = testPrincipal({ username: 'alice' })
  const company = alice.companyId
  const bob = testPrincipal({ companyId: company, username: 'bob' })
  const patientId = '0190c5a0-1111-7000-8000-000000000001'
  const early = new Date('2020-01-10T08:00:00Z')

  beforeAll(async () => {
    await record(knex, [
      domainEvent('patient.created', patientData({ id: patientId }), { principal: alice, time: early }), // seq 1
      domainEvent(
        'patient.updated',
        { ...patientData({ id: patientId }), changes: ['email'] },
        { principal: bob },
      ), // 2
      httpEvent(bob, { status: 404, resource_id: patientId }, { codalmacen: 'ALM2' }), // 3
      domainEvent(
        'appointment.created',
        appointmentEventData({ id: 'a-1', patient_id: patientId, status: 'scheduled' }),
        { principal: alice, codalmacen: 'ALM2' },
      ), // 4
      domainEvent(
        'comms.message.queued',
        {
          id: 'm-1',
          patient_id: patientId,
          appointment_id: null,
          channel: 'email',
          recipient_role: 'patient',
          status: 'queued',
        },
        { principal: alice, codalmacen: null },
      ), // 5
    ])
  })

  const seqs = (res: { json: () => { data: Array<{ seq: number }> } }) => res.json().data.map((e) => e.seq)

  it('lists newest first with an exact total', async () => {
    const res = await get(alice, '/audit/events')
    expect(res.statusCode).toBe(200)
    expect(res.headers['x-service-version']).toBe('261122.01')
    expect(seqs(res)).toEqual([5, 4, 3, 2, 1])
    expect(res.json().meta).toEqual({ total: 5, offset: 0, limit: 25, next: null })
  })

  it.each([
    ['action=patient.updated', [2]],
    ['resource_type=patient', [3, 2, 1]],
    [`resource_type=patient&resource_id=${patientId}`, [3, 2, 1]],
    ['resource_id=a-1', [4]],
    ['resource_type=message', [5]],
    ['username=bob', [3, 2]],
    ['outcome=failure', [3]],
    ['outcome=success&username=alice', [5, 4, 1]],
    ['to=2020-02-01T00:00:00Z', [1]],
    ['from=2020-02-01T00:00:00Z', [5, 4, 3, 2]],
    ['from=2020-01-10T08:00:00Z&to=2020-01-10T08:00:01Z', [1]],
    ['codalmacen=ALM2', [4, 3]],
    ['codalmacen=ALM1&action=patient.created', [1]],
  ])('filters by %s', async (query, expected) => {
    const res = await get(alice, `/audit/events?${query}`)
    expect(res.statusCode).toBe(200)
    expect(seqs(res)).toEqual(expected)
    expect(res.json().meta.total).toBe(expected.length)
  })

  it('shows a center-limited token only its centers', async () => {
    const limited = { ...alice, allowedCenters: ['ALM2'] }
    const res = await get(limited, '/audit/events')
    expect(seqs(res)).toEqual([4, 3])
    expect(res.json().meta.total).toBe(2)
    const denied = await get(limited, '/audit/events?codalmacen=ALM1')
    expect(denied.statusCode).toBe(403)
    expect(denied.json().code).toBe('center_forbidden')
    const unknown = await get(alice, '/audit/events?codalmacen=NOPE')
    expect(unknown.statusCode).toBe(400)
    expect(unknown.json().code).toBe('unknown_center')
  })

  it('pages by offset and by cursor', async () => {
    const first = await get(alice, '/audit/events?limit=2')
    expect(seqs(first)).toEqual([5, 4])
    expect(first.json().meta).toMatchObject({ total: 5, offset: 0, limit: 2 })
    expect(seqs(await get(alice, '/audit/events?limit=2&offset=2'))).toEqual([3, 2])
    const next = first.json().meta.next as string
    const second = await get(alice, `/audit/events?limit=2&after=${next}`)
    expect(seqs(second)).toEqual([3, 2])
    const third = await get(alice, `/audit/events?limit=2&after=${second.json().meta.next}`)
    expect(seqs(third)).toEqual([1])
    expect(third.json().meta.next).toBeNull()
  })

  it('refuses offset together with after (DESIGN.md: one way of paging at a time)', async () => {
    const next = (await get(alice, '/audit/events?limit=2')).json().meta.next as string
    const res = await get(alice, `/audit/events?limit=2&offset=2&after=${next}`)
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: '/offset', message: 'cannot be combined with after' }],
    })
    // offset=0 is the default: with after it is no conflict.
    expect(seqs(await get(alice, `/audit/events?limit=2&offset=0&after=${next}`))).toEqual([3, 2])
  })

  it('shows nothing of another company', async () => {
    const res = await get(testPrincipal(), `/audit/events?resource_id=${patientId}`)
    expect(res.json()).toEqual({ data: [], meta: { total: 0, offset: 0, limit: 25, next: null } })
  })

  it.each([
    ['outcome=maybe', '/outcome'],
    ['from=yesterday', '/from'],
    ['limit=101', '/limit'],
    ['offset=10001', '/offset'],
    ['idempresa=1', '/idempresa'],
    ['after=bm9wZQ', '/after'],
    ['from=2026-02-01T00:00:00Z&to=2026-01-01T00:00:00Z', '/to'],
  ])('refuses %s with 400 validation_failed', async (query, path) => {
    const res = await get(alice, `/audit/events?${query}`)
    expect(res.statusCode).toBe(400)
    expect(res.headers['content-type']).toContain('application/problem+json')
    expect(res.json().code).toBe('validation_failed')
    expect(res.json().errors.map((e: { path: string }) => e.path)).toContain(path)
  })

  it('answers 401 without a gateway assertion', async () => {
    const res = await app.inject({ method: 'GET', url: '/audit/events' })
    expect(res.statusCode).toBe(401)
    expect(res.json().code).toBe('unauthenticated')
    expect(res.headers['www-authenticate']).toBe('Basic realm="clinic"')
    const forged = await app.inject({
      method: 'GET',
      url: '/audit/events',
      headers: await gatewayHeaders(alice, 'GET', '/audit/events', {
        issuer: 'gateway',
        key: generateKeyPairSync('ed25519').privateKey,
      }),
    })
    expect(forged.statusCode).toBe(401)
  })

  it('documents the route in OpenAPI', async () => {
    const doc = (await app.inject({ method: 'GET', url: '/openapi.json' })).json()
    const op = doc.paths['/audit/events'].get
    expect(op).toMatchObject({
      operationId: 'listAuditEvents',
      tags: ['audit'],
      summary: 'List audit events',
    })
  })
})
