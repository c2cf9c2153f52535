import { parseArgs } from 'node:util'

/** A mistake in how an admin command was called: one line on stderr, the usage, exit 2. */
export class UsageError extends Error {}

/**
 * `admin <command> --name value ...` for the admin CLIs: the command, then its string options.
 * Unknown options, missing values and stray arguments are UsageErrors naming the culprit.
 */
export function parseCommand(
  argv: string[],
  options: readonly string[],
): { command: string | undefined; values: Record<string, string | undefined> } {
  const [command, ...rest] = argv
  try {
    const { values } = parseArgs({
      args: rest,
      options: Object.fromEntries(options.map((name) => [name, { type: 'string' as const }])),
      strict: true,
    })
    return { command, values: values as Record<string, string | undefined> }
  } catch (err) {
    throw new UsageError((err as Error).message)
  }
}

/** The value of a required option. */
export function required(values: Record<string, string | undefined>, name: string): string {
  const value = values[name]
  if (value === undefined || value === '') throw new UsageError(`--${name} is required`)
  return value
}
