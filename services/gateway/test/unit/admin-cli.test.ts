import { UsageError } from '@clinic/platform'
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { runAdmin, type AdminSettings } from '../../src/cli/admin'
import { SCOPES } from '../../src/scopes'
import { FakeIdentityRepository, Sink } from './fake-identity-repository'

type Out = Parameters<typeof runAdmin>[2]
type Err = Parameters<typeof runAdmin>[3]

const SETTINGS: AdminSettings = { maxExpiryDays: 365, osUser: 'ops-carla' }

async function admin(repo: FakeIdentityRepository, ...argv: string[]) {
  return adminWith(SETTINGS, repo, ...argv)
}

async function adminWith(settings: AdminSettings, repo: FakeIdentityRepository, ...argv: string[]) {
  const out = new Sink()
  const err = new Sink()
  await runAdmin(argv, repo, out as unknown as Out, err as unknown as Err, settings)
  return { out: out.text, err: err.text }
}

/** The CLI maps a UsageError to exit code 2 with the usage text; anything else is a crash (exit 1). */
async function usageError(repo: FakeIdentityRepository, ...argv: string[]): Promise<string> {
  const out = new Sink()
  const caught = await runAdmin(
    argv,
    repo,
    out as unknown as Out,
    new Sink() as unknown as Err,
    SETTINGS,
  ).then(
    () => null,
    (e: Error) => e,
  )
  expect(caught).toBeInstanceOf(Error)
  expect(caught!.constructor.name).toBe('UsageError')
  expect(out.text).toBe('')
  return caught!.message
}

async function seeded() {
  const repo = new FakeIdentityRepository()
  await admin(repo, 'company:create', '--id', '7', '--name', 'Clinica Siete')
  await admin(repo, 'center:create', '--company', '7', '--code', 'ALM1', '--name', 'Centro 1')
  await admin(repo, 'center:create', '--company', '7', '--code', 'ALM2', '--name', 'Centro 2')
  await admin(repo, 'user:create', '--company', '7', '--username', 'alice')
  return repo
}

