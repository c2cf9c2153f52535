import type { Knex } from 'knex'
import { UsageError } from './cli-args'
import { exitOnConfigError } from './config'
import { createDb } from './db'

/** One connection for one admin command, closed whatever the command does. */
export async function withAdminDb<T>(
  url: string,
  o: { schema: string; role?: string; applicationName: string },
  fn: (knex: Knex) => Promise<T>,
): Promise<T> {
  const knex = createDb(url, { ...o, poolMax: 1 })
  try {
    return await fn(knex)
  } finally {
    await knex.destroy()
  }
}

/**
 * What an admin CLI prints for a UsageError: one line (node:util's parseArgs explains some
 * mistakes over several), or the whole usage when no command was given (an empty message).
 */
export function usageMessage(err: UsageError, usage: string): string {
  const line = err.message.replace(/\s*\n\s*/g, ' ')
  return line === '' ? `${usage}\n` : `admin: ${line} (run admin alone for usage)\n`
}

/**
 * The entry of an admin CLI: exits with what `main` returns. A usage mistake is one line and exit
 * 2, bad configuration the line naming the variable (exit 78), anything else one line and exit
 * `failureCode`: never a stack trace.
 */
export function runCli(main: () => Promise<number>, usage: string, failureCode = 1): void {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      exitOnConfigError(err)
      const usageError = err instanceof UsageError
      process.stderr.write(
        usageError ? usageMessage(err, usage) : `admin failed: ${(err as Error).message}\n`,
      )
      process.exit(usageError ? 2 : failureCode)
    },
  )
}
