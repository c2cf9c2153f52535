import { randomUUID } from 'node:crypto'
import { waitFor } from '@clinic/platform/testing'
import { call, extraGateway, makeTenant, sql, tokenFor, type Tenant } from '../src/client'

/**
 * Token scopes and the failed-authentication limit (DESIGN.md section 13, issue 21), generated from
 * the route table the running gateway serves (/api/openapi.json, each operation's `x-scope`, which
 * the gateway writes from the table it checks requests with). For every operation that needs a
 * token: a token holding every scope but the operation's is 403 insufficient_scope naming it; a
 * token holding that scope alone is not refused for its scope (whatever else it answers). An
 * operation without a known scope fails the suite: a new endpoint cannot be added without one.
 */

const TIMEOUT_MS = 10_000
const SCOPES = [
  'patients:read',
  'patients:write',
  'appointments:read',
  'appointments:write',
  'comms:send',
  'comms:read',
  'audit:read',
  'webhooks:manage',
  'events:read',
]
const METHODS = ['get', 'post', 'patch', 'put', 'delete']

type Operation = { security?: unknown[]; tags?: string[]; 'x-scope'?: unknown; 'x-also-scopes'?: unknown }
type OpenApi = { paths: Record<string, Record<string, Operation>> }

let t: Tenant
/** Per scope: a token with every other scope, and one with that scope alone. */
const without = new Map<string, string>()
const only = new Map<string, string>()

beforeAll(async () => {
  t = await makeTenant(['ALM1'])
  // 18 admin CLI runs: at once, each is mostly its own start-up.
  await Promise.all(
    SCOPES.flatMap((scope) => [
      tokenFor(t, '--scopes', SCOPES.filter((s) => s !== scope).join(',')).then((k) => without.set(scope, k)),
      tokenFor(t, '--scopes', scope).then((k) => only.set(scope, k)),
    ]),
  )
}, 180_000)

/** Every operation that needs a token and serves a company (not the public ones, not the 501 areas). */
async function operations() {
  const doc = (await call('GET', '/openapi.json', { timeoutMs: TIMEOUT_MS })).body as OpenApi
  return Object.entries(doc.paths).flatMap(([path, ops]) =>
    Object.entries(ops)
      .filter(([m, op]) => METHODS.includes(m) && op.security?.length !== 0 && !op.tags?.includes('planned'))
      .map(([method, op]) => ({
        method: method.toUpperCase(),
        path,
        scope: op['x-scope'],
        also: Array.isArray(op['x-also-scopes']) ? op['x-also-scopes'].map(String) : [],
      })),
  )
}

/** The operation's path with an id of nobody's (a 404 is as good as any answer here). */
const urlOf = (path: string) => path.replace(/\{[a-z_]+\}/g, () => randomUUID())

const ask = (method: string, path: string, token: string) =>
  call(method, urlOf(path), {
    token,
    body: method === 'GET' || method === 'DELETE' ? undefined : {},
    headers: method === 'POST' ? { 'idempotency-key': randomUUID() } : {},
    timeoutMs: TIMEOUT_MS,
  })