describe('runAdmin', () => {
  it('creates a company, centers and a user, reporting on stderr only', async () => {
    const repo = new FakeIdentityRepository()
    expect(await admin(repo, 'company:create', '--id', '7', '--name', 'Clinica Siete')).toEqual({
      out: '',
      err: 'company 7 created\n',
    })
    expect(
      await admin(repo, 'center:create', '--company', '7', '--code', 'ALM1', '--name', 'Centro 1'),
    ).toEqual({
      out: '',
      err: 'center ALM1 created in company 7\n',
    })
    const r = await admin(repo, 'user:create', '--company', '7', '--username', 'alice')
    expect(r.out).toBe('')
    expect(r.err).toMatch(/^user alice \([0-9a-f-]{36}\) created in company 7\n$/)
    expect(repo.companies.get(7)).toBe('Clinica Siete')
    expect(repo.centers).toEqual([{ idempresa: 7, code: 'ALM1', name: 'Centro 1' }])
    expect(repo.users).toEqual([expect.objectContaining({ idempresa: 7, username: 'alice' })])
  })

  it('token:create prints the token alone on stdout and stores only its hash', async () => {
    const repo = await seeded()
    const { out, err } = await admin(
      repo,
      'token:create',
      '--username',
      'Alice',
      '--centers',
      'ALM2, ALM1',
      '--expires',
      '90d',
      '--name',
      'ci',
    )
    expect(out).toMatch(/^csk_[A-Za-z0-9_-]{43}\n$/)
    const token = out.trim()
    expect(repo.tokens).toHaveLength(1)
    const stored = repo.tokens[0]!
    expect(stored).toMatchObject({
      idempresa: 7,
      user_id: repo.users[0]!.id,
      name: 'ci',
      lookup: token.slice(0, 16),
      centers: ['ALM2', 'ALM1'],
    })
    expect(stored.token_hash).toEqual(createHash('sha256').update(token).digest())
    const days = (stored.expires_at!.getTime() - Date.now()) / 86_400_000
    expect(days).toBeGreaterThan(89.9)
    expect(days).toBeLessThanOrEqual(90)
    expect(err).toContain(
      `token ${stored.id} for alice (company 7, centers ALM2,ALM1, scopes all but clinical:sign,fhir:export, expires `,
    )
    expect(err).not.toContain(token)
  })

  it('token:create without --centers, --scopes or --expires: every center and scope, expiring after TOKEN_MAX_EXPIRY_DAYS', async () => {
    const repo = await seeded()
    await admin(repo, 'token:create', '--username', 'alice')
    expect(repo.tokens[0]).toMatchObject({ centers: null, scopes: null, name: null })
    const days = (repo.tokens[0]!.expires_at!.getTime() - Date.now()) / 86_400_000
    expect(days).toBeGreaterThan(364.9)
    expect(days).toBeLessThanOrEqual(365)
    await adminWith({ ...SETTINGS, maxExpiryDays: 30 }, repo, 'token:create', '--username', 'alice')
    const shorter = (repo.tokens[1]!.expires_at!.getTime() - Date.now()) / 86_400_000
    expect(shorter).toBeGreaterThan(29.9)
    expect(shorter).toBeLessThanOrEqual(30)
  })

  it.each([
    [['company:create', '--name', 'X'], '--id is required'],
    [['company:create', '--id', '8'], '--name is required'],
    [['company:create', '--id', '8', '--name', ''], '--name is required'],
    [['center:create', '--company', '7', '--name', 'C'], '--code is required'],
    [['user:create', '--username', 'bob'], '--company is required'],
    [['token:create'], '--username is required'],
    [['token:revoke'], '--id is required'],
  ])('%j is a usage error: %s', async (argv, message) => {
    const repo = await seeded()
    expect(await usageError(repo, ...argv)).toBe(message)
  })

  it.each(['0', 'abc', '1.5', '-3', '2147483648', '7 '])('refuses --id %j', async (id) => {
    const repo = new FakeIdentityRepository()
    expect(await usageError(repo, 'company:create', `--id=${id}`, '--name', 'X')).toBe(
      '--id must be a positive integer',
    )
    expect(await usageError(repo, 'user:create', `--company=${id}`, '--username', 'bob')).toBe(
      '--company must be a positive integer',
    )
    expect(repo.companies.size).toBe(0)
  })

  it('refuses duplicates and unknown companies with a clear message', async () => {
    const repo = await seeded()
    expect(await usageError(repo, 'company:create', '--id', '7', '--name', 'Again')).toBe(
      'company 7 already exists',
    )
    expect(
      await usageError(repo, 'center:create', '--company', '7', '--code', 'ALM1', '--name', 'Again'),
    ).toBe('center ALM1 already exists in company 7')
    expect(await usageError(repo, 'center:create', '--company', '99', '--code', 'X', '--name', 'X')).toBe(
      'company 99 does not exist',
    )
    expect(await usageError(repo, 'user:create', '--company', '7', '--username', 'ALICE')).toBe(
      'username ALICE is taken',
    )
    expect(await usageError(repo, 'user:create', '--company', '99', '--username', 'bob')).toBe(
      'company 99 does not exist',
    )
  })

  it('refuses malformed center codes and usernames', async () => {
    const repo = await seeded()
    expect(
      await usageError(repo, 'center:create', '--company', '7', '--code', 'ELEVENCHARS', '--name', 'X'),
    ).toMatch(/^--code must be/)
    expect(await usageError(repo, 'center:create', '--company', '7', '--code', 'A B', '--name', 'X')).toMatch(
      /^--code must be/,
    )
    expect(await usageError(repo, 'user:create', '--company', '7', '--username', 'bob smith')).toMatch(
      /^--username must be/,
    )
    expect(repo.centers).toHaveLength(2)
    expect(repo.users).toHaveLength(1)
  })

  it('token:create refuses an unknown user, unknown centers and a bad --expires, creating nothing', async () => {
    const repo = await seeded()
    await admin(repo, 'company:create', '--id', '8', '--name', 'Other')
    await admin(repo, 'center:create', '--company', '8', '--code', 'OTHER', '--name', 'Other center')
    expect(await usageError(repo, 'token:create', '--username', 'ghost')).toBe('no user ghost')
    expect(
      await usageError(repo, 'token:create', '--username', 'alice', '--centers', 'ALM1,NOPE,OTHER'),
    ).toBe('--centers: not centers of company 7: NOPE, OTHER')
    expect(await usageError(repo, 'token:create', '--username', 'alice', '--centers', ' , ')).toBe(
      '--centers: not centers of company 7: (none given)',
    )
    expect(await usageError(repo, 'token:create', '--username', 'alice', '--expires', 'tomorrow')).toMatch(
      /^--expires must be like 90d, 12h, 30m or a date/,
    )
    expect(await usageError(repo, 'token:create', '--username', 'alice', '--expires', '2027-02-30')).toMatch(
      /^--expires must be/,
    )
    expect(await usageError(repo, 'token:create', '--username', 'alice', '--expires', '2020-01-01')).toBe(
      '--expires 2020-01-01 is in the past: the token would never work',
    )
    expect(repo.tokens).toHaveLength(0)
  })

  it('token:revoke revokes by id and refuses malformed or unknown ids', async () => {
    const repo = await seeded()
    await admin(repo, 'token:create', '--username', 'alice')
    const id = repo.tokens[0]!.id
    expect(await usageError(repo, 'token:revoke', '--id', 'nope')).toBe('--id must be a token id (UUID)')
    expect(await usageError(repo, 'token:revoke', '--id', '0190c5a0-0000-7000-8000-00000000dead')).toBe(
      'no token 0190c5a0-0000-7000-8000-00000000dead',
    )
    expect(repo.tokens[0]!.revoked_at).toBeNull()
    const { out, err } = await admin(repo, 'token:revoke', '--id', id)
    expect(out).toBe('')
    expect(err).toContain(`token ${id} revoked`)
    expect(repo.tokens[0]!.revoked_at).toBeInstanceOf(Date)
  })

  it('token:list shows a user’s tokens (never the secret), newest first', async () => {
    const repo = await seeded()
    const { out: first } = await admin(repo, 'token:create', '--username', 'alice', '--name', 'portal')
    await admin(repo, 'token:create', '--username', 'alice', '--centers', 'ALM1', '--expires', '30d')
    await admin(repo, 'token:revoke', '--id', repo.tokens[0]!.id)
    const { out } = await admin(repo, 'token:list', '--username', 'ALICE')
    const [header, newest, oldest, ...rest] = out.trim().split('\n')
    expect(rest).toEqual([])
    expect(header).toBe('id\tname\tcenters\tscopes\tcreated\texpires\trevoked\tlast_used')
    expect(newest!.split('\t').slice(0, 4)).toEqual([
      repo.tokens[1]!.id,
      '-',
      'ALM1',
      'all but clinical:sign,fhir:export',
    ])
    expect(newest!.split('\t')[6]).toBe('-')
    expect(oldest!.split('\t').slice(0, 4)).toEqual([
      repo.tokens[0]!.id,
      'portal',
      'all',
      'all but clinical:sign,fhir:export',
    ])
    expect(oldest!.split('\t')[6]).not.toBe('-') // revoked
    expect(out).not.toContain(first.trim())
    expect(await usageError(repo, 'token:list', '--username', 'ghost')).toBe('no user ghost')
  })

  it('refuses unknown and missing commands, and unknown options', async () => {
    const repo = new FakeIdentityRepository()
    expect(await usageError(repo, 'company:delete', '--id', '7')).toBe('unknown command company:delete')
    expect(await usageError(repo)).toBe('no command given')
    await expect(
      runAdmin(['company:create', '--id', '7', '--name', 'X', '--force'], repo),
    ).rejects.toMatchObject({ constructor: UsageError, message: "Unknown option '--force'" })
    expect(repo.companies.size).toBe(0)
  })
})

