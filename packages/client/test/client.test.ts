// The client against a real HTTP server: real fetch, real Request bodies, a fake sleep (no waiting).
import {
  ClinicApiError,
  createClinicClient,
  retryDelay,
  unwrap,
  type ClinicClientOptions,
} from '@clinic/client'
import { problem, startServer } from './server'

const ID = '019ab2c4-1f00-7000-8000-000000000001'
const newPatient = { first_name: 'Test', last_name: 'Ejemplo', birth_date: '1990-01-31', codalmacen: 'ALM1' }
const patient = { id: ID, ...newPatient, version: 1 }

let server: Awaited<ReturnType<typeof startServer>>
let slept: number[]

beforeAll(async () => {
  server = await startServer()
})
afterAll(() => server.close())
beforeEach(() => {
  server.reset()
  slept = []
})

function client(options: Partial<ClinicClientOptions> = {}) {
  let keys = 0
  return createClinicClient({
    baseUrl: server.baseUrl,
    token: 'test-token',
    sleep: async (ms) => void slept.push(ms),
    idempotencyKey: () => `key-${++keys}`,
    ...options,
  } as ClinicClientOptions)
}

describe('auth', () => {
  it('sends an API token as X-service-Token', async () => {
    await client().GET('/patients')
    expect(server.seen[0]!.headers['x-service-token']).toBe('test-token')
    expect(server.seen[0]!.headers.authorization).toBeUndefined()
  })

  it('sends HTTP Basic username:token', async () => {
    await client({ token: undefined, basic: { username: 'alice', token: 'sécret' } }).GET('/patients')
    const expected = `Basic ${Buffer.from('alice:sécret', 'utf8').toString('base64')}`
    expect(server.seen[0]!.headers.authorization).toBe(expected)
    expect(server.seen[0]!.headers['x-service-token']).toBeUndefined()
  })
})

describe('Idempotency-Key and Retry-After', () => {
  it('adds a key to a POST and sends the same key and body again after a 503', async () => {
    server.answerInTurn(
      { status: 503, headers: { 'retry-after': '1' }, body: problem(503, 'upstream_unavailable') },
      { status: 201, headers: { location: `/api/patients/${ID}`, etag: '"1"' }, body: patient },
    )
    const created = unwrap(await client().POST('/patients', { body: newPatient }))

    expect(created.id).toBe(ID)
    expect(server.seen).toHaveLength(2)
    expect(server.seen.map((r) => r.headers['idempotency-key'])).toEqual(['key-1', 'key-1'])
    expect(server.seen.map((r) => JSON.parse(r.body))).toEqual([newPatient, newPatient])
    expect(server.seen[1]!.headers['content-type']).toBe('application/json')
    expect(slept).toEqual([1000])
  })

  it("keeps the caller's Idempotency-Key and adds none to a GET", async () => {
    const api = client()
    await api.POST('/patients', { body: newPatient, params: { header: { 'idempotency-key': 'mine' } } })
    await api.GET('/patients')
    expect(server.seen[0]!.headers['idempotency-key']).toBe('mine')
    expect(server.seen[1]!.headers['idempotency-key']).toBeUndefined()
  })

  it('waits Retry-After seconds on a 429, then succeeds', async () => {
    server.answerInTurn(
      { status: 429, headers: { 'retry-after': '2' }, body: problem(429, 'rate_limited') },
      { status: 200, body: { data: [], meta: { total: 0, offset: 0, limit: 25, next: null } } },
    )
    const { data, response } = await client().GET('/patients')
    expect(response.status).toBe(200)
    expect(data?.data).toEqual([])
    expect(slept).toEqual([2000])
  })

  it('gives up after maxRetries and returns the last answer', async () => {
    server.answerInTurn({
      status: 503,
      headers: { 'retry-after': '1' },
      body: problem(503, 'upstream_unavailable'),
    })
    const { error, response } = await client({ maxRetries: 2 }).POST('/patients', { body: newPatient })
    expect(response.status).toBe(503)
    expect(error).toMatchObject({ code: 'upstream_unavailable' })
    expect(server.seen).toHaveLength(3)
    expect(slept).toEqual([1000, 1000])
    expect(new Set(server.seen.map((r) => r.headers['idempotency-key']))).toEqual(new Set(['key-1']))
  })

  it('does not retry without Retry-After, nor when it is longer than maxRetryAfterSeconds', async () => {
    server.answerInTurn({ status: 503, body: problem(503, 'upstream_unavailable') })
    expect((await client().GET('/patients')).response.status).toBe(503)
    server.answerInTurn({
      status: 429,
      headers: { 'retry-after': '3600' },
      body: problem(429, 'rate_limited'),
    })
    expect((await client({ maxRetryAfterSeconds: 60 }).GET('/patients')).response.status).toBe(429)
    expect(server.seen).toHaveLength(2)
    expect(slept).toEqual([])
  })

  it('reads Retry-After as seconds or as an HTTP date, only on 429 and 503', () => {
    const now = Date.parse('2026-11-22T09:30:00Z')
    const answer = (status: number, retryAfter: string) =>
      new Response(null, { status, headers: { 'retry-after': retryAfter } })
    expect(retryDelay(answer(503, '5'), now)).toBe(5000)
    expect(retryDelay(answer(429, 'Sun, 22 Nov 2026 09:30:07 GMT'), now)).toBe(7000)
    expect(retryDelay(answer(429, 'soon'), now)).toBeUndefined()
    expect(retryDelay(answer(500, '5'), now)).toBeUndefined()
  })
})

