import { freePort, waitFor } from '@clinic/platform/testing'
import { call, extraGateway, makeTenant, sql, stack, tokenFor, type Tenant } from '../src/client'
import { admin } from '../src/stack'

const VERSION = /^\d{6}\.\d{2}$/

function expectProblem(res: { status: number; headers: Headers; body: any }, status: number, code: string) {
  expect(res.status).toBe(status)
  expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/)
  expect(res.body).toMatchObject({
    status,
    code,
    type: expect.stringContaining(code),
    title: expect.any(String),
  })
  expect(res.body.request_id).toBe(res.headers.get('x-request-id'))
  expect(res.headers.get('x-service-version')).toMatch(VERSION)
}

let a: Tenant
let b: Tenant
beforeAll(async () => {
  ;[a, b] = await Promise.all([makeTenant(), makeTenant(['SUR'])])
})

describe('authentication', () => {
  it('serves GET /api/patients with a token and refuses it without one, with the version header on both', async () => {
    const ok = await call('GET', '/patients', { token: a.token })
    expect(ok.status).toBe(200)
    expect(ok.headers.get('x-service-version')).toMatch(VERSION)
    expect(ok.body.meta).toMatchObject({ total: expect.any(Number) })

    const refused = await call('GET', '/patients')
    expectProblem(refused, 401, 'unauthenticated')
    expect(refused.headers.get('www-authenticate')).toBe('Basic realm="clinic"')
  })

  it('accepts HTTP Basic username:token only for the token owner', async () => {
    expect((await call('GET', '/patients', { basic: { username: a.username, token: a.token } })).status).toBe(
      200,
    )
    expectProblem(
      await call('GET', '/patients', { basic: { username: b.username, token: a.token } }),
      401,
      'unauthenticated',
    )
    expectProblem(
      await call('GET', '/patients', { headers: { authorization: `Bearer ${a.token}` } }),
      401,
      'unauthenticated',
    )
  })

  it('refuses unknown, malformed, revoked and expired tokens', async () => {
    expectProblem(await call('GET', '/patients', { token: 'csk_' + 'x'.repeat(43) }), 401, 'unauthenticated')
    expectProblem(await call('GET', '/patients', { token: 'not-a-token' }), 401, 'unauthenticated')

    const expiring = await tokenFor(a, '--expires', '1m', '--name', 'to-expire')
    expect((await call('GET', '/patients', { token: expiring })).status).toBe(200)
    await sql(
      `UPDATE identity.api_tokens SET expires_at = now() - interval '1 second' WHERE name = 'to-expire' AND idempresa = $1`,
      [a.companyId],
    )
    await waitFor(async () => (await call('GET', '/patients', { token: expiring })).status === 401, {
      timeoutMs: 10_000,
      what: 'expiry',
    })
  })

  it('stops a revoked token within the token cache time', async () => {
    const token = await tokenFor(a, '--name', 'to-revoke')
    expect((await call('GET', '/patients', { token })).status).toBe(200)
    const rows = await sql(`SELECT id FROM identity.api_tokens WHERE name = 'to-revoke' AND idempresa = $1`, [
      a.companyId,
    ])
    await admin(stack(), 'token:revoke', '--id', rows[0].id)
    await waitFor(async () => (await call('GET', '/patients', { token })).status === 401, {
      timeoutMs: 10_000,
      what: 'revocation',
    })
  })

  it('answers on both bases /api and /api/3', async () => {
    const res = await call('GET', '/3/patients', { token: a.token })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-service-version')).toMatch(VERSION)
  })
})

describe('tenancy', () => {
  it('ignores spoofed tenant headers and never serves another company', async () => {
    const created = await call('POST', '/patients', {
      token: b.token,
      body: { first_name: 'Test', last_name: 'Spoof', birth_date: '1990-01-01' },
    })
    expect(created.status).toBe(201)
    const spoofHeaders = {
      'x-idempresa': String(b.companyId),
      'x-tenant-id': String(b.companyId),
      'x-clinic-assertion': 'v1.forged.forged',
      'x-company-id': String(b.companyId),
    }
    const list = await call('GET', `/patients?idEmpresa=${b.companyId}`, {
      token: a.token,
      headers: spoofHeaders,
    })
    // Unknown query parameters are refused or ignored, never obeyed.
    if (list.status === 200) expect(list.body.data.map((p: any) => p.id)).not.toContain(created.body.id)
    else expectProblem(list, 400, 'validation_failed')
    const one = await call('GET', `/patients/${created.body.id}`, { token: a.token, headers: spoofHeaders })
    expectProblem(one, 404, 'not_found')
  })

  it('checks codalmacen against the company and the token', async () => {
    expectProblem(await call('GET', '/patients?codalmacen=NOPE', { token: a.token }), 400, 'unknown_center')
    expectProblem(await call('GET', '/patients?codalmacen=SUR', { token: a.token }), 400, 'unknown_center')
    const limited = await tokenFor(a, '--centers', 'ALM1')
    expect((await call('GET', '/patients?codalmacen=ALM1', { token: limited })).status).toBe(200)
    expectProblem(await call('GET', '/patients?codalmacen=ALM2', { token: limited }), 403, 'center_forbidden')
  })

  it('refuses calls made straight to a service, even with a forged assertion', async () => {
    for (const url of Object.values(stack().serviceUrls)) {
      const res = await fetch(`${url}/patients`, {
        headers: { 'x-idempresa': String(a.companyId), 'x-clinic-assertion': 'v1.e30.AAAA' },
      })
      expect(res.status).toBe(401)
      expect(((await res.json()) as { code: string }).code).toBe('unauthenticated')
    }
  })
})

