import {
  CENTER_CODE,
  UsageError,
  isUniqueViolation,
  parseCommand,
  required,
  runCli,
  withAdminDb,
} from '@clinic/platform'
import { loadAdminConfig } from '../config'
import { identityRepository, type IdentityRepository } from '../db/identity-repository'
import { SCHEMA } from '../db/migrations'
import { newToken, parseExpiry } from '../auth/tokens'

/**
 * The host system's administration area (DESIGN.md section 7). Results go to stdout (the token
 * alone for token:create, so `TOKEN=$(npm run -s admin -- token:create ...)` works); messages
 * to stderr.
 */
const USAGE = `usage: admin <command> [options]
  company:create --id <n> --name <name>
  center:create  --company <n> --code <code> --name <name>
  user:create    --company <n> --username <name>
  token:create   --username <name> [--centers A,B] [--expires 90d|12h|<date>] [--name <label>]
  token:list     --username <name>      (id, name, centers, created, expires, revoked, last used)
  token:revoke   --id <token id>
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

/** `--expires 90d|12h|<date>`: in the future, or null (no expiry) when not given. */
function expiresOption(given: string | undefined): Date | null {
  if (given === undefined) return null
  let expiresAt: Date
  try {
    expiresAt = parseExpiry(given)
  } catch (e) {
    throw new UsageError((e as Error).message)
  }
  if (expiresAt.getTime() <= Date.now())
    throw new UsageError(`--expires ${given} is in the past: the token would never work`)
  return expiresAt
}

async function createToken(values: Values, { repo, out, err }: Io) {
  const user = await userNamed(repo, required(values, 'username'))
  const centers = await centersOption(repo, user.idempresa, values.centers)
  const expiresAt = expiresOption(values.expires)
  const { token, lookup, hash } = newToken()
  const id = await repo.createToken({
    companyId: user.idempresa,
    userId: user.id,
    name: values.name ?? null,
    lookup,
    hash,
    centers,
    expiresAt,
  })
  out.write(`${token}\n`)
  err.write(
    `token ${id} for ${user.username} (company ${user.idempresa}${centers ? `, centers ${centers.join(',')}` : ''}${expiresAt ? `, expires ${expiresAt.toISOString()}` : ''}); it is shown only once\n`,
  )
}

async function listTokens(values: Values, { repo, out }: Io) {
  const user = await userNamed(repo, required(values, 'username'))
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : '-')
  out.write('id\tname\tcenters\tcreated\texpires\trevoked\tlast_used\n')
  for (const t of await repo.tokensOfUser(user.id))
    out.write(
      `${[t.id, t.name ?? '-', t.centers?.join(',') ?? 'all', iso(t.created_at), iso(t.expires_at), iso(t.revoked_at), iso(t.last_used_at)].join('\t')}\n`,
    )
}

async function revokeToken(values: Values, { repo, err }: Io) {
  const id = required(values, 'id')
  if (!/^[0-9a-f-]{36}$/i.test(id)) throw new UsageError('--id must be a token id (UUID)')
  if (!(await repo.revokeToken(id))) throw new UsageError(`no token ${id}`)
  err.write(
    `token ${id} revoked (gateways stop accepting it within their token cache time, 5 s by default)\n`,
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
): Promise<void> {
  const { command, values } = parseCommand(argv, [
    'id',
    'name',
    'company',
    'code',
    'username',
    'centers',
    'expires',
  ])
  const run = command ? COMMANDS[command] : undefined
  if (!run) throw new UsageError(command ? `unknown command ${command}` : 'no command given')
  await run(values, { repo, out, err })
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2)
  if (!argv.length) throw new UsageError('') // the whole usage, no database needed
  const config = loadAdminConfig()
  await withAdminDb(config.DATABASE_URL, { schema: SCHEMA, applicationName: 'identity-admin' }, (knex) =>
    runAdmin(argv, identityRepository(knex)),
  )
  return 0
}

if (require.main === module) runCli(main, USAGE)
