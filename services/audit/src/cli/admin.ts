import { createDb, exitOnConfigError } from '@clinic/platform'
import { loadAuditDbConfig } from '../config'
import { SCHEMA, WRITER_ROLE } from '../db/migrations'
import { chainReader, ensurePartitions } from '../db/repositories/audit-events'
import { dropPartitionsBefore } from '../db/retention'
import { formatVerifyResult } from '../domain/verify-chain'
import { verifyCompany } from '../domain/verify-company'

const USAGE = `usage:
  admin audit:verify --company N             recompute company N's hash chain
  admin audit:partitions [--months-ahead N]  create the coming monthly partitions
  admin audit:retention --before YYYY-MM     drop whole partitions recorded before that month
`

function option(args: string[], name: string): string | undefined {
  const i = args.indexOf(`--${name}`)
  if (i >= 0) return args[i + 1]
  const inline = args.find((a) => a.startsWith(`--${name}=`))
  return inline?.slice(name.length + 3)
}

const out = (line: string) => process.stdout.write(`${line}\n`)
const fail = (line: string, code = 2): number => {
  process.stderr.write(`${line}\n`)
  return code
}

/** Runs one command; returns the exit code (0 ok, 1 broken chain, 2 usage or error). */
export async function run(args: string[]): Promise<number> {
  const [command, ...rest] = args
  if (!command || !command.startsWith('audit:')) return fail(USAGE)
  const config = loadAuditDbConfig()
  switch (command) {
    case 'audit:verify': {
      const company = option(rest, 'company')
      if (!company || !/^\d+$/.test(company)) return fail(`audit:verify needs --company N\n${USAGE}`)
      // Verification only reads: it runs as the service role.
      const knex = createDb(config.DATABASE_URL, { schema: SCHEMA, role: WRITER_ROLE, poolMax: 1 })
      try {
        const result = await verifyCompany(chainReader(knex), Number(company))
        out(formatVerifyResult(result))
        return result.ok ? 0 : 1
      } finally {
        await knex.destroy()
      }
    }
    case 'audit:partitions': {
      const months = Number(option(rest, 'months-ahead') ?? '1')
      if (!Number.isInteger(months) || months < 0 || months > 24)
        return fail('--months-ahead must be 0 to 24')
      const knex = createDb(config.DATABASE_URL, { schema: SCHEMA, role: WRITER_ROLE, poolMax: 1 })
      try {
        out(`created ${await ensurePartitions(knex, months)} partitions`)
        return 0
      } finally {
        await knex.destroy()
      }
    }
    case 'audit:retention': {
      const before = option(rest, 'before')
      if (!before) return fail(`audit:retention needs --before YYYY-MM\n${USAGE}`)
      // Dropping partitions is the owner's: the service role cannot.
      const knex = createDb(config.DATABASE_URL, { schema: SCHEMA, poolMax: 1 })
      try {
        const dropped = await dropPartitionsBefore(knex, before)
        out(dropped.length ? `dropped ${dropped.join(', ')}` : 'nothing to drop')
        return 0
      } finally {
        await knex.destroy()
      }
    }
    default:
      return fail(`unknown command ${command}\n${USAGE}`)
  }
}

if (require.main === module) {
  run(process.argv.slice(2))
    .then((code) => process.exit(code))
    .catch((err) => {
      exitOnConfigError(err)
      process.stderr.write(`admin failed: ${(err as Error).message}\n`)
      process.exit(2)
    })
}
