import type { AddressInfo } from 'node:net'
import { createLogger } from '@clinic/platform'
import { injectAs, testPrincipal, testServices, testSigner } from '@clinic/platform/testing'
import { clientFor, startComms, type Harness } from '../helpers'

/**
 * `POST /internal/comms/send-window` (DESIGN.md section 20): appointments asks when an offer's
 * message may go out; the answer is the end of the caller's company's quiet hours (its reminder
 * policy), in the time zone it names, or the instant it asked for.
 */
let h: Harness
beforeAll(async () => {
  h = await startComms({ callers: ['appointments', 'documents'] })
})
afterAll(() => h.close())

const URL = '/internal/comms/send-window'
const company = () => testPrincipal({ allowedCenters: null })
const asAppointments = (p: ReturnType<typeof company>) => injectAs(h.app, p, testSigner('appointments'))
async function quietHours(
  p: ReturnType<typeof company>,
  quiet: { start: string; end: string } | null,
  enabled = true,
) {
  const res = await clientFor(h.app, p).put('/comms/reminder-policy', {
    enabled,
    offsets: ['P1D'],
    quiet_hours: quiet,
  })
  expect(res.statusCode).toBe(200)
}

describe('the send window, as appointments asks it', () => {
  test('no policy: the instant asked for, in UTC', async () => {
    const p = company()
    const res = await asAppointments(p)('POST', URL, {
      at: '2030-01-07T23:30:00+01:00',
      time_zone: 'Europe/Madrid',
    })
    expect([res.statusCode, res.json()]).toEqual([200, { at: '2030-01-07T22:30:00.000Z' }])
  })

  test("inside the company's quiet hours: their end, in the zone asked for (DST-correct); outside: the instant", async () => {
    const p = company()
    await quietHours(p, { start: '21:00', end: '08:00' })
    const ask = async (at: string, time_zone = 'Europe/Madrid') =>
      (await asAppointments(p)('POST', URL, { at, time_zone })).json().at
    // 23:30 CET -> 08:00 CET the next day.
    expect(await ask('2030-01-07T22:30:00.000Z')).toBe('2030-01-08T07:00:00.000Z')
    // Summer: 06:00 CEST -> 08:00 CEST.
    expect(await ask('2030-07-08T04:00:00.000Z')).toBe('2030-07-08T06:00:00.000Z')
    // The night the clocks go forward (31 March 2030): 23:00 CET -> 08:00 CEST, 06:00Z.
    expect(await ask('2030-03-30T22:00:00.000Z')).toBe('2030-03-31T06:00:00.000Z')
    // Midday in Madrid is 06:00 in New York: quiet there.
    expect(await ask('2030-01-07T11:00:00.000Z')).toBe('2030-01-07T11:00:00.000Z')
    expect(await ask('2030-01-07T11:00:00.000Z', 'America/New_York')).toBe('2030-01-07T13:00:00.000Z')
    // Another company's policy is not this one's.
    const other = await asAppointments(company())('POST', URL, {
      at: '2030-01-07T22:30:00.000Z',
      time_zone: 'Europe/Madrid',
    })
    expect(other.json().at).toBe('2030-01-07T22:30:00.000Z')
  })

  test('quiet hours hold whether or not reminders are enabled; a policy without them holds nothing', async () => {
    const p = company()
    await quietHours(p, { start: '13:00', end: '15:00' }, false)
    const ask = async () =>
      (
        await asAppointments(p)('POST', URL, { at: '2030-01-07T13:30:00.000Z', time_zone: 'Europe/Madrid' })
      ).json().at
    expect(await ask()).toBe('2030-01-07T14:00:00.000Z')
    await quietHours(p, null)
    expect(await ask()).toBe('2030-01-07T13:30:00.000Z')
  })

  test('a zone the service does not know, or no instant: 400 naming each field', async () => {
    const p = company()
    const res = await asAppointments(p)('POST', URL, { at: 'tomorrow', time_zone: 'Mars/Olympus' })
    expect(res.statusCode).toBe(400)
    expect(res.json()).toMatchObject({ code: 'validation_failed' })
    expect(
      res
        .json()
        .errors.map((e: { path: string }) => e.path)
        .sort(),
    ).toEqual(['/at', '/time_zone'])
    const extra = await asAppointments(p)('POST', URL, { at: '2030-01-07T13:30:00Z', time_zone: 'UTC', x: 1 })
    expect(extra.statusCode).toBe(400)
  })

  test('only appointments may ask: the gateway and documents are refused', async () => {
    const p = company()
    const body = { at: '2030-01-07T13:30:00Z', time_zone: 'UTC' }
    expect((await injectAs(h.app, p)('POST', URL, body)).statusCode).toBe(401)
    expect((await injectAs(h.app, p, testSigner('documents'))('POST', URL, body)).statusCode).toBe(401)
  })

  test("appointments' typed client and this route agree", async () => {
    await h.app.listen({ port: 0, host: '127.0.0.1' })
    const url = `http://127.0.0.1:${(h.app.server.address() as AddressInfo).port}`
    const p = company()
    await quietHours(p, { start: '21:00', end: '08:00' })
    const ctx = {
      auth: p,
      requestId: 'send-window-test',
      log: createLogger({ service: 'appointments', level: 'silent' }),
    }
    const { comms } = testServices('appointments', url)
    expect(
      await comms.sendWindow(ctx, { at: '2030-01-07T22:30:00.000Z', time_zone: 'Europe/Madrid' }),
    ).toEqual({
      outcome: 'done',
      answer: { at: '2030-01-08T07:00:00.000Z' },
    })
    expect(
      await comms.sendWindow(ctx, { at: '2030-01-07T22:30:00.000Z', time_zone: 'Nowhere/City' }),
    ).toMatchObject({
      outcome: 'invalid',
    })
  })
})