describe('If-Match', () => {
  it('sends the ETag of the last read of that path on a PATCH', async () => {
    const api = client()
    server.answerInTurn({ status: 200, headers: { etag: '"3"' }, body: { ...patient, version: 3 } })
    await api.GET('/patients/{id}', { params: { path: { id: ID } } })
    await api.PATCH('/patients/{id}', { params: { path: { id: ID } }, body: { email: 'a@example.test' } })
    await api.PATCH('/patients/{id}', {
      params: { path: { id: 'another' } },
      body: { email: 'b@example.test' },
    })

    expect(server.seen[1]!.headers['if-match']).toBe('"3"')
    expect(server.seen[2]!.headers['if-match']).toBeUndefined()
  })

  it('remembers the ETag of a created resource at its Location, and of each PATCH answer', async () => {
    const api = client()
    server.answerInTurn(
      { status: 201, headers: { location: `/api/patients/${ID}`, etag: '"1"' }, body: patient },
      { status: 200, headers: { etag: '"2"' }, body: { ...patient, version: 2 } },
    )
    await api.POST('/patients', { body: newPatient })
    await api.PATCH('/patients/{id}', { params: { path: { id: ID } }, body: { email: 'a@example.test' } })
    await api.PATCH('/patients/{id}', { params: { path: { id: ID } }, body: { phone: '+34600000000' } })
    expect(server.seen.slice(1).map((r) => r.headers['if-match'])).toEqual(['"1"', '"2"'])
  })

  it("never overrides the caller's If-Match", async () => {
    const api = client()
    server.answerInTurn({ status: 200, headers: { etag: '"3"' }, body: patient })
    await api.GET('/patients/{id}', { params: { path: { id: ID } } })
    await api.PATCH('/patients/{id}', {
      params: { path: { id: ID }, header: { 'if-match': '"1"' } },
      body: { email: 'a@example.test' },
    })
    expect(server.seen[1]!.headers['if-match']).toBe('"1"')
  })
})

describe('paginate', () => {
  const pages: Record<string, { ids: string[]; next: string | null }> = {
    first: { ids: ['p1', 'p2'], next: 'c1' },
    c1: { ids: ['p3', 'p4'], next: 'c2' },
    c2: { ids: ['p5'], next: null },
  }

  it('follows meta.next with ?after= across pages, without offset', async () => {
    server.answer((request) => {
      const page = pages[request.query.get('after') ?? 'first']!
      const data = page.ids.map((id) => ({ ...patient, id }))
      return { status: 200, body: { data, meta: { total: 5, offset: 0, limit: 2, next: page.next } } }
    })
    const ids: string[] = []
    for await (const item of client().paginate('/patients', { limit: 2, offset: 0, sort: '-created_at' })) {
      ids.push(item.id)
    }

    expect(ids).toEqual(['p1', 'p2', 'p3', 'p4', 'p5'])
    expect(server.seen.map((r) => Object.fromEntries(r.query))).toEqual([
      { limit: '2', offset: '0', sort: '-created_at' },
      { limit: '2', sort: '-created_at', after: 'c1' },
      { limit: '2', sort: '-created_at', after: 'c2' },
    ])
    expect(server.seen.every((r) => r.path === '/api/patients')).toBe(true)
  })

  it('throws the problem of a failed page', async () => {
    server.answerInTurn({ status: 400, body: problem(400, 'unknown_center') })
    const pager = client().paginate('/patients', { codalmacen: 'NOPE' })
    const failure = await pager.next().catch((err: unknown) => err)
    expect(failure).toBeInstanceOf(ClinicApiError)
    expect(failure).toMatchObject({ status: 400, problem: { code: 'unknown_center' } })
  })
})