describe('token scopes (DESIGN.md section 13)', () => {
  it('token:create --scopes stores the scopes given, once each, and token:list shows them', async () => {
    const repo = await seeded()
    const { err } = await admin(
      repo,
      'token:create',
      '--username',
      'alice',
      '--scopes',
      'patients:read, appointments:read,patients:read',
    )
    expect(repo.tokens[0]!.scopes).toEqual(['patients:read', 'appointments:read'])
    expect(err).toContain('scopes patients:read,appointments:read, expires ')
    await admin(repo, 'token:create', '--username', 'alice', '--scopes', SCOPES.join(','))
    expect(repo.tokens[1]!.scopes).toEqual([...SCOPES])
    const { out } = await admin(repo, 'token:list', '--username', 'alice')
    const rows = out.trim().split('\n').slice(1)
    expect(rows.map((r) => r.split('\t')[3])).toEqual([SCOPES.join(','), 'patients:read,appointments:read'])
  })

  it('gives every scope, clinical:sign included, to --scopes all', async () => {
    const repo = await seeded()
    await admin(repo, 'token:create', '--username', 'alice', '--scopes', 'all')
    expect(repo.tokens[0]!.scopes).toEqual([...SCOPES])
    expect(repo.tokens[0]!.scopes).toContain('clinical:sign')
  })

  it.each([
    ['patients:read,patients:delete', 'patients:delete'],
    ['admin', 'admin'],
    ['PATIENTS:READ', 'PATIENTS:READ'],
    [' , ', '(none given)'],
  ])('refuses --scopes %j in one line, creating nothing', async (given, named) => {
    const repo = await seeded()
    const message = await usageError(repo, 'token:create', '--username', 'alice', '--scopes', given)
    expect(message).toBe(`--scopes: unknown scopes: ${named} (known: ${SCOPES.join(',')})`)
    expect(message).not.toContain('\n')
    expect(repo.tokens).toHaveLength(0)
    expect(repo.events).toHaveLength(0)
  })
})

