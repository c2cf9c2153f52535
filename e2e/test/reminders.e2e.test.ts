import { readFileSync } from 'node:fs'
import path from 'node:path'
import { waitFor } from '@clinic/platform/testing'
import { SETTLE_MS, call, makeTenant, stack, type Tenant } from '../src/client'
import { heading, open, openBrowser, press } from '../src/browser'
import { moveClock } from '../src/stack'

/**
 * Reminders through the gateway, driven by the appointments service's real events over RabbitMQ,
 * with comms' clock moved (COMMS_CLOCK_FILE) instead of waiting for due times. Appointments are
 * booked 20 days ahead: the clock moves at most 22 days, so other suites' links (years ahead)
 * never expire under them.
 */
let a: Tenant
let b: Tenant
beforeAll(async () => {
  ;[a, b] = await Promise.all([makeTenant(['ALM1']), makeTenant(['ALM1'])])
})
afterAll(() => moveClock(stack(), 0))

const DAY = 86_400_000
/** `days` from today at `hh:mm` in Madrid (summer or winter time, as on that day). */
function madrid(days: number, hhmm: string): string {
  const d = new Date(Date.now() + days * DAY)
  const ymd = d.toISOString().slice(0, 10)
  const probe = new Date(`${ymd}T12:00:00Z`)
  const local = new Intl.DateTimeFormat('en-GB', {
    timeZone: 'Europe/Madrid',
    hour: '2-digit',
    hourCycle: 'h23',
  })
  const offset = Number(local.format(probe)) - 12
  return `${ymd}T${hhmm}:00+0${offset}:00`
}

const hhmm = (iso: string) =>
  new Intl.DateTimeFormat('en-GB', { timeZone: 'Europe/Madrid', timeStyle: 'short' }).format(new Date(iso))

async function reminders(t: Tenant, appointmentId: string) {
  const res = await call('GET', `/comms/reminders?appointment_id=${appointmentId}`, { token: t.token })
  expect(res.status).toBe(200)
  return res.body.data as Array<{
    id: string
    offset: string
    due_at: string
    status: string
    message_id: string | null
  }>
}

