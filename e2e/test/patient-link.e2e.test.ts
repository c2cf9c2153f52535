import { randomUUID } from 'node:crypto'
import type { BrowserContext, Page } from 'playwright-core'
import { waitFor } from '@clinic/platform/testing'
import { signLink } from '@clinic/platform/core'
import { APPOINTMENT_LINK } from '../../services/comms/src/domain/link-kinds'
import { PHONE, heading, open, openBrowser, press } from '../src/browser'
import { SETTLE_MS, call, makeTenant, stack, type Tenant } from '../src/client'

/**
 * The page a family opens from a reminder (DESIGN.md section 12), in a real browser: Debian's
 * Chromium driven by playwright-core (e2e/src/browser.ts), at a phone's size, through the gateway
 * of the e2e stack. The link is made as the reminder worker makes it: signLink with the stack's
 * COMMS_LINK_SECRET, expiring at the appointment's start (reminders.e2e.test.ts opens the link of
 * a reminder the stack sent).
 */
let t: Tenant
let browser: BrowserContext
let closeBrowser: () => Promise<void>
beforeAll(async () => {
  t = await makeTenant(['ALM1'])
  ;({ browser, close: closeBrowser } = await openBrowser())
})
afterAll(async () => {
  await closeBrowser?.()
})

let booked = 0
/** A patient and an appointment a few months ahead (past any clock another suite moves), through the API. */
async function appointmentFor(language: string, timeZone: string) {
  const patient = await call('POST', '/patients', {
    token: t.token,
    body: { first_name: 'Testa', last_name: 'Enlace', birth_date: '1985-02-03', language },
  })
  expect(patient.status).toBe(201)
  // One hour each, on the hour: the same practitioner never overlaps.
  const start = Math.ceil((Date.now() + 150 * 86_400_000) / 3_600_000) * 3_600_000 + booked++ * 3_600_000
  const res = await call('POST', '/appointments', {
    token: t.token,
    body: {
      patient_id: patient.body.id,
      codalmacen: 'ALM1',
      practitioner: 'dra-enlace',
      starts_at: new Date(start).toISOString(),
      ends_at: new Date(start + 30 * 60_000).toISOString(),
      time_zone: timeZone,
    },
  })
  expect(res.status).toBe(201)
  return { patient: patient.body, appointment: res.body }
}

/** The link of a reminder: `PUBLIC_BASE_URL/p/a/<token>`, here the stack's gateway. */
async function linkTo(
  a: { id: string; starts_at: string },
  lang: string,
  exp = Date.parse(a.starts_at) / 1000,
) {
  const token = await signLink(stack().env.COMMS_LINK_SECRET!, APPOINTMENT_LINK, {
    id: randomUUID(),
    companyId: t.companyId,
    appointmentId: a.id,
    lang,
    exp,
  })
  return `${stack().gatewayUrl}/p/a/${token}`
}

/** No horizontal scrolling at a phone's width. */
const scrollWidth = (page: Page) => page.evaluate<number>('document.scrollingElement.scrollWidth')

