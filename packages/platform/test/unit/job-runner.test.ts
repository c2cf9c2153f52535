import pino from 'pino'
import { JobRunner, type JobRunnerOptions } from '../../src/job-runner'

const log = pino({ level: 'silent' })

/** A runner of plain functions: what a worker's claim and job would do. */
class Runner<J> extends JobRunner<J> {
  constructor(
    private readonly fns: {
      claim(limit: number): Promise<J[]>
      run(job: J): Promise<void>
    } & JobRunnerOptions,
  ) {
    super(fns)
  }
  protected claimJobs(limit: number) {
    return this.fns.claim(limit)
  }
  protected runJob(job: J) {
    return this.fns.run(job)
  }
}

describe('JobRunner', () => {
  it('runs every claimed job, never more at once than its concurrency, and claims again as slots free', async () => {
    const queue = Array.from({ length: 25 }, (_, i) => i)
    let running = 0
    let most = 0
    const done: number[] = []
    const runner = new Runner<number>({
      name: 'numbers',
      claim: async (limit) => queue.splice(0, limit),
      run: async (n) => {
        running++
        most = Math.max(most, running)
        await new Promise((r) => setTimeout(r, n % 3))
        running--
        done.push(n)
      },
      concurrency: 4,
      pollMs: 3_600_000,
      log,
    })
    runner.start()
    await runner.idle()
    expect(done.sort((a, b) => a - b)).toEqual(Array.from({ length: 25 }, (_, i) => i))
    expect(most).toBe(4)
    await runner.stop()
  })

  it('keeps going after a failed claim or job, and claims nothing once stopped', async () => {
    let claims = 0
    const ran: number[] = []
    const runner = new Runner<number>({
      name: 'numbers',
      claim: async () => {
        claims++
        if (claims === 1) throw new Error('database away')
        return claims === 2 ? [1, 2] : []
      },
      run: async (n) => {
        ran.push(n)
        if (n === 1) throw new Error('job failed')
      },
      concurrency: 2,
      pollMs: 3_600_000,
      log,
    })
    runner.wake()
    await runner.idle()
    runner.wake()
    await runner.idle()
    expect(ran).toEqual([1, 2])
    await runner.stop()
    const before = claims
    runner.wake()
    await runner.idle()
    expect(claims).toBe(before)
  })
})

describe('JobRunner minClaim', () => {
  it('claims again only when that many slots are free, while jobs are in flight', async () => {
    const queue = Array.from({ length: 40 }, (_, i) => i)
    const limits: number[] = []
    const runner = new Runner<number>({
      name: 'numbers',
      claim: async (limit) => {
        limits.push(limit)
        return queue.splice(0, limit)
      },
      run: (n) => new Promise((r) => setTimeout(r, 1 + (n % 4))),
      concurrency: 8,
      minClaim: 4,
      pollMs: 3_600_000,
      log,
    })
    runner.wake()
    await runner.idle()
    expect(queue).toEqual([])
    // The first claim fills every slot; later ones wait for at least 4 free.
    expect(limits[0]).toBe(8)
    expect(limits.every((l) => l >= 4)).toBe(true)
    await runner.stop()
  })
})