describe('token lifetime (TOKEN_MAX_EXPIRY_DAYS)', () => {
  it('refuses --expires beyond the longest a token may live, creating nothing', async () => {
    const repo = await seeded()
    expect(await usageError(repo, 'token:create', '--username', 'alice', '--expires', '366d')).toBe(
      '--expires 366d is beyond the longest a token may live, 365 days (TOKEN_MAX_EXPIRY_DAYS)',
    )
    const far = new Date(Date.now() + 400 * 86_400_000).toISOString()
    expect(await usageError(repo, 'token:create', '--username', 'alice', '--expires', far)).toMatch(
      /is beyond the longest a token may live/,
    )
    expect(repo.tokens).toHaveLength(0)
    await admin(repo, 'token:create', '--username', 'alice', '--expires', '365d')
    expect(repo.tokens).toHaveLength(1)
  })
})

describe('token:create and token:revoke on the audit trail', () => {
  it('token:create writes token.created with the token and who ran the command, never the secret', async () => {
    const repo = await seeded()
    const { out } = await admin(
      repo,
      'token:create',
      '--username',
      'alice',
      '--centers',
      'ALM1',
      '--scopes',
      'comms:send',
      '--name',
      'portal',
    )
    const t = repo.tokens[0]!
    expect(repo.events).toHaveLength(1)
    const [event] = repo.events
    expect(event).toMatchObject({
      type: 'token.created',
      source: 'clinic/gateway',
      idempresa: 7,
      subject: t.id,
      actorname: 'ops-carla',
      data: {
        id: t.id,
        user_id: t.user_id,
        username: 'alice',
        name: 'portal',
        centers: ['ALM1'],
        scopes: ['comms:send'],
        expires_at: t.expires_at!.toISOString(),
        actor: 'ops-carla',
      },
    })
    const text = JSON.stringify(event)
    expect(text).not.toContain(out.trim())
    expect(text).not.toContain(out.trim().slice(4, 20))
    expect(text).not.toContain(t.token_hash.toString('base64'))
    expect(text).not.toContain(t.token_hash.toString('hex'))
  })

  it('token:revoke writes token.revoked once, naming --actor when given', async () => {
    const repo = await seeded()
    await admin(repo, 'token:create', '--username', 'alice')
    const id = repo.tokens[0]!.id
    const { err } = await admin(repo, 'token:revoke', '--id', id, '--actor', 'security@clinic')
    expect(err).toContain(`token ${id} revoked`)
    expect(repo.events.map((e) => e.type)).toEqual(['token.created', 'token.revoked'])
    expect(repo.events[1]).toMatchObject({
      idempresa: 7,
      subject: id,
      actorname: 'security@clinic',
      data: { id, username: 'alice', scopes: null, centers: null, actor: 'security@clinic' },
    })
    // Revoking again changes nothing, and writes nothing.
    expect((await admin(repo, 'token:revoke', '--id', id)).err).toBe(`token ${id} was revoked already\n`)
    expect(repo.events).toHaveLength(2)
  })

  it('refuses a malformed --actor', async () => {
    const repo = await seeded()
    expect(await usageError(repo, 'token:create', '--username', 'alice', '--actor', 'a b')).toMatch(
      /^--actor must be/,
    )
    expect(repo.tokens).toHaveLength(0)
  })
})

describe('the admin command', () => {
  it('answers a usage error in one line on stderr, exit code 2, no stack trace', () => {
    const cli = require.resolve('../../dist/cli/admin.js')
    const run = spawnSync(process.execPath, [cli, 'token:revoke', '--id', 'nope'], {
      env: { ...process.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/postgres' },
      encoding: 'utf8',
    })
    expect(run.status).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr).toBe('admin: --id must be a token id (UUID) (run admin alone for usage)\n')
  })

  it('answers an unknown scope in one line, exit code 2, before it reads the database', () => {
    const cli = require.resolve('../../dist/cli/admin.js')
    const run = spawnSync(
      process.execPath,
      [cli, 'token:create', '--username', 'alice', '--scopes', 'patients:read,everything'],
      {
        // Nothing listens there: the scope is refused before any connection is tried.
        env: { ...process.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nowhere' },
        encoding: 'utf8',
      },
    )
    expect(run.status).toBe(2)
    expect(run.stdout).toBe('')
    expect(run.stderr).toBe(
      `admin: --scopes: unknown scopes: everything (known: ${SCOPES.join(',')}) (run admin alone for usage)\n`,
    )
  })
})
