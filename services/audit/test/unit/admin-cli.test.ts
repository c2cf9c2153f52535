import { run } from '../../src/cli/admin'

/** Runs the audit admin CLI with a mistake in how it is called: no database is reached. */
async function usage(...args: string[]): Promise<{ code: number; err: string }> {
  let err = ''
  const code = await run(args, { write: (s: string) => (err += s) })
  return { code, err }
}

describe('the audit admin command', () => {
  it.each([
    [['audit:verify'], 'audit:verify needs --company N'],
    [['audit:verify', '--company', 'seven'], '--company must be a whole number up to 2147483647'],
    [['audit:verify', '--company', '7', '--allow-unkeyed=-1'], '--allow-unkeyed must be a whole number'],
    [
      ['audit:verify', '--company', '7', '--allow-unkeyed', '-1'],
      "Option '--allow-unkeyed' argument is ambiguous.",
    ],
    [['audit:verify', '--compnay', '7'], "Unknown option '--compnay'"],
    [['audit:verify', '--company', '7', '--checkpoints='], '--checkpoints needs a file'],
    [['audit:partitions', '--months-ahead', '25'], '--months-ahead must be a whole number up to 24'],
    [['audit:retention'], 'audit:retention needs --before YYYY-MM'],
    [['audit:retention', '--before', '2026-13'], '--before must be a month, YYYY-MM'],
    [['audit:nothing'], 'unknown command audit:nothing'],
    [['token:create'], 'unknown command token:create'],
  ])('%j is a one-line usage error (exit 2): %s', async (args, message) => {
    const { code, err } = await usage(...args)
    expect(code).toBe(2)
    expect(err.split('\n')).toEqual([expect.stringContaining(message), ''])
    expect(err).toMatch(/^admin: .* \(run admin alone for usage\)\n$/)
    expect(err).not.toMatch(/^\s+at /m)
  })

  it('prints the whole usage when no command is given', async () => {
    const { code, err } = await usage()
    expect(code).toBe(2)
    expect(err).toMatch(/^usage: admin <command>/)
    for (const command of [
      'audit:verify',
      'audit:partitions',
      'audit:retention',
      '--allow-unkeyed',
      '--checkpoints',
    ])
      expect(err).toContain(command)
  })
})
