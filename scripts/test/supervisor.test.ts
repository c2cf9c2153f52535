import { spawn } from 'node:child_process'
import path from 'node:path'
import readline from 'node:readline'
import { waitFor } from '@clinic/platform/testing'

/**
 * scripts/supervisor.mjs for real: a driver process supervises a child that exits (code 3, then
 * killed by a signal) on its first runs and then stays up. The supervisor restarts it with growing
 * delays, logging each exit; SIGTERM to the driver stops the child and the driver at once.
 */
const supervisor = path.resolve(__dirname, '../supervisor.mjs')
const driver = `
import { spawn } from 'node:child_process'
import { supervise } from ${JSON.stringify(supervisor)}
const child = (attempt) => attempt === 1 ? 'process.exit(3)'
  : attempt < 4 ? "process.kill(process.pid, 'SIGKILL')"
  : "console.log('up', process.pid); process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1000)"
const stack = supervise([{ name: 'svc', start: (attempt) =>
  spawn(process.execPath, ['-e', child(attempt)], { stdio: ['ignore', 'inherit', 'inherit'] }) }],
  { restartMs: 100, maxRestartMs: 1000, stableMs: 60000, graceMs: 5000,
    log: (line, fields) => console.log(JSON.stringify({ line, ...fields })) })
process.on('SIGTERM', () => void stack.stop().then(() => { console.log('stopped'); process.exit(0) }))
`

it('restarts a dead process with growing delays and stops everything on SIGTERM', async () => {
  const p = spawn(process.execPath, ['--input-type=module', '-e', driver], {
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  const lines: string[] = []
  readline.createInterface({ input: p.stdout! }).on('line', (l) => lines.push(l))
  const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
    p.on('exit', (code) => resolve({ code, at: Date.now() })),
  )
  try {
    const up = await waitFor(() => lines.find((l) => l.startsWith('up ')), {
      timeoutMs: 20_000,
      what: 'the child to stay up',
    })
    const exits = lines.filter((l) => l.startsWith('{')).map((l) => JSON.parse(l))
    expect(exits.map((e) => [e.code, e.signal])).toEqual([
      [3, null],
      [null, 'SIGKILL'],
      [null, 'SIGKILL'],
    ])
    expect(exits.map((e) => e.delay_ms)).toEqual([100, 200, 400])
    expect(exits[0].line).toMatch(/^\[svc\] exited \(exit code 3\) after \d+ ms; restarting in 100 ms$/)

    const childPid = Number(up.split(' ')[1])
    const sentAt = Date.now()
    p.kill('SIGTERM')
    const { code, at } = await exited
    expect(code).toBe(0)
    expect(lines).toContain('stopped')
    expect(at - sentAt).toBeLessThan(5000)
    expect(() => process.kill(childPid, 0)).toThrow() // the child is gone too
  } finally {
    p.kill('SIGKILL')
  }
})
