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

export async function runAdmin(
  argv: string[],
  repo: IdentityRepository,
  out = process.stdout,
  err = process.stderr,
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
  switch (command) {
    case 'company:create': {
      const id = positiveInt(required(values, 'id'), 'id')
      await repo.createCompany(id, required(values, 'name')).catch((e) => {
        throw isUniqueViolation(e) ? new UsageError(`company ${id} already exists`) : e
      })
      err.write(`company ${id} created\n`)
      return
    }
    case 'center:create': {
      const company = positiveInt(required(values, 'company'), 'company')
      const code = required(values, 'code')
      if (!CENTER_CODE.test(code)) throw new UsageError('--code must be 1-10 letters, digits, _ or -')
      await repo.createCenter(company, code, required(values, 'name')).catch((e) => {
        if (isUniqueViolation(e)) throw new UsageError(`center ${code} already exists in company ${company}`)
        if ((e as { code?: string }).code === '23503')
          throw new UsageError(`company ${company} does not exist`)
        throw e
      })
      err.write(`center ${code} created in company ${company}\n`)
      return
    }
    case 'user:create': {
      const company = positiveInt(required(values, 'company'), 'company')
      const username = required(values, 'username')
      if (!/^[A-Za-z0-9._@-]{1,64}$/.test(username))
        throw new UsageError('--username must be 1-64 of letters, digits, . _ @ -')
      const id = await repo.createUser(company, username).catch((e) => {
        if (isUniqueViolation(e)) throw new UsageError(`username ${username} is taken`)
        if ((e as { code?: string }).code === '23503')
          throw new UsageError(`company ${company} does not exist`)
        throw e
      })
      err.write(`user ${username} (${id}) created in company ${company}\n`)
      return
    }
    case 'token:create': {
      const username = required(values, 'username')
      const user = await repo.userByName(username)
      if (!user) throw new UsageError(`no user ${username}`)
      let centers: string[] | null = null
      if (values.centers !== undefined) {
        centers = values.centers
          .split(',')
          .map((c) => c.trim())
          .filter(Boolean)
        const known = await repo.centerCodes(user.idempresa)
        const unknown = centers.filter((c) => !known.includes(c))
        if (!centers.length || unknown.length)
          throw new UsageError(
            `--centers: not centers of company ${user.idempresa}: ${unknown.join(', ') || '(none given)'}`,
          )
      }
      let expiresAt: Date | null = null
      if (values.expires !== undefined) {
        try {
          expiresAt = parseExpiry(values.expires)
        } catch (e) {
          throw new UsageError((e as Error).message)
        }
        if (expiresAt.getTime() <= Date.now())
          throw new UsageError(`--expires ${values.expires} is in the past: the token would never work`)
      }
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
      return
    }
    case 'token:list': {
      const username = required(values, 'username')
      const user = await repo.userByName(username)
      if (!user) throw new UsageError(`no user ${username}`)
      const iso = (d: Date | null) => (d ? new Date(d).toISOString() : '-')
      out.write('id\tname\tcenters\tcreated\texpires\trevoked\tlast_used\n')
      for (const t of await repo.tokensOfUser(user.id))
        out.write(
          `${[t.id, t.name ?? '-', t.centers?.join(',') ?? 'all', iso(t.created_at), iso(t.expires_at), iso(t.revoked_at), iso(t.last_used_at)].join('\t')}\n`,
        )
      return
    }
    case 'token:revoke': {
      const id = required(values, 'id')
      if (!/^[0-9a-f-]{36}$/i.test(id)) throw new UsageError('--id must be a token id (UUID)')
      if (!(await repo.revokeToken(id))) throw new UsageError(`no token ${id}`)
      err.write(
        `token ${id} revoked (gateways stop accepting it within their token cache time, 5 s by default)\n`,
      )
      return
    }
    default:
      throw new UsageError(command ? `unknown command ${command}` : 'no command given')
  }
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
