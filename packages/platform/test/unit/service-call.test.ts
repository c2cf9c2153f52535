import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import { Type } from '@sinclair/typebox'
import {
  UpstreamUnavailable,
  callService,
  createLogger,
  lookUp,
  fastifyOptions,
  http,
  type Ctx,
} from '@clinic/platform'
import { testAssertionKeys, testPrincipal, testSigner } from '@clinic/platform/testing'

/** The caller's own key (comms' of the run); the callee's routes name comms as their caller. */
const signer = testSigner('comms')
const log = createLogger({ service: 'test', level: 'silent' })
const ctx: Ctx = {
  auth: testPrincipal({ companyId: 42, allowedCenters: ['ALM1'] }),
  log,
  requestId: 'req-call-1',
}
const makeApp = () => Fastify(fastifyOptions(log))
const url = (s: { server: { address(): unknown } }) =>
  `http://127.0.0.1:${(s.server.address() as AddressInfo).port}`

describe('callService: a signed call to another service', () => {
  let callee: ReturnType<typeof makeApp>
  beforeAll(async () => {
    callee = makeApp()
    await callee.register(http, {
      service: 'callee',
      version: '261122.01',
      assertionKeys: testAssertionKeys(['comms']),
    })
    callee.get('/internal/things/:id', { config: { callers: ['comms'] } }, async (req) => ({
      id: (req.params as { id: string }).id,
      company: req.ctx.auth.companyId,
      centers: req.ctx.auth.allowedCenters,
      request_id: req.ctx.requestId,
    }))
    callee.get('/internal/missing/:id', { config: { callers: ['comms'] } }, async (_req, reply) =>
      reply.code(404).send({ code: 'not_found' }),
    )
    callee.get('/internal/conflicted/:id', { config: { callers: ['comms'] } }, async (_req, reply) =>
      reply.code(409).send({ code: 'conflict' }),
    )
    callee.post('/internal/fail', { config: { callers: ['comms'] } }, async () => {
      throw new Error('boom')
    })
    await callee.listen({ port: 0, host: '127.0.0.1' })
  })
  afterAll(() => callee.close())

  it("carries the caller's company, centers and request id, verified by the callee", async () => {
    const answer = await callService(ctx, signer, {
      service: 'callee',
      baseUrl: url(callee),
      method: 'GET',
      path: '/internal/things/abc',
    })
    expect(answer).toEqual({
      status: 200,
      body: { id: 'abc', company: 42, centers: ['ALM1'], request_id: 'req-call-1' },
    })
  })

  it('addresses the assertion to the named service: a call meant for another is 401 at this one', async () => {
    const answer = await callService(ctx, signer, {
      service: 'patients',
      baseUrl: url(callee),
      method: 'GET',
      path: '/internal/things/abc',
    })
    expect(answer.status).toBe(401)
  })

  it('checks a 2xx answer against its schema: off-schema is 503, never taken on trust', async () => {
    const call = (answer: ReturnType<typeof Type.Object>) =>
      callService(ctx, signer, {
        service: 'callee',
        baseUrl: url(callee),
        method: 'GET',
        path: '/internal/things/abc',
        answer,
      })
    expect((await call(Type.Object({ id: Type.String(), company: Type.Integer() }))).status).toBe(200)
    await expect(call(Type.Object({ id: Type.Integer() }))).rejects.toBeInstanceOf(UpstreamUnavailable)
    await expect(call(Type.Object({ missing: Type.String() }))).rejects.toBeInstanceOf(UpstreamUnavailable)
  })

  it('returns 4xx answers to the adapter (a caller the route does not name is 401 at the callee)', async () => {
    const answer = await callService(ctx, testSigner('appointments'), {
      service: 'callee',
      baseUrl: url(callee),
      method: 'GET',
      path: '/internal/things/abc',
    })
    expect(answer.status).toBe(401)
    expect(answer.body).toMatchObject({ code: 'unauthenticated' })
  })

  it('turns a 5xx into 503 upstream_unavailable with Retry-After', async () => {
    const err = await callService(ctx, signer, {
      service: 'callee',
      baseUrl: url(callee),
      method: 'POST',
      path: '/internal/fail',
      body: { a: 1 },
    }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(UpstreamUnavailable)
    expect((err as UpstreamUnavailable).headers).toEqual({ 'retry-after': '5' })
  })

  it('looks a record up (lookUp): its body on 200, null on 404, 503 on any other answer', async () => {
    const look = (path: string) =>
      lookUp(ctx, signer, {
        service: 'callee',
        baseUrl: url(callee),
        path,
        answer: Type.Object({ id: Type.String() }),
      })
    expect(await look('/internal/things/abc')).toMatchObject({ id: 'abc', company: 42 })
    expect(await look('/internal/missing/abc')).toBeNull()
    await expect(look('/internal/conflicted/abc')).rejects.toBeInstanceOf(UpstreamUnavailable)
  })

  it('turns a refused connection and a timeout into 503', async () => {
    const dead = createServer()
    await new Promise<void>((r) => dead.listen(0, '127.0.0.1', r))
    const port = (dead.address() as AddressInfo).port
    await new Promise((r) => dead.close(r))
    await expect(
      callService(ctx, signer, {
        service: 'x',
        baseUrl: `http://127.0.0.1:${port}`,
        method: 'GET',
        path: '/',
      }),
    ).rejects.toBeInstanceOf(UpstreamUnavailable)

    const slow: Server = createServer(() => undefined) // never answers
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r))
    await expect(
      callService(ctx, signer, {
        service: 'x',
        baseUrl: `http://127.0.0.1:${(slow.address() as AddressInfo).port}`,
        method: 'GET',
        path: '/',
        timeoutMs: 200,
      }),
    ).rejects.toBeInstanceOf(UpstreamUnavailable)
    slow.closeAllConnections()
    await new Promise((r) => slow.close(r))
  })
})

