import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import {
  AppError,
  CALLS,
  NotFound,
  UpstreamUnavailable,
  callService,
  callersOf,
  createLogger,
  everyInternalEndpoint,
  fastifyOptions,
  http,
  internalApi,
  internalClients,
  serveInternal,
  serviceList,
  type Ctx,
  type InternalEndpoint,
  type ServicesOf,
} from '@clinic/platform'
import { testAssertionKeys, testPrincipal, testServices, testSigner } from '@clinic/platform/testing'

const log = createLogger({ service: 'test', level: 'silent' })
const ctx: Ctx = {
  auth: testPrincipal({ companyId: 42, allowedCenters: ['ALM1'] }),
  log,
  requestId: 'req-api-1',
}
const PATIENT = '0190a000-0000-7000-8000-00000000000a'
const APPOINTMENT = '0190a000-0000-7000-8000-00000000000b'
const contact = {
  id: PATIENT,
  codalmacen: 'ALM1',
  first_name: 'Ana',
  last_name: 'Test',
  email: null,
  phone: null,
  preferred_channel: null,
  language: 'es',
  requires_legal_guardian: false,
  guardian: null,
  version: 1,
}
const summary = {
  id: APPOINTMENT,
  patient_id: PATIENT,
  codalmacen: 'ALM1',
  practitioner: 'dra-lopez',
  starts_at: '2026-11-23T08:30:00.000Z',
  ends_at: '2026-11-23T09:00:00.000Z',
  time_zone: 'Europe/Madrid',
  status: 'confirmed',
  version: 2,
}

