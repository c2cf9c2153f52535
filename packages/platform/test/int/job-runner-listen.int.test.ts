import pg from 'pg'
import { waitFor } from '../../src/testing'
import { JobRunner } from '../../src/job-runner'
import { databaseUrl, testLog } from './helpers'

/** A runner that only counts its claims: each pass of its loop is one. */
class Counting extends JobRunner<never> {
  claims = 0
  protected async claimJobs(): Promise<never[]> {
    this.claims++
    return []
  }
  protected async runJob(): Promise<void> {}
}

test('a NOTIFY on its channel wakes the runner at once (its poll is a minute away); stop ends the LISTEN', async () => {
  const channel = `job_runner_test_${process.pid}_${Date.now()}`
  const name = `job-runner-listen-${process.pid}`
  const runner = new Counting({
    name: 'counting',
    concurrency: 1,
    pollMs: 60_000,
    log: testLog('job-runner'),
    listen: { databaseUrl: databaseUrl(), channel, name },
  })
  const db = new pg.Client({ connectionString: databaseUrl() })
  await db.connect()
  try {
    runner.start()
    await waitFor(() => runner.claims === 1 || null, { what: 'the first pass' })
    // The LISTEN comes up on its own connection: notified until a pass follows.
    await waitFor(
      async () => {
        await db.query(`NOTIFY ${channel}`)
        return runner.claims > 1 || null
      },
      { intervalMs: 100, what: 'a pass woken by NOTIFY' },
    )
    await runner.stop()
    // Its connection closed (the backend leaves pg_stat_activity a moment after).
    await waitFor(
      async () => {
        const { rows } = await db.query(
          'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1',
          [name],
        )
        return rows[0].n === 0 || null
      },
      { what: 'the LISTEN connection gone' },
    )
  } finally {
    await runner.stop()
    await db.end()
  }
})