describe('HTTP conventions', () => {
  it('puts problem+json and the version header on 404, 413, 415 and 400', async () => {
    expectProblem(await call('GET', '/nothing-here', { token: a.token }), 404, 'not_found')
    // Every family is served now (DESIGN.md sections 14-16): a path under one with no operation is a
    // plain 404, and still needs a token first.
    for (const family of ['clinical', 'documents', 'consents']) {
      expectProblem(await call('GET', `/${family}/no/such/operation`, { token: a.token }), 404, 'not_found')
      expectProblem(await call('GET', `/${family}/x`), 401, 'unauthenticated')
    }
    const big = JSON.stringify({ first_name: 'x'.repeat(70 * 1024) })
    expectProblem(await call('POST', '/patients', { token: a.token, raw: big }), 413, 'payload_too_large')
    expectProblem(
      await call('POST', '/patients', {
        token: a.token,
        raw: 'name=x',
        contentType: 'application/x-www-form-urlencoded',
      }),
      415,
      'unsupported_media_type',
    )
    expectProblem(
      await call('POST', '/patients', { token: a.token, raw: '{not json', contentType: 'application/json' }),
      400,
      'validation_failed',
    )
    expectProblem(await call('GET', '/patients?limit=1000', { token: a.token }), 400, 'validation_failed')
  })

  it('keeps a sane client X-Request-Id and replaces an insane one', async () => {
    const kept = await call('GET', '/patients', {
      token: a.token,
      headers: { 'x-request-id': 'client-req-123' },
    })
    expect(kept.headers.get('x-request-id')).toBe('client-req-123')
    const replaced = await call('GET', '/patients', {
      token: a.token,
      headers: { 'x-request-id': 'bad id with spaces' },
    })
    expect(replaced.headers.get('x-request-id')).not.toBe('bad id with spaces')
  })

  it('rate-limits per token with 429, Retry-After and RateLimit-* headers', async () => {
    const gw = await extraGateway({ RATE_LIMIT_PER_MINUTE: '3' })
    try {
      const seen: number[] = []
      let last
      for (let i = 0; i < 4; i++) {
        last = await call('GET', '/patients', { token: a.token, base: gw.api })
        seen.push(last.status)
        expect(last.headers.get('ratelimit-limit')).toBe('3')
      }
      expect(seen).toEqual([200, 200, 200, 429])
      expectProblem(last!, 429, 'rate_limited')
      expect(Number(last!.headers.get('retry-after'))).toBeGreaterThan(0)
      // Another token has its own budget.
      expect((await call('GET', '/patients', { token: b.token, base: gw.api })).status).toBe(200)
    } finally {
      await gw.stop()
    }
  })

  it('answers 503 upstream_unavailable with Retry-After when a service is down', async () => {
    const dead = await freePort()
    const gw = await extraGateway({ PATIENTS_URL: `http://127.0.0.1:${dead}` })
    try {
      const res = await call('GET', '/patients', { token: a.token, base: gw.api })
      expectProblem(res, 503, 'upstream_unavailable')
      expect(res.headers.get('retry-after')).toBeTruthy()
      const health = await fetch(`${gw.api}/health`)
      expect(health.status).toBe(503)
      expect(((await health.json()) as { checks: Record<string, string> }).checks.patients).toBe('down')
    } finally {
      await gw.stop()
    }
  })

  it('serves health, the merged OpenAPI document and the docs without a token', async () => {
    const health = await call('GET', '/health')
    expect(health.status).toBe(200)
    expect(health.body.status).toBe('ok')
    const doc = await call('GET', '/openapi.json')
    expect(doc.status).toBe(200)
    expect(doc.body.openapi).toBe('3.1.0')
    expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining(['/patients', '/patients/{id}']))
    expect(Object.keys(doc.body.paths).some((p) => p.startsWith('/internal'))).toBe(false)
    const docs = await fetch(`${stack().api}/docs/`)
    expect(docs.status).toBe(200)
    expect(docs.headers.get('x-service-version')).toMatch(VERSION)
  })
})
