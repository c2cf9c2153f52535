import { userInfo } from 'node:os'
import {
  CENTER_CODE,
  UsageError,
  isUniqueViolation,
  parseCommand,
  required,
  runCli,
  uuidv7,
  withAdminDb,
} from '@clinic/platform'
import { loadAdminConfig } from '../config'
import { identityRepository, type IdentityRepository } from '../db/identity-repository'
import { SCHEMA } from '../db/migrations'
import { newToken, parseExpiry } from '../auth/tokens'
import { NAMED_ONLY, SCOPES, isScope } from '../scopes'
import { tokenEvent } from './token-events'

/**
 * The host system's administration area (DESIGN.md section 7). Results go to stdout (the token
 * alone for token:create, so `TOKEN=$(npm run -s admin -- token:create ...)` works); messages
 * to stderr.
 */
const USAGE = `usage: admin <command> [options]
  company:create --id <n> --name <name>
  center:create  --company <n> --code <code> --name <name>
  user:create    --company <n> --username <name>
  token:create   --username <name> [--centers A,B] [--scopes a:b,c:d] [--expires 90d|12h|<date>]
                 [--name <label>] [--actor <who>]
                 (scopes: ${SCOPES.join(',')}, or all; all but ${NAMED_ONLY.join(',')} when not given;
                 expires: at most TOKEN_MAX_EXPIRY_DAYS, 365 by default, which is also the default)
  token:list     --username <name>      (id, name, centers, scopes, created, expires, revoked, last used)
  token:revoke   --id <token id> [--actor <who>]
                 (token:create and token:revoke are on the audit trail, by --actor or the OS user)
  audit:verify   --company <n>          (served by the audit service's CLI)`

const positiveInt = (s: string, name: string): number => {
  if (!/^\d+$/.test(s) || Number(s) < 1 || Number(s) > 2_147_483_647)
    throw new UsageError(`--${name} must be a positive integer`)
  return Number(s)
}

type Values = Record<string, string | undefined>
interface Io {
  repo: IdentityRepository
  out: NodeJS.WritableStream
  err: NodeJS.WritableStream
  settings: AdminSettings
}

export interface AdminSettings {
  /** The longest a token may live, and what it gets without --expires (TOKEN_MAX_EXPIRY_DAYS). */
  maxExpiryDays: number
  /** Who runs the command when --actor is not given: the OS user. */
  osUser: string
}

async function createCompany(values: Values, { repo, err }: Io) {
  const id = positiveInt(required(values, 'id'), 'id')
  await repo.createCompany(id, required(values, 'name')).catch((e) => {
    throw isUniqueViolation(e) ? new UsageError(`company ${id} already exists`) : e
  })
  err.write(`company ${id} created\n`)
}

/** A foreign key of the identity schema refused the row: the company named does not exist. */
const noCompany = (company: number) => (e: unknown) => {
  if ((e as { code?: string }).code === '23503') throw new UsageError(`company ${company} does not exist`)
  throw e
}

async function createCenter(values: Values, { repo, err }: Io) {
  const company = positiveInt(required(values, 'company'), 'company')
  const code = required(values, 'code')
  if (!CENTER_CODE.test(code)) throw new UsageError('--code must be 1-10 letters, digits, _ or -')
  await repo.createCenter(company, code, required(values, 'name')).catch((e) => {
    if (isUniqueViolation(e)) throw new UsageError(`center ${code} already exists in company ${company}`)
    noCompany(company)(e)
  })
  err.write(`center ${code} created in company ${company}\n`)
}

async function createUser(values: Values, { repo, err }: Io) {
  const company = positiveInt(required(values, 'company'), 'company')
  const username = required(values, 'username')
  if (!/^[A-Za-z0-9._@-]{1,64}$/.test(username))
    throw new UsageError('--username must be 1-64 of letters, digits, . _ @ -')
  const id = await repo.createUser(company, username).catch((e) => {
    if (isUniqueViolation(e)) throw new UsageError(`username ${username} is taken`)
    return noCompany(company)(e)
  })
  err.write(`user ${username} (${id}) created in company ${company}\n`)
}

async function userNamed(repo: IdentityRepository, username: string) {
  const user = await repo.userByName(username)
  if (!user) throw new UsageError(`no user ${username}`)
  return user
}

/** `--centers A,B`: every code a center of the company; null (all centers) when not given. */
async function centersOption(repo: IdentityRepository, companyId: number, given: string | undefined) {
  if (given === undefined) return null
  const centers = given
    .split(',')
    .map((c) => c.trim())
    .filter(Boolean)
  const known = await repo.centerCodes(companyId)
  const unknown = centers.filter((c) => !known.includes(c))
  if (!centers.length || unknown.length)
    throw new UsageError(
      `--centers: not centers of company ${companyId}: ${unknown.join(', ') || '(none given)'}`,
    )
  return centers
}

/** How a token made without a list shows its scopes. */
const DEFAULT_LIST = `all but ${NAMED_ONLY.join(',')}`

/** `--scopes a,b`: known scopes (scopes.ts), each once; null (every scope but NAMED_ONLY) when not given. */
function scopesOption(given: string | undefined): string[] | null {
  if (given === undefined) return null
  // Every scope, the named-only ones included, without spelling them out.
  if (given.trim() === 'all') return [...SCOPES]
  const scopes = [...new Set(given.split(',').map((s) => s.trim()))].filter(Boolean)
  const unknown = scopes.filter((s) => !isScope(s))
  if (!scopes.length || unknown.length)
    throw new UsageError(
      `--scopes: unknown scopes: ${unknown.join(', ') || '(none given)'} (known: ${SCOPES.join(',')})`,
    )
  return scopes
}

