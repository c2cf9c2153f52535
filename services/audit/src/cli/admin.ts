import { resolve } from 'node:path'
import { UsageError, parseCommand, runCli, stackDbRole, usageMessage, withAdminDb } from '@clinic/platform'
import { loadAuditDbConfig, loadAuditVerifyConfig } from '../config'
import { SCHEMA, WRITER_ROLE } from '../db/migrations'
import { chainReader, ensurePartitions } from '../db/repositories/audit-events-repository'
import { readDatabaseIdentity } from '../db/repositories/chain-heads-repository'
import { dropPartitionsBefore } from '../db/retention'
import { readCompanyCheckpoints, type CompanyCheckpoints } from '../checkpoints/checkpoint-file'
import { formatVerifyResult } from '../domain/verify-chain'
import { formatCheckpointNote, verifyCompanyAgainst } from '../domain/verify-checkpoint'

const USAGE = `usage: admin <command> [options]
  audit:verify --company N [--allow-unkeyed N] [--checkpoints FILE]
                                                recompute company N's hash chain and hold it
                                                against its highest signed checkpoint (FILE,
                                                default AUDIT_CHECKPOINT_FILE); with
                                                --allow-unkeyed, accept that many plain-hash rows
                                                recorded before keyed hashes at its start
  audit:partitions [--months-ahead N]           create the coming monthly partitions
  audit:retention --before YYYY-MM              drop whole partitions recorded before that month`

const out = (line: string) => process.stdout.write(`${line}\n`)
type Err = { write(s: string): unknown }
/** Refused checkpoint lines named one by one; more are counted. */
const REFUSED_SHOWN = 10
/** The service role (the stack's: DB_ROLE_PREFIX before it): verification and partitions need no more. */
const asWriter = (config: { DB_ROLE_PREFIX: string }) => ({
  schema: SCHEMA,
  role: stackDbRole(WRITER_ROLE, config.DB_ROLE_PREFIX),
  applicationName: 'audit-admin',
})

/** The value of a whole-number option, or a UsageError naming it. */
const wholeNumber = (value: string | undefined, name: string, max = Number.MAX_SAFE_INTEGER): number => {
  if (value === undefined || !/^\d{1,15}$/.test(value) || Number(value) > max)
    throw new UsageError(
      `--${name} must be a whole number${max < Number.MAX_SAFE_INTEGER ? ` up to ${max}` : ''}`,
    )
  return Number(value)
}

/**
 * Runs one command; returns the exit code (0 ok, 1 broken chain, 2 usage). A usage error is one
 * line on stderr (the whole usage only when no command is given), as in the gateway's admin CLI.
 */
export async function run(args: string[], err: Err = process.stderr): Promise<number> {
  try {
    return await runCommand(args, err)
  } catch (e) {
    if (!(e instanceof UsageError)) throw e
    err.write(usageMessage(e, USAGE))
    return 2
  }
}

