import { createHash } from 'node:crypto'
import type { Knex } from 'knex'
import { createDb, makeEvent, migrate } from '@clinic/platform'
import { freshCompanyId, uniqueName, waitFor } from '@clinic/platform/testing'
import { Authenticator } from '../../src/auth/authenticator'
import { newToken } from '../../src/auth/tokens'
import { SCOPES } from '../../src/scopes'
import { runAdmin } from '../../src/cli/admin'
import { identityRepository, type IdentityRepository } from '../../src/db/identity-repository'
import { SCHEMA, migrations } from '../../src/db/migrations'

type Out = Parameters<typeof runAdmin>[2]
type Err = Parameters<typeof runAdmin>[3]
class Sink {
  text = ''
  write(chunk: string) {
    this.text += chunk
    return true
  }
}

let knex: Knex
let repo: IdentityRepository

beforeAll(async () => {
  await migrate(process.env.DATABASE_URL!, SCHEMA, migrations)
  knex = createDb(process.env.DATABASE_URL!, { schema: SCHEMA })
  repo = identityRepository(knex)
})
afterAll(() => knex.destroy())

async function admin(...argv: string[]) {
  const out = new Sink()
  const err = new Sink()
  await runAdmin(argv, repo, out as unknown as Out, err as unknown as Err)
  return { out: out.text, err: err.text }
}
async function usageError(...argv: string[]): Promise<string> {
  const e = await admin(...argv).then(
    () => null,
    (x: Error) => x,
  )
  expect(e?.constructor.name).toBe('UsageError')
  return e!.message
}

/** A company with centers ALM1 and ALM2 and one user. */
async function company() {
  const id = freshCompanyId()
  const username = uniqueName('alice')
  await admin('company:create', '--id', String(id), '--name', `Clinica ${id}`)
  await admin('center:create', '--company', String(id), '--code', 'ALM1', '--name', 'Centro 1')
  await admin('center:create', '--company', String(id), '--code', 'ALM2', '--name', 'Centro 2')
  await admin('user:create', '--company', String(id), '--username', username)
  return { id, username }
}