describe('route rules: one 400 with every bad field', () => {
  const Body = Type.Object(
    {
      name: Type.String({ minLength: 1, pattern: '\\S' }),
      phone: Type.Optional(Type.String({ pattern: '^\\+[1-9]\\d{6,14}$' })),
      birth: Type.Optional(Type.String()),
    },
    { additionalProperties: false },
  )
  let app: ReturnType<typeof makeApp>
  beforeAll(async () => {
    app = makeApp()
    await app.register(http, { service: 't', version: '261122.01', assertionKeys: null })
    const rules = {
      extra: (b: unknown) =>
        (b as { birth?: string }).birth === 'future'
          ? [{ path: '/birth', message: 'must not be in the future' }]
          : [],
      patternMessages: { '^\\+[1-9]\\d{6,14}$': 'must be an E.164 phone number' },
      readOnlyFields: ['id'],
    }
    // The route states its rules; the platform checks them with the schema, before the handler.
    app.post('/things', { config: { rules }, schema: { body: Body } }, async () => ({ ok: true }))
  })
  afterAll(() => app.close())
  const post = (payload: unknown) =>
    app.inject({ method: 'POST', url: '/things', payload: payload as object })

  it('lists schema errors, plain pattern messages, read-only fields and the extra rules together', async () => {
    const res = await post({ name: '', phone: '12', id: 'x', birth: 'future' })
    expect(res.statusCode).toBe(400)
    expect(res.json().errors).toEqual([
      { path: '/id', message: 'is read-only' },
      { path: '/name', message: 'must not be empty' },
      { path: '/phone', message: 'must be an E.164 phone number' },
      { path: '/birth', message: 'must not be in the future' },
    ])
  })

  it('runs the extra rules on a body that passed its schema', async () => {
    expect((await post({ name: 'a', birth: 'future' })).json().errors).toEqual([
      { path: '/birth', message: 'must not be in the future' },
    ])
    expect((await post({ name: 'a' })).json()).toEqual({ ok: true })
  })

  it('says so when only read-only fields were sent', async () => {
    expect((await post({ name: 'a', id: 'x' })).json().detail).toBe('Read-only fields cannot be changed')
  })
})
