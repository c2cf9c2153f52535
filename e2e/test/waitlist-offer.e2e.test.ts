import { randomInt } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'
import type { BrowserContext, Page, Response } from 'playwright-core'
import { waitFor } from '@clinic/platform/testing'
import { PHONE, heading, open, openBrowser } from '../src/browser'
import { SETTLE_MS, call, makeTenant, stack, type Tenant } from '../src/client'

/**
 * A waitlist offer end to end (DESIGN.md section 20), in a real browser (Debian's Chromium driven by
 * playwright-core, at a phone's size) through the gateway: a cancellation frees a slot, appointments
 * holds it for the first waiting entry and publishes `waitlist.entry.offered`, comms sends the
 * patient an SMS with `/p/w/<token>` (written to the stack's outbox, COMMS_DELIVERY=files), and the
 * patient answers on the page. Each test is a company of its own (no quiet hours: no reminder
 * policy), so no other test's entry waits for its slot.
 */
let browser: BrowserContext
let closeBrowser: () => Promise<void>
beforeAll(async () => {
  ;({ browser, close: closeBrowser } = await openBrowser())
})
afterAll(async () => {
  await closeBrowser?.()
})

const PRACTITIONER = 'dr-espera'
const DAY = 86_400_000

/** `days` from today at `hh:mm` in Madrid (summer or winter time, as on that day). */
function madrid(days: number, hhmm: string): string {
  const ymd = new Date(Date.now() + days * DAY).toISOString().slice(0, 10)
  const hour = new Intl.DateTimeFormat('en-GB', {
    timeZone: 'Europe/Madrid',
    hour: '2-digit',
    hourCycle: 'h23',
  })
  const offset = Number(hour.format(new Date(`${ymd}T12:00:00Z`))) - 12
  return new Date(`${ymd}T${hhmm}:00+0${offset}:00`).toISOString()
}

/**
 * The clocks other suites move (comms': reminders.e2e; appointments': the waitlist's expiry) back at
 * real time: an offer is held for WAITLIST_OFFER_MINUTES of real time here, and either clock moved
 * ahead would expire it (comms no longer sends it, its link opens expired; appointments sweeps it).
 */
function clocksAtRest(): Promise<boolean> {
  const moved = (file: string | undefined) =>
    !!file && existsSync(file) && Number(readFileSync(file, 'utf8').trim() || '0') !== 0
  const { COMMS_CLOCK_FILE, APPOINTMENTS_CLOCK_FILE } = stack().env
  return waitFor(() => !moved(COMMS_CLOCK_FILE) && !moved(APPOINTMENTS_CLOCK_FILE), {
    timeoutMs: SETTLE_MS,
    what: "the comms and appointments clocks back at real time (another suite's)",
  })
}

/** A company with a practitioner working every day 08:00-20:00 (Madrid) at ALM1. */
async function clinic(): Promise<Tenant> {
  await clocksAtRest()
  const t = await makeTenant(['ALM1'])
  const res = await call('POST', '/practitioners', {
    token: t.token,
    body: {
      id: PRACTITIONER,
      name: 'Dra. Espera',
      time_zone: 'Europe/Madrid',
      slot_minutes: 30,
      working_hours: [1, 2, 3, 4, 5, 6, 7].map((weekday) => ({
        codalmacen: 'ALM1',
        weekday,
        start: '08:00',
        end: '20:00',
      })),
    },
  })
  expect(res.status).toBe(201)
  return t
}

/** A patient with a Spanish mobile of their own (the SMS are told apart by it). */
async function patient(t: Tenant, language: string) {
  const phone = `+346${String(randomInt(10_000_000, 99_999_999))}`
  const res = await call('POST', '/patients', {
    token: t.token,
    body: {
      first_name: 'Testa',
      last_name: 'Espera',
      birth_date: '1980-05-06',
      codalmacen: 'ALM1',
      language,
      phone,
    },
  })
  expect(res.status).toBe(201)
  return { id: res.body.id as string, phone }
}

/**
 * One patient's appointment at `starts_at` and another patient on the waitlist for that practitioner
 * (SMS); then the appointment is cancelled, and the entry is offered the freed slot.
 */