describe('identity repository and admin CLI on PostgreSQL', () => {
  it('creates a company, centers, a user and a token the repository finds by lookup', async () => {
    const c = await company()
    const { out, err } = await admin(
      'token:create',
      '--username',
      c.username,
      '--centers',
      'ALM1',
      '--expires',
      '12h',
      '--name',
      'ci',
    )
    const token = out.trim()
    expect(out).toMatch(/^csk_[A-Za-z0-9_-]{43}\n$/)
    const row = await knex('api_tokens').where({ idempresa: c.id }).first()
    expect(err).toContain(
      `token ${row.id} for ${c.username} (company ${c.id}, centers ALM1, scopes all but clinical:sign,fhir:export, expires `,
    )

    const [record, ...others] = await repo.tokensByLookup(token.slice(0, 16))
    expect(others).toHaveLength(0)
    expect(record).toMatchObject({
      id: row.id,
      idempresa: c.id,
      username: c.username,
      centers: ['ALM1'],
      company_centers: ['ALM1', 'ALM2'],
      company_name: `Clinica ${c.id}`,
      center_names: { ALM1: 'Centro 1', ALM2: 'Centro 2' },
      revoked_at: null,
      last_used_at: null,
    })
    expect(record!.expires_at!.getTime() - Date.now()).toBeGreaterThan(11.9 * 3_600_000)
    expect(await repo.centerCodes(c.id)).toEqual(['ALM1', 'ALM2'])
    expect(await repo.userByName(c.username.toUpperCase())).toEqual({
      idempresa: c.id,
      id: record!.user_id,
      username: c.username,
    })
  })

  it('stores the token only as its SHA-256 hash', async () => {
    const c = await company()
    const token = (await admin('token:create', '--username', c.username)).out.trim()
    const row = await knex('api_tokens').where({ idempresa: c.id }).first()
    expect(Buffer.isBuffer(row.token_hash)).toBe(true)
    expect(row.token_hash.toString('utf8')).not.toBe(token)
    expect(row.token_hash).toEqual(createHash('sha256').update(token).digest())
    expect(row.lookup).toBe(token.slice(0, 16))
    const { rows } = await knex.raw(
      'SELECT count(*) AS n FROM api_tokens t WHERE t.idempresa = ? AND row_to_json(t)::text LIKE ?',
      [c.id, `%${token.slice(16)}%`],
    )
    expect(rows[0].n).toBe(0)
  })

  it('reports duplicates and unknown references as usage errors', async () => {
    const c = await company()
    expect(await usageError('company:create', '--id', String(c.id), '--name', 'Again')).toBe(
      `company ${c.id} already exists`,
    )
    expect(
      await usageError('center:create', '--company', String(c.id), '--code', 'ALM1', '--name', 'Again'),
    ).toBe(`center ALM1 already exists in company ${c.id}`)
    expect(
      await usageError('user:create', '--company', String(c.id), '--username', c.username.toUpperCase()),
    ).toBe(`username ${c.username.toUpperCase()} is taken`)
    // Usernames are one namespace across companies.
    const other = await company()
    expect(await usageError('user:create', '--company', String(other.id), '--username', c.username)).toBe(
      `username ${c.username} is taken`,
    )
    const missing = freshCompanyId()
    expect(
      await usageError('center:create', '--company', String(missing), '--code', 'X', '--name', 'X'),
    ).toBe(`company ${missing} does not exist`)
    expect(
      await usageError('user:create', '--company', String(missing), '--username', uniqueName('bob')),
    ).toBe(`company ${missing} does not exist`)
    expect(await usageError('token:create', '--username', uniqueName('ghost'))).toMatch(/^no user ghost_/)
    expect(await usageError('token:create', '--username', c.username, '--centers', 'ALM1,NOPE')).toBe(
      `--centers: not centers of company ${c.id}: NOPE`,
    )
    expect(await knex('centers').where({ idempresa: c.id }).count('* as n').first()).toEqual({ n: 2 })
    expect(await knex('api_tokens').where({ idempresa: c.id }).count('* as n').first()).toEqual({ n: 0 })
  })

  it('revokes a token once, keeping the first revocation time', async () => {
    const c = await company()
    await admin('token:create', '--username', c.username)
    const { id } = await knex('api_tokens').where({ idempresa: c.id }).first('id')
    const { err } = await admin('token:revoke', '--id', id)
    expect(err).toContain(`token ${id} revoked`)
    const first = (await knex('api_tokens').where({ id }).first('revoked_at')).revoked_at as Date
    expect(first).toBeInstanceOf(Date)
    await admin('token:revoke', '--id', id)
    expect((await knex('api_tokens').where({ id }).first('revoked_at')).revoked_at).toEqual(first)
    const unknown = '0190c5a0-0000-7000-8000-00000000dead'
    expect(await usageError('token:revoke', '--id', unknown)).toBe(`no token ${unknown}`)
  })

  it('stores scopes (null: all), which the authenticator carries; the database refuses unknown ones', async () => {
    const c = await company()
    const token = (
      await admin('token:create', '--username', c.username, '--scopes', 'appointments:read,comms:send')
    ).out.trim()
    const all = (await admin('token:create', '--username', c.username)).out.trim()
    const auth = new Authenticator(repo, { ttlMs: 0 })
    expect(await auth.authenticate({ 'x-service-token': token })).toMatchObject({
      ok: true,
      scopes: ['appointments:read', 'comms:send'],
    })
    // Without a list: every scope but signing clinical records and exporting a company's data, which a
    // token has only by naming them.
    expect(await auth.authenticate({ 'x-service-token': all })).toMatchObject({
      ok: true,
      scopes: SCOPES.filter((s) => s !== 'clinical:sign' && s !== 'fhir:export'),
    })
    const [row] = await knex('api_tokens').where({ idempresa: c.id }).whereNotNull('scopes')
    // The database keeps the shape of a scope (the list is services.json's alone)...
    for (const scopes of [[], ['patients delete'], ['Patients:Read'], ['patients:read', null], ['']])
      await expect(knex('api_tokens').where({ id: row.id }).update({ scopes })).rejects.toThrow(
        /api_tokens_scopes/,
      )
    // ...and a scope the list does not have, stored behind the CLI's back, grants nothing.
    await knex('api_tokens')
      .where({ id: row.id })
      .update({ scopes: ['patients:delete', 'comms:send'] })
    expect(
      await new Authenticator(repo, { ttlMs: 0 }).authenticate({ 'x-service-token': token }),
    ).toMatchObject({
      ok: true,
      scopes: ['comms:send'],
    })
    await knex('api_tokens')
      .where({ id: row.id })
      .update({ scopes: ['appointments:read', 'comms:send'] })
    const { out } = await admin('token:list', '--username', c.username)
    expect(
      out
        .split('\n')
        .slice(1, 3)
        .map((l) => l.split('\t')[3]),
    ).toEqual(['all but clinical:sign,fhir:export', 'appointments:read,comms:send'])
  })

  it('writes token.created and token.revoked to the outbox with the change, never the secret', async () => {
    const c = await company()
    const token = (
      await admin('token:create', '--username', c.username, '--scopes', 'audit:read', '--actor', 'ops-1')
    ).out.trim()
    const { id } = await knex('api_tokens').where({ idempresa: c.id }).first('id')
    await admin('token:revoke', '--id', id, '--actor', 'ops-2')
    await admin('token:revoke', '--id', id)
    const rows = await knex('outbox')
      .where({ idempresa: c.id })
      .whereIn('type', ['token.created', 'token.revoked'])
      .orderBy('id')
    expect(rows.map((r) => [r.type, r.payload.subject, r.payload.actorname, r.payload.data.actor])).toEqual([
      ['token.created', id, 'ops-1', 'ops-1'],
      ['token.revoked', id, 'ops-2', 'ops-2'],
    ])
    expect(rows[0].payload).toMatchObject({
      source: 'clinic/gateway',
      data: {
        id,
        username: c.username,
        scopes: ['audit:read'],
        centers: null,
        expires_at: expect.any(String),
      },
    })
    expect(JSON.stringify(rows)).not.toContain(token.slice(4))
  })

  it('writes no token and no event when the insert fails', async () => {
    const c = await company()
    const user = await repo.userByName(c.username)
    const { lookup, hash } = newToken()
    const event = makeEvent({
      type: 'token.created',
      source: 'clinic/gateway',
      companyId: c.id,
      data: {
        id: 'x',
        user_id: user!.id,
        username: c.username,
        name: null,
        centers: null,
        scopes: null,
        expires_at: null,
        actor: 'ops',
      },
    })
    await expect(
      repo.createToken(
        {
          companyId: c.id,
          userId: user!.id,
          name: null,
          lookup,
          hash,
          centers: null,
          scopes: ['no pe'],
          expiresAt: null,
        },
        [event],
      ),
    ).rejects.toThrow(/api_tokens_scopes/)
    expect(await knex('outbox').where({ event_id: event.id })).toEqual([])
  })

  it('authenticates against the database: ok, then last_used_at set, then refused once revoked', async () => {
    const c = await company()
    const token = (await admin('token:create', '--username', c.username, '--centers', 'ALM2')).out.trim()
    const { id } = await knex('api_tokens').where({ idempresa: c.id }).first('id')
    const auth = new Authenticator(repo, { ttlMs: 0 })
    const r = await auth.authenticate({ 'x-service-token': token })
    expect(r).toMatchObject({
      ok: true,
      principal: {
        companyId: c.id,
        username: c.username,
        tokenId: id,
        companyCenters: ['ALM1', 'ALM2'],
        allowedCenters: ['ALM2'],
      },
    })
    const used = await waitFor(
      async () => (await knex('api_tokens').where({ id }).first('last_used_at')).last_used_at as Date | null,
      {
        what: 'last_used_at',
      },
    )
    expect(Math.abs(used.getTime() - Date.now())).toBeLessThan(60_000)
    await admin('token:revoke', '--id', id)
    expect(await auth.authenticate({ 'x-service-token': token })).toEqual({
      ok: false,
      reason: 'revoked token',
      companyId: c.id,
    })
  })
})
