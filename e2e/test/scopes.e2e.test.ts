import { randomUUID } from 'node:crypto'
import { waitFor } from '@clinic/platform/testing'
import { call, extraGateway, makeTenant, sql, tokenFor, type Tenant } from '../src/client'
import { designAlsoOf, designScopeOf } from '../src/design-scopes'
import { apiOperations, fetchDocument, type Operation } from '../src/operations'

/**
 * Token scopes and the failed-authentication limit (DESIGN.md section 13). The operations are the
 * running gateway's (/api/openapi.json); the scope each needs is restated from DESIGN
 * (src/design-scopes.ts), not taken from the gateway (its route table, or the `x-scope` it writes
 * into the document), so the suite cannot agree with itself. For every operation that needs a
 * token: the document names DESIGN's scope; a token holding every scope but that one is 403
 * insufficient_scope naming it; a token holding that scope alone is not refused for its scope
 * (whatever else it answers). An operation DESIGN gives no scope (a write of a read-only family)
 * fails the suite, naming it.
 */

const TIMEOUT_MS = 30_000
let t: Tenant
let ops: Array<Operation & { scope: string }>
/** Per scope: a token with every other scope of the API, and one with that scope alone. */
const without = new Map<string, string>()
const only = new Map<string, string>()

beforeAll(async () => {
  const all = apiOperations(await fetchDocument())
  const unknown = all.filter((o) => !designScopeOf(o))
  if (unknown.length)
    throw new Error(
      `no scope in DESIGN section 13 for: ${unknown.map((o) => `${o.method} ${o.path}`).join(', ')}`,
    )
  ops = all.map((o) => ({ ...o, scope: designScopeOf(o)! }))
  t = await makeTenant(['ALM1'])
  // The scopes the API's operations need: tokens are made of these (the gateway refuses others).
  const scopes = [...new Set(ops.map((o) => o.scope))]
  // Two admin CLI runs per scope, three at a time: each is mostly its own start-up, and two dozen
  // at once on a busy machine starve one another past the CLI's 10 s wait for a connection.
  const runs = scopes.flatMap((scope) => [
    async () =>
      without.set(scope, await tokenFor(t, '--scopes', scopes.filter((s) => s !== scope).join(','))),
    async () => only.set(scope, await tokenFor(t, '--scopes', scope)),
  ])
  const lane = async (): Promise<void> => {
    for (let run = runs.shift(); run; run = runs.shift()) await run()
  }
  await Promise.all([lane(), lane(), lane()])
}, 300_000)

/** The operation's path with an id of nobody's (a 404 is as good as any answer here). */
const urlOf = (path: string) => path.replace(/\{[a-z_]+\}/g, () => randomUUID())

const ask = (method: string, path: string, token: string) =>
  call(method, urlOf(path), {
    token,
    body: method === 'GET' || method === 'DELETE' ? undefined : {},
    headers: method === 'POST' ? { 'idempotency-key': randomUUID() } : {},
    timeoutMs: TIMEOUT_MS,
  })

describe('token scopes on every operation of the document', () => {
  it('documents DESIGN’s scope on every operation that needs a token', () => {
    expect(ops.length).toBeGreaterThan(30)
    const wrong = ops.filter((o) => o.xScope !== o.scope)
    expect(wrong.map((o) => `${o.method} ${o.path}: ${String(o.xScope)}, DESIGN ${o.scope}`)).toEqual([])
    const wrongAlso = ops.filter((o) => o.xAlso.join(',') !== designAlsoOf(o).join(','))
    expect(wrongAlso.map((o) => `${o.method} ${o.path}: also ${o.xAlso}, DESIGN ${designAlsoOf(o)}`)).toEqual(
      [],
    )
  })

  it('refuses every operation to a token without its scope, and not for its scope with it alone', async () => {
    const wrong: string[] = []
    let checked = 0
    // An operation that needs more than its own scope is refused with its own scope alone, naming
    // the other, and not refused for scope with all of them.
    const withAll = new Map<string, Promise<string>>()
    const tokenWithAll = (scopes: string[]) => {
      const key = scopes.join(',')
      if (!withAll.has(key)) withAll.set(key, tokenFor(t, '--scopes', key))
      return withAll.get(key)!
    }
    // Four operations at a time: each asks twice, and the answers are independent.
    const check = async (o: Operation & { scope: string }) => {
      const { path, scope } = o
      const method = o.method.toUpperCase()
      const also = designAlsoOf(o)
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
    for (let i = 0; i < ops.length; i += 4) await Promise.all(ops.slice(i, i + 4).map(check))
    expect(wrong).toEqual([])
    expect(checked).toBe(ops.length)
  }, 300_000)

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
      { timeoutMs: 120_000, intervalMs: 250, what: 'a token.created per token of the company' },
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