async function runCommand(args: string[], err: Err): Promise<number> {
  const { command, values } = parseCommand(args, [
    'company',
    'months-ahead',
    'before',
    'allow-unkeyed',
    'checkpoints',
  ])
  if (!command) throw new UsageError('')
  switch (command) {
    case 'audit:verify': {
      if (values.company === undefined) throw new UsageError('audit:verify needs --company N')
      const company = wholeNumber(values.company, 'company', 2_147_483_647)
      const allowUnkeyed =
        values['allow-unkeyed'] === undefined ? 0 : wholeNumber(values['allow-unkeyed'], 'allow-unkeyed')
      if (values.checkpoints === '') throw new UsageError('--checkpoints needs a file')
      const config = loadAuditDbConfig()
      const { AUDIT_CHAIN_KEY, AUDIT_CHECKPOINT_FILE } = loadAuditVerifyConfig()
      const file = resolve(values.checkpoints ?? AUDIT_CHECKPOINT_FILE)
      // Verification only reads: it runs as the service role.
      return withAdminDb(config.DATABASE_URL, asWriter(config), async (knex) => {
        const db = await readDatabaseIdentity(knex)
        // The file before the heads: a checkpoint written meanwhile names no head beyond the one
        // verification reads then (heads only move forward), so it can never be a false alarm.
        const checkpoints = await readCompanyCheckpoints(file, AUDIT_CHAIN_KEY, company, db)
        reportCheckpointFile(err, file, checkpoints, db)
        const { result, note } = await verifyCompanyAgainst(
          chainReader(knex),
          company,
          checkpoints.head,
          AUDIT_CHAIN_KEY,
          allowUnkeyed,
        )
        // Not "intact" when only another database's checkpoints were there to hold it against:
        // the chain links, but a cut tail could not have shown.
        if (result.ok && checkpoints.valid === 0 && checkpoints.others.lines > 0)
          out(
            `ok: company ${company}, ${result.count} events, chain unbroken; ` +
              `not held against any checkpoint: those in ${file} are another database's`,
          )
        else out(formatVerifyResult(result))
        if (note) out(formatCheckpointNote(note))
        else if (result.ok && checkpoints.valid > 0)
          err.write(`note: no checkpoint names company ${company} (its events came later)\n`)
        return result.ok ? 0 : 1
      })
    }
    case 'audit:partitions': {
      const months = wholeNumber(values['months-ahead'] ?? '1', 'months-ahead', 24)
      const config = loadAuditDbConfig()
      return withAdminDb(config.DATABASE_URL, asWriter(config), async (knex) => {
        out(`created ${await ensurePartitions(knex, months)} partitions`)
        return 0
      })
    }
    case 'audit:retention': {
      const before = values.before
      if (!before) throw new UsageError('audit:retention needs --before YYYY-MM')
      if (!/^\d{4}-(0[1-9]|1[0-2])$/.test(before)) throw new UsageError('--before must be a month, YYYY-MM')
      const config = loadAuditDbConfig()
      // Dropping partitions is the owner's: the service role cannot.
      return withAdminDb(
        config.DATABASE_URL,
        { schema: SCHEMA, applicationName: 'audit-admin' },
        async (knex) => {
          const dropped = await dropPartitionsBefore(knex, before)
          out(dropped.length ? `dropped ${dropped.join(', ')}` : 'nothing to drop')
          return 0
        },
      )
    }
    default:
      throw new UsageError(`unknown command ${command}`)
  }
}

/**
 * Warnings on stderr (the verdict stays the one line on stdout): no checkpoint, so a cut tail
 * cannot show; lines refused (bad signature, torn), which are never trusted; lines of another
 * database (the file outlived its database, or two share it), which are ignored.
 */
function reportCheckpointFile(err: Err, file: string, c: CompanyCheckpoints, db: string): void {
  if (!c.exists) err.write(`warning: no checkpoint: tail truncation cannot be detected (no ${file})\n`)
  for (const r of c.refused.slice(0, REFUSED_SHOWN))
    err.write(`warning: ${file} line ${r.line}: ${r.reason}, not trusted\n`)
  if (c.refused.length > REFUSED_SHOWN)
    err.write(`warning: ${file}: ${c.refused.length - REFUSED_SHOWN} more lines not trusted\n`)
  if (c.others.lines > 0)
    err.write(
      `note: ${c.others.lines} checkpoint lines in ${file} are another database's ` +
        `(${c.others.databases.map((d) => d || 'unnamed').join(', ')}), ignored: this database is ${db}\n`,
    )
  if (c.exists && c.valid === 0)
    err.write(
      c.others.lines > 0
        ? `warning: no checkpoint of this database in ${file}: tail truncation cannot be detected\n`
        : `warning: no valid checkpoint in ${file}: tail truncation cannot be detected\n`,
    )
}

// A failure is 2 as for usage: 1 means a broken chain.
if (require.main === module) runCli(() => run(process.argv.slice(2)), USAGE, 2)