/** A callee as a service builds it: the platform plugin, its routes registered from the declarations. */
async function callee(service: 'patients' | 'appointments', callers: string[]) {
  const app = Fastify(fastifyOptions(log))
  await app.register(http, { service, version: '261122.01', assertionKeys: testAssertionKeys(callers) })
  const seen: Array<{ company: number; centers: unknown; requestId: string }> = []
  const saw = (c: Ctx) =>
    seen.push({ company: c.auth.companyId, centers: c.auth.allowedCenters, requestId: c.requestId })
  if (service === 'patients')
    serveInternal(app, internalApi.patients.lookUp, async (req) => {
      saw(req.ctx)
      if (req.params.id !== PATIENT) throw new NotFound()
      return contact
    })
  else {
    serveInternal(app, internalApi.appointments.lookUp, async () => summary)
    serveInternal(app, internalApi.appointments.respond, async (req) => {
      saw(req.ctx)
      if (req.params.id !== APPOINTMENT) throw new NotFound()
      if (req.body.action === 'confirm')
        throw new AppError({
          status: 409,
          code: 'invalid_transition',
          title: 'No',
          detail: 'already confirmed',
        })
      return { ...summary, status: 'cancelled' }
    })
  }
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, seen, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` }
}

describe('the internal API: endpoints declared once, served and called from the declaration', () => {
  let patients: Awaited<ReturnType<typeof callee>>
  let appointments: Awaited<ReturnType<typeof callee>>
  const clientsOf = <C extends 'comms' | 'clinical'>(caller: C, timeoutMs = 2000) =>
    internalClients(caller, {
      signer: testSigner(caller),
      timeoutMs,
      baseUrl: (s) => (s === 'patients' ? patients.url : appointments.url),
    })
  beforeAll(async () => {
    patients = await callee('patients', ['comms', 'clinical'])
    appointments = await callee('appointments', ['comms', 'clinical'])
  })
  afterAll(async () => {
    await patients.app.close()
    await appointments.app.close()
  })

  it("looks a record up on the caller's behalf: the record, null for 404; the callee sees the caller's company, centers and request", async () => {
    const comms = clientsOf('comms')
    expect(await comms.patients.lookUp(ctx, PATIENT)).toEqual(contact)
    expect(await comms.patients.lookUp(ctx, APPOINTMENT)).toBeNull()
    expect(patients.seen.at(-1)).toEqual({ company: 42, centers: ['ALM1'], requestId: 'req-api-1' })
  })

  it('answers a command with its outcomes: done with the answer, or the meaning of its 404 and 409 with the problem', async () => {
    const { appointments: api } = clientsOf('comms')
    expect(await api.respond(ctx, APPOINTMENT, { action: 'cancel' })).toEqual({
      outcome: 'done',
      answer: { ...summary, status: 'cancelled' },
    })
    expect(await api.respond(ctx, APPOINTMENT, { action: 'confirm' })).toEqual({
      outcome: 'invalid_transition',
      refusal: { status: 409, code: 'invalid_transition', title: 'No', detail: 'already confirmed' },
    })
    expect(await api.respond(ctx, PATIENT, { action: 'cancel' })).toEqual({
      outcome: 'not_found',
      refusal: { status: 404, code: 'not_found', title: 'Not found', detail: 'The resource does not exist' },
    })
  })

  it('gives a caller only the endpoints that name it, and the callee refuses the others (401: 503 at the caller)', async () => {
    const clinical: ServicesOf<'clinical'> = clientsOf('clinical')
    expect(Object.keys(clinical.appointments)).toEqual(['lookUp'])
    // @ts-expect-error respond names comms alone: clinical's client has no such method.
    expect(clinical.appointments.respond).toBeUndefined()
    const asClinical = await callService(ctx, testSigner('clinical'), {
      service: 'appointments',
      baseUrl: appointments.url,
      method: 'POST',
      path: `/internal/appointments/${APPOINTMENT}/respond`,
      body: { action: 'cancel' },
    })
    expect(asClinical.status).toBe(401)
    // The gateway's own assertion is refused on internal routes.
    const asGateway = await callService(ctx, testSigner(), {
      service: 'patients',
      baseUrl: patients.url,
      method: 'GET',
      path: `/internal/patients/${PATIENT}`,
    })
    expect(asGateway.status).toBe(401)
  })

  it("validates what the callee takes from its declaration: a body off its schema is the caller's 400", async () => {
    const answer = await callService(ctx, testSigner('comms'), {
      service: 'appointments',
      baseUrl: appointments.url,
      method: 'POST',
      path: `/internal/appointments/${APPOINTMENT}/respond`,
      body: { action: 'reschedule' },
    })
    expect(answer.status).toBe(400)
    // Which a typed client cannot send: the type is the declaration's.
    const { appointments: api } = clientsOf('comms')
    // @ts-expect-error not an action of the declaration
    await expect(api.respond(ctx, APPOINTMENT, { action: 'reschedule' })).rejects.toBeInstanceOf(
      UpstreamUnavailable,
    )
  })

  it('is 503 upstream_unavailable for a callee off its declaration: off-schema, an undeclared status, down or slow', async () => {
    const odd = Fastify(fastifyOptions(log))
    odd.get('/internal/patients/:id', async (req, reply) =>
      (req.params as { id: string }).id === PATIENT ? { id: 7 } : reply.code(409).send({ code: 'x' }),
    )
    odd.post('/internal/appointments/:id/respond', async (_req, reply) => reply.code(422).send({ code: 'x' }))
    await odd.listen({ port: 0, host: '127.0.0.1' })
    const slow = createServer(() => undefined)
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r))
    try {
      const at = (url: string) =>
        internalClients('comms', { signer: testSigner('comms'), timeoutMs: 300, baseUrl: () => url })
      const oddUrl = `http://127.0.0.1:${(odd.server.address() as AddressInfo).port}`
      await expect(at(oddUrl).patients.lookUp(ctx, PATIENT)).rejects.toBeInstanceOf(UpstreamUnavailable)
      await expect(at(oddUrl).patients.lookUp(ctx, APPOINTMENT)).rejects.toBeInstanceOf(UpstreamUnavailable)
      await expect(
        at(oddUrl).appointments.respond(ctx, APPOINTMENT, { action: 'cancel' }),
      ).rejects.toBeInstanceOf(UpstreamUnavailable)
      await expect(
        testServices('comms', 'http://127.0.0.1:9', 300).patients.lookUp(ctx, PATIENT),
      ).rejects.toBeInstanceOf(UpstreamUnavailable)
      const slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}`
      await expect(at(slowUrl).patients.lookUp(ctx, PATIENT)).rejects.toBeInstanceOf(UpstreamUnavailable)
    } finally {
      await odd.close()
      slow.closeAllConnections()
      await new Promise((r) => slow.close(r))
    }
  })

  it('refuses to serve a declaration that names a caller services.json does not list as calling it', () => {
    const app = Fastify(fastifyOptions(log))
    const stranger = { ...internalApi.patients.lookUp, callers: ['comms', 'audit'] } as const
    expect(() => serveInternal(app, stranger, async () => contact)).toThrow(
      'internalGetPatientContact names audit as callers, which services.json does not list as calling patients',
    )
  })
})

describe('the declarations and services.json', () => {
  const endpoints = everyInternalEndpoint()

  it('declare each endpoint once, under /internal/, in the file of the service that serves it', () => {
    for (const [service, api] of Object.entries(internalApi))
      for (const e of Object.values(api as Record<string, InternalEndpoint>)) {
        expect([e.operationId, e.service]).toEqual([e.operationId, service])
        expect(e.path).toMatch(/^\/internal\//)
      }
    const ids = endpoints.map(({ endpoint }) => endpoint.operationId)
    expect(new Set(ids).size).toBe(ids.length)
    const routes = endpoints.map(({ endpoint }) => `${endpoint.method} ${endpoint.path}`)
    expect(new Set(routes).size).toBe(routes.length)
  })

  it("have CALLS as services.json's calls, and every caller has an endpoint of each service it calls", () => {
    const list = serviceList()
    const calls = Object.fromEntries(
      [list.gateway, ...list.services].filter((s) => s.calls?.length).map((s) => [s.name, s.calls]),
    )
    expect(CALLS).toEqual(calls)
    for (const [caller, callees] of Object.entries(CALLS))
      for (const callee of callees)
        expect([
          caller,
          callee,
          endpoints.some(({ endpoint: e }) => e.service === callee && callersOf(e, CALLS).includes(caller)),
        ]).toEqual([caller, callee, true])
  })
})
