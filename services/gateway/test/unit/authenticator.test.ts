import { waitFor } from '@clinic/platform/testing'
import { Authenticator, CENTER_NAMES_BUDGET, namesWithin } from '../../src/auth/authenticator'
import { newToken } from '../../src/auth/tokens'
import { DEFAULT_SCOPES } from '../../src/scopes'
import { FakeIdentityRepository } from './fake-identity-repository'

const T0 = Date.UTC(2026, 10, 22, 9, 30)
const basic = (username: string, token: string) => ({
  authorization: `Basic ${Buffer.from(`${username}:${token}`).toString('base64')}`,
})

async function setup(opts: { ttlMs?: number; maxEntries?: number } = {}) {
  const repo = new FakeIdentityRepository()
  repo.clock = () => new Date(T0)
  await repo.createCompany(7, 'Clinica Siete')
  await repo.createCenter(7, 'ALM1', 'Centro 1')
  await repo.createCenter(7, 'ALM2', 'Centro 2')
  const userId = await repo.createUser(7, 'alice')
  const errors: unknown[] = []
  const auth = new Authenticator(repo, {
    ttlMs: opts.ttlMs ?? 5000,
    maxEntries: opts.maxEntries,
    onError: (e) => errors.push(e),
  })
  async function issue(
    o: { centers?: string[] | null; scopes?: string[] | null; expiresAt?: Date | null } = {},
  ) {
    const { token, lookup, hash } = newToken()
    const id = await repo.createToken({
      companyId: 7,
      userId,
      name: null,
      lookup,
      hash,
      centers: o.centers ?? null,
      scopes: o.scopes ?? null,
      expiresAt: o.expiresAt ?? null,
    })
    return { token, id }
  }
  return { repo, auth, userId, issue, errors }
}