const smsTo = (phone: string) =>
  readFileSync(path.join(stack().env.OUTBOX_DIR!, 'sms.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { id: string; to: string; body: string })
    .filter((m) => m.to === phone)

describe('reminders through the gateway', () => {
  it('a policy, a booking, a move and a cancellation; each due reminder sent once, to the guardian, in English', async () => {
    const policy = await call('PUT', '/comms/reminder-policy', {
      token: a.token,
      body: { enabled: true, offsets: ['P1D', 'PT2H'], quiet_hours: { start: '21:00', end: '08:00' } },
    })
    expect(policy.status).toBe(200)
    expect(policy.headers.get('etag')).toBe('"1"')
    expect(policy.body).toMatchObject({ enabled: true, offsets: ['P1D', 'PT2H'], confirm_links: true })
    expect((await call('GET', '/comms/reminder-policy', { token: b.token })).body.enabled).toBe(false)

    const phone = `+3460${String(a.companyId).padStart(7, '0').slice(-7)}`
    const child = await call('POST', '/patients', {
      token: a.token,
      body: {
        first_name: 'Leo',
        last_name: 'Ficticio',
        birth_date: '2019-04-01',
        codalmacen: 'ALM1',
        language: 'en',
        preferred_channel: 'sms',
        requires_legal_guardian: true,
        guardian: { name: 'Ana Ficticia', relationship: 'mother', phone },
      },
    })
    expect(child.status).toBe(201)
    const booked = await call('POST', '/appointments', {
      token: a.token,
      body: {
        patient_id: child.body.id,
        codalmacen: 'ALM1',
        practitioner: 'dra-lopez',
        starts_at: madrid(20, '09:30'),
        ends_at: madrid(20, '10:00'),
      },
    })
    expect(booked.status).toBe(201)
    const id = booked.body.id as string
    const first = await waitFor(
      async () => {
        const r = await reminders(a, id)
        return r.length === 2 ? r : null
      },
      { timeoutMs: SETTLE_MS, what: 'two reminders scheduled' },
    )
    const start = Date.parse(booked.body.starts_at)
    expect(first.map((r) => [r.offset, r.status])).toEqual([
      ['P1D', 'scheduled'],
      ['PT2H', 'scheduled'],
    ])
    // A day before on Madrid's calendar: 09:30 there, 23 to 25 hours earlier.
    expect(hhmm(first[0]!.due_at)).toBe('09:30')
    expect(Math.abs(start - Date.parse(first[0]!.due_at) - DAY)).toBeLessThanOrEqual(3_600_000)
    // 07:30 is in quiet hours: the last minute before 21:00 the evening before.
    expect(hhmm(first[1]!.due_at)).toBe('20:59')
    // Another company sees none of them.
    expect(
      (await call('GET', `/comms/reminders?appointment_id=${id}`, { token: b.token })).body.data,
    ).toEqual([])

    // Moved a day later: both rescheduled, the old ones cancelled.
    const moved = await call('PATCH', `/appointments/${id}`, {
      token: a.token,
      body: { starts_at: madrid(21, '11:00'), ends_at: madrid(21, '11:30') },
    })
    expect(moved.status).toBe(200)
    const second = await waitFor(
      async () => {
        const r = await reminders(a, id)
        return r.filter((x) => x.status === 'scheduled').length === 2 && r.length === 4 ? r : null
      },
      { timeoutMs: SETTLE_MS, what: 'the reminders rescheduled' },
    )
    const pending = second.filter((r) => r.status === 'scheduled')
    expect(
      second
        .filter((r) => r.status === 'cancelled')
        .map((r) => r.id)
        .sort(),
    ).toEqual(first.map((r) => r.id).sort())

    // The clock reaches the first one's due time: sent once, to the guardian, in English, with a link.
    moveClock(stack(), Date.parse(pending[0]!.due_at) - Date.now() + 60_000)
    const sent = await waitFor(
      async () => {
        const r = (await reminders(a, id)).find((x) => x.id === pending[0]!.id)!
        return r.status === 'sent' ? r : null
      },
      { timeoutMs: SETTLE_MS, what: 'the first reminder sent' },
    )
    const message = await waitFor(
      async () => {
        const m = await call('GET', `/comms/messages/${sent.message_id}`, { token: a.token })
        return m.body.status === 'sent' ? m.body : null
      },
      { timeoutMs: SETTLE_MS, what: 'its message delivered to the file' },
    )
    expect(message).toMatchObject({
      template: 'appointment_reminder',
      appointment_id: id,
      channel: 'sms',
      recipient: { role: 'guardian', address: phone },
    })
    const [sms] = smsTo(phone)
    expect(sms!.body).toContain('Hello Ana Ficticia')
    expect(sms!.body).toContain('11:00')
    expect(sms!.body).toMatch(
      new RegExp(`^Confirm or cancel your appointment: ${stack().gatewayUrl}/p/a/\\S+$`, 'm'),
    )

    // The family opens the reminder's link in a browser and confirms: confirmed, by patient-link.
    const link = /(http\S+\/p\/a\/\S+)$/m.exec(sms!.body)![1]!
    const { browser, close } = await openBrowser()
    try {
      const page = await browser.newPage()
      expect((await open(page, link)).status()).toBe(200)
      expect(await page.getAttribute('html', 'lang')).toBe('en')
      expect(await page.locator('main').innerText()).toContain('11:00')
      expect((await press(page, 'Confirm')).status()).toBe(200)
      expect(await heading(page)).toBe('Your appointment is confirmed')
    } finally {
      await close()
    }
    expect((await call('GET', `/appointments/${id}`, { token: a.token })).body.status).toBe('confirmed')
    const confirmed = await waitFor(
      async () => {
        const trail = await call('GET', `/audit/events?resource_id=${id}&limit=100`, { token: a.token })
        return (trail.body.data ?? []).find(
          (e: { action: string; actor: { username: string } }) =>
            e.action === 'appointment.updated' && e.actor.username === 'patient-link',
        )
      },
      { timeoutMs: SETTLE_MS, what: 'the confirmation on the audit trail' },
    )
    expect(confirmed).toMatchObject({ outcome: 'success', resource_type: 'appointment' })

    // Cancelled before the second one is due: never sent, even with the clock past it.
    const cancelled = await call('PATCH', `/appointments/${id}`, {
      token: a.token,
      body: { status: 'cancelled', cancellation_reason: 'family trip' },
    })
    expect(cancelled.status).toBe(200)
    await waitFor(
      async () => {
        const r = (await reminders(a, id)).find((x) => x.id === pending[1]!.id)!
        return r.status === 'cancelled' ? r : null
      },
      { timeoutMs: SETTLE_MS, what: 'the second reminder cancelled' },
    )
    moveClock(stack(), Date.parse(pending[1]!.due_at) - Date.now() + 60_000)
    const after = await reminders(a, id)
    expect(after.filter((r) => r.status === 'sent')).toHaveLength(1)
    expect(smsTo(phone)).toHaveLength(1)
  })

  it('validates the policy with problem+json', async () => {
    for (const body of [
      { enabled: true, offsets: [] },
      { enabled: true, offsets: ['P1D', 'P1D'] },
      { enabled: true, offsets: ['1 day'] },
      { enabled: true, offsets: ['P31D'] },
      { enabled: true, offsets: ['P1D'], quiet_hours: { start: '21:00', end: '21:00' } },
      { enabled: true, offsets: ['P1D'], quiet_hours: { start: '25:00', end: '08:00' } },
    ]) {
      const res = await call('PUT', '/comms/reminder-policy', { token: b.token, body })
      expect(res.status).toBe(400)
      expect(res.headers.get('content-type')).toMatch(/^application\/problem\+json/)
      expect(res.body.code).toBe('validation_failed')
    }
    const stale = await call('PUT', '/comms/reminder-policy', {
      token: b.token,
      headers: { 'if-match': '"7"' },
      body: { enabled: false, offsets: ['P1D'] },
    })
    expect(stale.status).toBe(412)
    expect(stale.body.code).toBe('version_mismatch')
  })
})