describe('patient links in a browser', () => {
  it("shows the local time in the patient's language; Confirm confirms it as patient-link on the audit trail; the link is then used", async () => {
    const { patient, appointment } = await appointmentFor('en', 'America/New_York')
    expect(patient.language).toBe('en')
    const url = await linkTo(appointment, patient.language)
    const page = await browser.newPage()
    try {
      const res = await open(page, url)
      expect(res.status()).toBe(200)
      expect(res.headers()).toMatchObject({
        'content-type': 'text/html; charset=utf-8',
        'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
        'x-service-version': expect.stringMatching(/^\d{6}\.\d{2}$/),
      })
      expect(await page.getAttribute('html', 'lang')).toBe('en')
      expect(await heading(page)).toBe('Your appointment')
      const at = new Date(appointment.starts_at)
      const local = (o: Intl.DateTimeFormatOptions) =>
        new Intl.DateTimeFormat('en-GB', { timeZone: 'America/New_York', ...o }).format(at)
      const time = local({ hour: '2-digit', minute: '2-digit', hourCycle: 'h23' })
      expect(time).not.toBe(appointment.starts_at.slice(11, 16)) // not UTC
      const text = await page.locator('main').innerText()
      expect(text).toContain(local({ dateStyle: 'full' }))
      expect(text).toContain(`${time} (America/New York)`)
      expect(text).toContain('dra-enlace')
      expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width)

      const done = await press(page, 'Confirm')
      expect(done.status()).toBe(200)
      expect(await heading(page)).toBe('Your appointment is confirmed')
      expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width)

      const read = await call('GET', `/appointments/${appointment.id}`, { token: t.token })
      expect(read.body).toMatchObject({ status: 'confirmed', version: 2 })
      const entry = await waitFor(
        async () => {
          const trail = await call('GET', `/audit/events?resource_id=${appointment.id}&limit=100`, {
            token: t.token,
          })
          return (trail.body.data ?? []).find((e: any) => e.action === 'appointment.updated') ?? null
        },
        { timeoutMs: SETTLE_MS, what: 'the answer on the audit trail' },
      )
      expect(entry).toMatchObject({ outcome: 'success', actor: { username: 'patient-link' } })
      // Opening the page is on the trail too, by the same actor, naming the appointment.
      const view = await waitFor(
        async () => {
          const trail = await call('GET', `/audit/events?resource_id=${appointment.id}&limit=100`, {
            token: t.token,
          })
          return (trail.body.data ?? []).find((e: any) => e.action === 'comms.patient_link.viewed') ?? null
        },
        { timeoutMs: SETTLE_MS, what: 'the view on the audit trail' },
      )
      expect(view).toMatchObject({
        outcome: 'success',
        resource_type: 'appointment',
        resource_id: appointment.id,
        actor: { username: 'patient-link' },
      })

      const again = await open(page, url)
      expect(again.status()).toBe(410)
      expect(await heading(page)).toBe('This link has already been used')
      expect(await page.getByRole('button').count()).toBe(0)
    } finally {
      await page.close()
    }
  })

  it('Cancel (in Spanish) cancels with the reason "cancelled by patient"', async () => {
    const { patient, appointment } = await appointmentFor('es', 'Europe/Madrid')
    const page = await browser.newPage()
    try {
      expect((await open(page, await linkTo(appointment, patient.language))).status()).toBe(200)
      expect(await page.getAttribute('html', 'lang')).toBe('es')
      expect(await heading(page)).toBe('Su cita')
      const done = await press(page, 'Cancelar la cita')
      expect(done.status()).toBe(200)
      expect(await heading(page)).toBe('Su cita está cancelada')
      const read = await call('GET', `/appointments/${appointment.id}`, { token: t.token })
      expect(read.body).toMatchObject({ status: 'cancelled', cancellation_reason: 'cancelled by patient' })
    } finally {
      await page.close()
    }
  })

  it('an altered link and an expired one show their pages, readable on a phone', async () => {
    const { appointment } = await appointmentFor('en', 'Europe/Madrid')
    const page = await browser.newPage()
    try {
      const url = await linkTo(appointment, 'en')
      const altered = `${url.slice(0, -3)}${url.endsWith('AAA') ? 'BBB' : 'AAA'}`
      expect((await open(page, altered)).status()).toBe(400)
      expect(await heading(page)).toBe('This link is not valid')
      expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width)

      const expired = await linkTo(appointment, 'en', Math.floor(Date.now() / 1000) - 86_400)
      expect((await open(page, expired)).status()).toBe(410)
      expect(await heading(page)).toBe('This link has expired')
      expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width)
      const read = await call('GET', `/appointments/${appointment.id}`, { token: t.token })
      expect(read.body.status).toBe('scheduled')
    } finally {
      await page.close()
    }
  })
})