describe('Authenticator', () => {
  it('returns the principal of a valid token, limited to centers the company still has, with the names people are shown', async () => {
    const { auth, issue, userId } = await setup()
    const { token, id } = await issue({ centers: ['ALM2', 'GONE'] })
    const r = await auth.authenticate({ 'x-service-token': token }, T0)
    const principal = {
      companyId: 7,
      userId,
      username: 'alice',
      tokenId: id,
      companyCenters: ['ALM1', 'ALM2'],
      allowedCenters: ['ALM2'],
    }
    expect(r).toEqual({
      ok: true,
      principal,
      // What services show people, for the families that show them: the company's and every
      // center's name, from identity.
      named: {
        ...principal,
        names: { company: 'Clinica Siete', centers: { ALM1: 'Centro 1', ALM2: 'Centro 2' } },
      },
      scopes: DEFAULT_SCOPES,
    })
  })

  it("carries the token's scopes beside the principal: all but clinical:sign for a token made without a list", async () => {
    const { auth, issue } = await setup()
    const limited = await issue({ scopes: ['patients:read', 'comms:send', 'retired:scope'] })
    const r = await auth.authenticate({ 'x-service-token': limited.token }, T0)
    // A scope the gateway no longer knows gives nothing; the principal (what services see) has none.
    expect(r.ok && r.scopes).toEqual(['patients:read', 'comms:send'])
    expect(r.ok && r.principal).not.toHaveProperty('scopes')
    const all = await issue()
    const r2 = await auth.authenticate({ 'x-service-token': all.token }, T0)
    expect(r2.ok && r2.scopes).toEqual([...DEFAULT_SCOPES])
    expect(r2.ok && r2.scopes).not.toContain('clinical:sign')
  })

  it('gives allowedCenters null for a token that may use every center', async () => {
    const { auth, issue } = await setup()
    const { token } = await issue()
    const r = await auth.authenticate({ 'x-service-token': token }, T0)
    expect(r.ok && r.principal.allowedCenters).toBeNull()
  })

  it('refuses missing, malformed and unknown tokens without naming a company', async () => {
    const { auth, repo, issue } = await setup()
    expect(await auth.authenticate({}, T0)).toEqual({ ok: false, reason: 'no credentials' })
    expect(await auth.authenticate({ authorization: 'Bearer x' }, T0)).toEqual({
      ok: false,
      reason: 'unsupported authorization',
    })
    expect(await auth.authenticate({ 'x-service-token': 'csk_short' }, T0)).toEqual({
      ok: false,
      reason: 'malformed token',
    })
    expect(repo.lookups).toHaveLength(0) // a malformed token never reaches the database
    expect(await auth.authenticate({ 'x-service-token': newToken().token }, T0)).toEqual({
      ok: false,
      reason: 'unknown token',
    })
    // Same lookup prefix as a real token, different secret part: the hash decides.
    const { token } = await issue()
    const twin = token.slice(0, -1) + (token.endsWith('A') ? 'B' : 'A')
    expect(await auth.authenticate({ 'x-service-token': twin }, T0)).toEqual({
      ok: false,
      reason: 'unknown token',
    })
    expect((await auth.authenticate({ 'x-service-token': token }, T0)).ok).toBe(true)
  })

  it('refuses a revoked token, naming its company', async () => {
    const { auth, repo, issue } = await setup()
    const { token, id } = await issue()
    await repo.revokeToken(id)
    expect(await auth.authenticate({ 'x-service-token': token }, T0)).toEqual({
      ok: false,
      reason: 'revoked token',
      companyId: 7,
    })
  })

  it('refuses a token at and after its expiry, naming its company', async () => {
    const { auth, issue } = await setup({ ttlMs: 0 })
    const { token } = await issue({ expiresAt: new Date(T0 + 60_000) })
    expect((await auth.authenticate({ 'x-service-token': token }, T0 + 59_999)).ok).toBe(true)
    expect(await auth.authenticate({ 'x-service-token': token }, T0 + 60_000)).toEqual({
      ok: false,
      reason: 'expired token',
      companyId: 7,
    })
  })

  it('with Basic, accepts the owner (any case) and refuses another username', async () => {
    const { auth, issue, repo } = await setup()
    await repo.createUser(7, 'bob')
    const { token } = await issue()
    expect((await auth.authenticate(basic('alice', token), T0)).ok).toBe(true)
    expect((await auth.authenticate(basic('ALICE', token), T0)).ok).toBe(true)
    expect(await auth.authenticate(basic('bob', token), T0)).toEqual({
      ok: false,
      reason: 'username does not own the token',
      companyId: 7,
    })
    expect(await auth.authenticate(basic('bob', 'not-a-token'), T0)).toEqual({
      ok: false,
      reason: 'malformed token',
    })
  })

  it('answers from the cache within the ttl and reads again after it', async () => {
    const { auth, repo, issue } = await setup({ ttlMs: 5000 })
    const { token, id } = await issue()
    expect((await auth.authenticate({ 'x-service-token': token }, T0)).ok).toBe(true)
    expect(repo.lookups).toHaveLength(1)
    await repo.revokeToken(id)
    // Still cached: the revocation is seen only once the entry expires.
    expect((await auth.authenticate({ 'x-service-token': token }, T0 + 4999)).ok).toBe(true)
    expect(repo.lookups).toHaveLength(1)
    expect(await auth.authenticate({ 'x-service-token': token }, T0 + 5000)).toMatchObject({
      ok: false,
      reason: 'revoked token',
    })
    expect(repo.lookups).toHaveLength(2)
  })

  it('shares one lookup among the requests that miss together (single flight)', async () => {
    const { auth, repo, issue } = await setup({ ttlMs: 5000 })
    const { token } = await issue()
    const answers = await Promise.all(
      Array.from({ length: 50 }, () => auth.authenticate({ 'x-service-token': token }, T0)),
    )
    expect(answers.every((a) => a.ok)).toBe(true)
    expect(repo.lookups).toHaveLength(1)
    // Expired under load: again one lookup for all of them.
    await Promise.all(
      Array.from({ length: 50 }, () => auth.authenticate({ 'x-service-token': token }, T0 + 6000)),
    )
    expect(repo.lookups).toHaveLength(2)
  })

  it('caches unknown tokens too', async () => {
    const { auth, repo } = await setup({ ttlMs: 5000 })
    const guess = newToken().token
    for (let i = 0; i < 5; i++) await auth.authenticate({ 'x-service-token': guess }, T0 + i)
    expect(repo.lookups).toHaveLength(1)
    await auth.authenticate({ 'x-service-token': guess }, T0 + 5000)
    expect(repo.lookups).toHaveLength(2)
  })

  it('keeps at most maxEntries tokens, dropping the oldest', async () => {
    const { auth, repo, issue } = await setup({ ttlMs: 60_000, maxEntries: 2 })
    const [a, b, c] = [await issue(), await issue(), await issue()]
    for (const t of [a, b, c]) await auth.authenticate({ 'x-service-token': t.token }, T0)
    expect(repo.lookups).toHaveLength(3)
    await auth.authenticate({ 'x-service-token': c.token }, T0)
    await auth.authenticate({ 'x-service-token': b.token }, T0)
    expect(repo.lookups).toHaveLength(3) // b and c are still cached
    await auth.authenticate({ 'x-service-token': a.token }, T0)
    expect(repo.lookups).toHaveLength(4) // a was dropped when c came in
    expect(repo.lookups.at(-1)).toBe(a.token.slice(0, 16))
  })

  it('touches last_used_at at most once a minute, whether cached or read again', async () => {
    for (const ttlMs of [0, 120_000]) {
      const { auth, repo, issue } = await setup({ ttlMs })
      const { token, id } = await issue()
      await auth.authenticate({ 'x-service-token': token }, T0)
      expect(repo.touches).toEqual([{ companyId: 7, id }])
      await auth.authenticate({ 'x-service-token': token }, T0 + 30_000)
      await auth.authenticate({ 'x-service-token': token }, T0 + 59_999)
      expect(repo.touches).toHaveLength(1)
      await auth.authenticate({ 'x-service-token': token }, T0 + 60_000)
      expect(repo.touches).toHaveLength(2)
    }
  })

  it('does not touch refused tokens', async () => {
    const { auth, repo, issue } = await setup()
    const { token, id } = await issue()
    await repo.revokeToken(id)
    await auth.authenticate({ 'x-service-token': token }, T0)
    expect(repo.touches).toHaveLength(0)
  })

  it('still authenticates when recording last_used_at fails, and reports the error', async () => {
    const { auth, repo, issue, errors } = await setup()
    repo.touchError = new Error('database down')
    const { token } = await issue()
    expect((await auth.authenticate({ 'x-service-token': token }, T0)).ok).toBe(true)
    await waitFor(() => errors.length > 0, { what: 'onError' })
    expect(errors).toEqual([repo.touchError])
  })
})

describe('namesWithin', () => {
  it('keeps the company and every center while they fit, in code order', () => {
    expect(namesWithin('Clinica', { B: 'Centro B', A: 'Centro A' })).toEqual({
      company: 'Clinica',
      centers: { A: 'Centro A', B: 'Centro B' },
    })
  })

  it('leaves out the names of the centers past the budget, whatever the company size: never a larger assertion', () => {
    // 400 centers of 10-character codes and 80-character names: 36,000 characters asked.
    const centers = Object.fromEntries(
      Array.from({ length: 400 }, (_, i) => [`C${String(i).padStart(9, '0')}`, 'n'.repeat(80)]),
    )
    const { centers: kept } = namesWithin('Clinica', centers)
    const size = Object.entries(kept).reduce((n, [code, name]) => n + code.length + name.length, 0)
    expect(size).toBeLessThanOrEqual(CENTER_NAMES_BUDGET)
    expect(Object.keys(kept)).toEqual(Object.keys(centers).sort().slice(0, Object.keys(kept).length))
    expect(Object.keys(kept).length).toBe(Math.floor(CENTER_NAMES_BUDGET / 90))
  })
})