describe('token scopes on every operation of the route table', () => {
  it('names a known scope on every operation that needs a token', async () => {
    const ops = await operations()
    expect(ops.length).toBeGreaterThan(30)
    const unscoped = ops.filter((o) => typeof o.scope !== 'string' || !SCOPES.includes(o.scope))
    expect(unscoped.map((o) => `${o.method} ${o.path}: ${String(o.scope)}`)).toEqual([])
  })

  it('refuses every operation to a token without its scope, and not for its scope with it alone', async () => {
    const wrong: string[] = []
    let checked = 0
    type Scoped = { method: string; path: string; scope: string; also: string[] }
    const scoped = (await operations()).filter(
      (o): o is Scoped => typeof o.scope === 'string' && SCOPES.includes(o.scope), // else the test above fails
    )
    // An operation that needs more than its own scope (x-also-scopes) is refused with its own scope
    // alone, naming the other, and not refused for scope with all of them.
    const withAll = new Map<string, Promise<string>>()
    const tokenWithAll = (scopes: string[]) => {
      const key = scopes.join(',')
      if (!withAll.has(key)) withAll.set(key, tokenFor(t, '--scopes', key))
      return withAll.get(key)!
    }
    // Four operations at a time: each asks twice, and the answers are independent.
    const check = async ({ method, path, scope, also }: Scoped) => {
      const refused = await ask(method, path, without.get(scope)!)
      if (
        refused.status !== 403 ||
        refused.body?.code !== 'insufficient_scope' ||
        !String(refused.body?.detail).includes(scope) ||
        !refused.headers.get('x-service-version')
      )
        wrong.push(`${method} ${path} without ${scope}: ${refused.status} ${JSON.stringify(refused.body)}`)
      if (also.length) {
        const alone = await ask(method, path, only.get(scope)!)
        if (alone.status !== 403 || !String(alone.body?.detail).includes(also[0]!))
          wrong.push(`${method} ${path} with ${scope} alone: ${alone.status} ${JSON.stringify(alone.body)}`)
      }
      const all = [scope, ...also]
      const allowed = await ask(method, path, also.length ? await tokenWithAll(all) : only.get(scope)!)
      if (allowed.status === 403 && allowed.body?.code === 'insufficient_scope')
        wrong.push(`${method} ${path} with ${all.join(', ')}: ${JSON.stringify(allowed.body)}`)
      checked++
    }
    for (let i = 0; i < scoped.length; i += 4) await Promise.all(scoped.slice(i, i + 4).map(check))
    expect(wrong).toEqual([])
    expect(checked).toBeGreaterThan(30)
  })

  it('lets the token made without --scopes (every scope) read and write as before', async () => {
    expect((await call('GET', '/patients', { token: t.token })).status).toBe(200)
    expect((await call('GET', '/audit/events?limit=1', { token: t.token })).status).toBe(200)
  })
})

describe('token:create on the audit trail', () => {
  it('records the tokens made with the admin CLI under their company, never the secret', async () => {
    const rows = await sql<{ id: string }>('SELECT id FROM identity.api_tokens WHERE idempresa = $1', [
      t.companyId,
    ])
    const events = await waitFor(
      async () => {
        const res = await call('GET', '/audit/events?action=token.created&limit=100', { token: t.token })
        return res.body?.data?.length === rows.length ? (res.body.data as Array<Record<string, any>>) : null
      },
      { timeoutMs: 30_000, intervalMs: 250, what: 'a token.created per token of the company' },
    )
    expect(events.map((e) => e.resource_id).sort()).toEqual(rows.map((r) => r.id).sort())
    for (const e of events) expect(e).toMatchObject({ resource_type: 'token', outcome: 'success' })
    expect(events.every((e) => typeof e.actor.username === 'string' && e.actor.username)).toBe(true)
    expect(JSON.stringify(events)).not.toContain(only.get('audit:read')!.slice(4))
  })
})

describe('failed authentications per address (AUTH_FAILURES_PER_ADDRESS_PER_MINUTE, default 60)', () => {
  it('answers the 61st failure from one address 429; a valid token from it is still served', async () => {
    // A gateway with the default limit (the stack's is lifted: every suite calls from 127.0.0.1).
    const gw = await extraGateway({ AUTH_FAILURES_PER_ADDRESS_PER_MINUTE: '' })
    try {
      const statuses: number[] = []
      for (let i = 0; i < 61; i++) {
        const guess = `csk_${randomUUID().replace(/-/g, '')}${'x'.repeat(11)}`
        statuses.push((await call('GET', '/patients', { base: gw.api, token: guess })).status)
      }
      expect(statuses.slice(0, 60)).toEqual(Array(60).fill(401))
      expect(statuses[60]).toBe(429)
      const limited = await call('GET', '/patients', { base: gw.api, token: 'csk_unknown' })
      expect(limited.status).toBe(429)
      expect(limited.body).toMatchObject({ status: 429, code: 'rate_limited' })
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
      expect((await call('GET', '/patients', { base: gw.api, token: t.token })).status).toBe(200)
    } finally {
      await gw.stop()
    }
  })
})