async function freedSlotOffered(t: Tenant, language: string, startsAt: string) {
  const booker = await patient(t, 'es')
  const waiting = await patient(t, language)
  const booked = await call('POST', '/appointments', {
    token: t.token,
    body: {
      patient_id: booker.id,
      codalmacen: 'ALM1',
      practitioner: PRACTITIONER,
      starts_at: startsAt,
      ends_at: new Date(Date.parse(startsAt) + 30 * 60_000).toISOString(),
      time_zone: 'Europe/Madrid',
    },
  })
  expect(booked.status).toBe(201)
  const entry = await call('POST', '/appointments/waitlist', {
    token: t.token,
    body: {
      patient_id: waiting.id,
      codalmacen: 'ALM1',
      practitioner: PRACTITIONER,
      duration_minutes: 30,
      channel: 'sms',
    },
  })
  expect(entry.status).toBe(201)
  expect(entry.body).toMatchObject({ status: 'waiting', offer: null, appointment_id: null })
  const cancelled = await call('PATCH', `/appointments/${booked.body.id}`, {
    token: t.token,
    body: { status: 'cancelled', cancellation_reason: 'el paciente avisa' },
  })
  expect(cancelled.status).toBe(200)
  const offered = await waitFor(
    async () => {
      const e = await entryOf(t, entry.body.id)
      return e.status === 'offered' ? e : null
    },
    { timeoutMs: SETTLE_MS, what: 'the freed slot offered to the entry' },
  )
  expect(offered.offer).toMatchObject({ starts_at: startsAt, practitioner: PRACTITIONER })
  return {
    booker,
    waiting,
    entryId: entry.body.id as string,
    offer: offered.offer,
    link: await offerLink(waiting.phone),
  }
}

async function entryOf(t: Tenant, id: string) {
  const res = await call('GET', `/appointments/waitlist/${id}`, { token: t.token })
  expect(res.status).toBe(200)
  return res.body
}

/** The link of the offer's SMS, once comms has written it to the outbox (sms.jsonl). */
function offerLink(phone: string): Promise<string> {
  const file = path.join(stack().env.OUTBOX_DIR!, 'sms.jsonl')
  return waitFor(
    () => {
      if (!existsSync(file)) return null
      const sms = readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { to: string; body: string })
        .filter((m) => m.to === phone)
      expect(sms.length).toBeLessThanOrEqual(1)
      return sms[0] ? /(http\S+\/p\/w\/\S+)$/.exec(sms[0].body)![1]! : null
    },
    { timeoutMs: SETTLE_MS, what: "the offer's SMS" },
  )
}

/** Presses the button and waits for the page the form's POST answers with. */
async function press(page: Page, name: string): Promise<Response> {
  const [res] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'POST' && r.url().includes('/p/w/')),
    page.getByRole('button', { name, exact: true }).click(),
  ])
  await page.waitForLoadState()
  return res
}

/** No horizontal scrolling at a phone's width. */
const scrollWidth = (page: Page) => page.evaluate<number>('document.scrollingElement.scrollWidth')
const local = (iso: string, locale: string, o: Intl.DateTimeFormatOptions) =>
  new Intl.DateTimeFormat(locale, { timeZone: 'Europe/Madrid', ...o }).format(new Date(iso))

