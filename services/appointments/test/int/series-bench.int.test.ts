import { companyOf, startApp, type Harness } from '../helpers'
import { everyDay, newPractitioner } from './calendar-fixtures'

/**
 * How long booking a 52-occurrence weekly series takes through the app (fastify inject, real
 * PostgreSQL): p50 and p95 of RUNS bookings, after WARM_UP ones, for a practitioner with no record
 * and for a registered one (its hours checked per occurrence). A measurement, not a test of speed:
 * it asserts only that each booking succeeded. Opt-in: SERIES_BENCH=1.
 */

const RUNS = Number(process.env.SERIES_BENCH_RUNS ?? 20)
const WARM_UP = 3
const run = process.env.SERIES_BENCH ? describe : describe.skip

let h: Harness
beforeAll(async () => {
  if (process.env.SERIES_BENCH) h = await startApp({ poolMax: 4 })
})
afterAll(() => h?.close())

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!

run('booking a 52-occurrence weekly series', () => {
  test.each(['free-text', 'registered'])(
    '%s practitioner',
    async (kind) => {
      const c = companyOf(h)
      const times: number[] = []
      for (let i = 0; i < WARM_UP + RUNS; i++) {
        const practitioner =
          kind === 'registered'
            ? (await newPractitioner(c, { working_hours: everyDay('08:00', '20:00') })).id
            : `dr-bench-${i}`
        const body = {
          patient_id: c.newPatient(),
          practitioner,
          codalmacen: 'ALM1',
          start: '2028-01-03T09:30',
          duration_minutes: 30,
          rrule: 'FREQ=WEEKLY;COUNT=52',
        }
        const t0 = process.hrtime.bigint()
        const res = await c.send('POST', '/appointments/series', body)
        const ms = Number(process.hrtime.bigint() - t0) / 1e6
        expect(res.statusCode).toBe(201)
        if (i >= WARM_UP) times.push(ms)
      }
      times.sort((x, y) => x - y)
      process.stdout.write(
        `series bench (${kind}, 52 weekly, ${RUNS} runs): p50 ${quantile(times, 0.5).toFixed(1)} ms, ` +
          `p95 ${quantile(times, 0.95).toFixed(1)} ms, min ${times[0]!.toFixed(1)} ms, max ${times.at(-1)!.toFixed(1)} ms\n`,
      )
    },
    600_000,
  )
})