/**
 * `--expires 90d|12h|<date>`: in the future and at most `maxDays` away; `maxDays` from now when not
 * given (DESIGN.md section 2: tokens expire; TOKEN_MAX_EXPIRY_DAYS).
 */
function expiresOption(given: string | undefined, maxDays: number, now = Date.now()): Date {
  const latest = now + maxDays * 86_400_000
  if (given === undefined) return new Date(latest)
  let expiresAt: Date
  try {
    expiresAt = parseExpiry(given, new Date(now))
  } catch (e) {
    throw new UsageError((e as Error).message)
  }
  if (expiresAt.getTime() <= now)
    throw new UsageError(`--expires ${given} is in the past: the token would never work`)
  if (expiresAt.getTime() > latest)
    throw new UsageError(
      `--expires ${given} is beyond the longest a token may live, ${maxDays} days (TOKEN_MAX_EXPIRY_DAYS)`,
    )
  return expiresAt
}

/** `--actor <who>`, else the OS user: who the audit trail says made or revoked a token. */
function actorOption(values: Values, settings: AdminSettings): string {
  const actor = values.actor ?? settings.osUser
  if (!/^[A-Za-z0-9._@:-]{1,64}$/.test(actor))
    throw new UsageError('--actor must be 1-64 of letters, digits, . _ @ : -')
  return actor
}

async function createToken(values: Values, { repo, out, err, settings }: Io) {
  const username = required(values, 'username')
  const scopes = scopesOption(values.scopes)
  const expiresAt = expiresOption(values.expires, settings.maxExpiryDays)
  const actor = actorOption(values, settings)
  const user = await userNamed(repo, username)
  const centers = await centersOption(repo, user.idempresa, values.centers)
  const { token, lookup, hash } = newToken()
  const t = { id: uuidv7(), name: values.name ?? null, centers, scopes, expires_at: expiresAt }
  const event = tokenEvent(
    'token.created',
    { ...t, idempresa: user.idempresa, user_id: user.id },
    user,
    actor,
  )
  await repo.createToken({ ...t, companyId: user.idempresa, userId: user.id, lookup, hash, expiresAt }, [
    event,
  ])
  out.write(`${token}\n`)
  const limits = [
    `company ${user.idempresa}`,
    ...(centers ? [`centers ${centers.join(',')}`] : []),
    `scopes ${scopes ? scopes.join(',') : DEFAULT_LIST}`,
    `expires ${expiresAt.toISOString()}`,
  ]
  err.write(`token ${t.id} for ${user.username} (${limits.join(', ')}); it is shown only once\n`)
}

async function listTokens(values: Values, { repo, out }: Io) {
  const user = await userNamed(repo, required(values, 'username'))
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : '-')
  out.write('id\tname\tcenters\tscopes\tcreated\texpires\trevoked\tlast_used\n')
  for (const t of await repo.tokensOfUser(user.id))
    out.write(
      `${[t.id, t.name ?? '-', t.centers?.join(',') ?? 'all', t.scopes?.join(',') ?? DEFAULT_LIST, iso(t.created_at), iso(t.expires_at), iso(t.revoked_at), iso(t.last_used_at)].join('\t')}\n`,
    )
}

async function revokeToken(values: Values, { repo, err, settings }: Io) {
  const id = required(values, 'id')
  if (!/^[0-9a-f-]{36}$/i.test(id)) throw new UsageError('--id must be a token id (UUID)')
  const actor = actorOption(values, settings)
  const done = await repo.revokeToken(id, (token) => [
    tokenEvent('token.revoked', token, { username: token.username }, actor),
  ])
  if (!done) throw new UsageError(`no token ${id}`)
  err.write(
    done.revokedNow
      ? `token ${id} revoked (gateways stop accepting it within their token cache time, 5 s by default)\n`
      : `token ${id} was revoked already\n`,
  )
}

const COMMANDS: Record<string, (values: Values, io: Io) => Promise<void>> = {
  'company:create': createCompany,
  'center:create': createCenter,
  'user:create': createUser,
  'token:create': createToken,
  'token:list': listTokens,
  'token:revoke': revokeToken,
}

export async function runAdmin(
  argv: string[],
  repo: IdentityRepository,
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
  settings: AdminSettings = { maxExpiryDays: 365, osUser: osUser() },
): Promise<void> {
  const { command, values } = parseCommand(argv, [
    'id',
    'name',
    'company',
    'code',
    'username',
    'centers',
    'scopes',
    'expires',
    'actor',
  ])
  const run = command ? COMMANDS[command] : undefined
  if (!run) throw new UsageError(command ? `unknown command ${command}` : 'no command given')
  await run(values, { repo, out, err, settings })
}

/** The OS user running the command (a container without a passwd entry: its uid). */
function osUser(): string {
  try {
    return userInfo().username
  } catch {
    return `uid-${process.getuid?.() ?? 'unknown'}`
  }
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2)
  if (!argv.length) throw new UsageError('') // the whole usage, no database needed
  const config = loadAdminConfig()
  const settings = { maxExpiryDays: config.TOKEN_MAX_EXPIRY_DAYS, osUser: osUser() }
  await withAdminDb(config.DATABASE_URL, { schema: SCHEMA, applicationName: 'identity-admin' }, (knex) =>
    runAdmin(argv, identityRepository(knex), process.stdout, process.stderr, settings),
  )
  return 0
}

if (require.main === module) runCli(main, USAGE)