describe('a waitlist offer in a browser', () => {
  it('Accept books the held slot: the booked page, the entry booked with its appointment, the view on the audit trail', async () => {
    const t = await clinic()
    const startsAt = madrid(40, '10:30')
    const { waiting, entryId, offer, link } = await freedSlotOffered(t, 'en', startsAt)
    expect(link.startsWith(`${stack().gatewayUrl}/p/w/`)).toBe(true)
    const messages = await call('GET', `/comms/messages?patient_id=${waiting.id}`, { token: t.token })
    expect(messages.body.data).toMatchObject([
      {
        template: 'waitlist_offer',
        channel: 'sms',
        appointment_id: null,
        recipient: { role: 'patient', address: waiting.phone },
      },
    ])

    const page = await browser.newPage()
    try {
      const res = await open(page, link)
      expect(res.status()).toBe(200)
      expect(res.headers()).toMatchObject({
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
      })
      expect(await page.getAttribute('html', 'lang')).toBe('en')
      expect(await heading(page)).toBe('An appointment is free for you')
      const text = await page.locator('main').innerText()
      expect(text).toContain(local(startsAt, 'en-GB', { dateStyle: 'full' }))
      expect(text).toContain('10:30 (Europe/Madrid)')
      expect(text).toContain(PRACTITIONER)
      expect(text).toContain('ALM1')
      expect(text).toContain(
        `Held for you until\n${local(offer.expires_at, 'en-GB', { hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })}`,
      )
      expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width)

      const done = await press(page, 'Accept')
      expect(done.status()).toBe(200)
      expect(await heading(page)).toBe('Your appointment is booked')
      expect(await page.locator('main').innerText()).toContain('10:30 (Europe/Madrid)')
      expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width)
      expect(await page.getByRole('button').count()).toBe(0)
    } finally {
      await page.close()
    }

    const entry = await entryOf(t, entryId)
    expect(entry).toMatchObject({ status: 'booked', appointment_id: expect.any(String) })
    const appointment = await call('GET', `/appointments/${entry.appointment_id}`, { token: t.token })
    expect(appointment.body).toMatchObject({
      patient_id: waiting.id,
      practitioner: PRACTITIONER,
      starts_at: startsAt,
      status: 'scheduled',
    })
    const view = await waitFor(
      async () => {
        const trail = await call(
          'GET',
          `/audit/events?resource_type=waitlist_entry&resource_id=${entryId}&limit=100`,
          {
            token: t.token,
          },
        )
        return (trail.body.data ?? []).find((e: any) => e.action === 'comms.waitlist_link.viewed') ?? null
      },
      { timeoutMs: SETTLE_MS, what: 'the view on the audit trail' },
    )
    expect(view).toMatchObject({
      outcome: 'success',
      resource_id: entryId,
      actor: { username: 'patient-link' },
    })
  })

  it('Decline (in Spanish): the page says so; the entry waits again, nothing booked', async () => {
    const t = await clinic()
    const { entryId, link } = await freedSlotOffered(t, 'es', madrid(41, '11:00'))
    const page = await browser.newPage()
    try {
      expect((await open(page, link)).status()).toBe(200)
      expect(await page.getAttribute('html', 'lang')).toBe('es')
      expect(await heading(page)).toBe('Hay una cita libre para usted')
      const done = await press(page, 'Rechazar')
      expect(done.status()).toBe(200)
      expect(await heading(page)).toBe('Ha rechazado esta cita')
      expect(await page.locator('main').innerText()).toContain('Sigue en la lista de espera')
      expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width)
      // Opened again later: still declined.
      expect((await open(page, link)).status()).toBe(200)
      expect(await heading(page)).toBe('Ha rechazado esta cita')
    } finally {
      await page.close()
    }
    expect(await entryOf(t, entryId)).toMatchObject({ status: 'waiting', appointment_id: null })
  })

  it('the staff book the held slot before the patient opens the link: the page says it was taken', async () => {
    const t = await clinic()
    const startsAt = madrid(42, '12:00')
    const { booker, entryId, offer, link } = await freedSlotOffered(t, 'en', startsAt)
    // A plain booking of the held slot is refused; the staff take it with the hold's id.
    const body = {
      patient_id: booker.id,
      codalmacen: 'ALM1',
      practitioner: PRACTITIONER,
      starts_at: startsAt,
      ends_at: new Date(Date.parse(startsAt) + 30 * 60_000).toISOString(),
      time_zone: 'Europe/Madrid',
    }
    expect((await call('POST', '/appointments', { token: t.token, body })).status).toBe(409)
    const staff = await call('POST', '/appointments', {
      token: t.token,
      body: { ...body, hold_id: offer.id },
    })
    expect(staff.status).toBe(201)

    const page = await browser.newPage()
    try {
      const res = await open(page, link)
      expect(res.status()).toBe(409)
      expect(await heading(page)).toBe('Sorry, the clinic has taken this appointment')
      expect(await page.locator('main').innerText()).toContain('You stay on the waitlist')
      expect(await page.getByRole('button').count()).toBe(0)
      expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width)
    } finally {
      await page.close()
    }
    expect(await entryOf(t, entryId)).toMatchObject({ status: 'waiting', appointment_id: null })
  })
})
