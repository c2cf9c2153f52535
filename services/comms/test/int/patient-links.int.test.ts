import { uuidv7 } from '@clinic/platform'
import { freshCompanyId, outboxOf } from '@clinic/platform/testing'
import type { LightMyRequestResponse } from 'fastify'
import type { AppointmentInfo } from '../../src/domain/directories'
import { signLink } from '@clinic/platform/core'
import { APPOINTMENT_LINK, UNSUBSCRIBE_LINK, type AppointmentLink } from '../../src/domain/link-kinds'
import { TEST_LINK_SECRET, startComms, type Harness } from '../helpers'

// The clock of the links: tests move it instead of waiting for an appointment to start.
let now = Date.parse('2030-01-01T08:00:00Z')
const clock = () => new Date(now)
const logLines: string[] = []
let h: Harness
beforeAll(async () => {
  h = await startComms({ clock, logLines })
})
afterAll(() => h.close())
afterEach(() => {
  now = Date.parse('2030-01-01T08:00:00Z')
  h.directory.setDown(false)
  h.directory.setRespondDelay(0)
})

const issued: string[] = []
/** An appointment of `companyId` known to the appointments stand-in. */
function appointmentOf(companyId: number, overrides: Partial<AppointmentInfo> = {}): AppointmentInfo {
  const a: AppointmentInfo = {
    id: uuidv7(),
    patient_id: uuidv7(),
    codalmacen: 'ALM1',
    practitioner: 'Dra. Ficticia',
    starts_at: '2030-01-07T09:30:00.000Z',
    ends_at: '2030-01-07T10:00:00.000Z',
    time_zone: 'Europe/Madrid',
    status: 'scheduled',
    version: 1,
    ...overrides,
  }
  h.directory.addAppointment(companyId, a)
  return a
}
/** The link a reminder carries: until the appointment's start, in the patient's language. */
async function linkTo(companyId: number, a: AppointmentInfo, over: Partial<AppointmentLink> = {}) {
  const payload = {
    id: uuidv7(),
    companyId,
    appointmentId: a.id,
    lang: 'es',
    exp: Date.parse(a.starts_at) / 1000,
    ...over,
  }
  const token = await signLink(TEST_LINK_SECRET, APPOINTMENT_LINK, payload)
  issued.push(token)
  return { token, id: payload.id }
}

const open = (token: string, headers: Record<string, string> = {}) =>
  h.app.inject({ method: 'GET', url: `/p/a/${token}`, headers })
const answer = (token: string, action: string, contentType = 'application/x-www-form-urlencoded') =>
  h.app.inject({
    method: 'POST',
    url: `/p/a/${token}`,
    headers: { 'content-type': contentType },
    payload: `action=${action}`,
  })
const usesOf = (tokenId: string) => h.owner('link_uses').where({ token_id: tokenId })

/** An HTML page (never JSON) with the status, the heading and the headers every page has. */
function expectPage(res: LightMyRequestResponse, status: number, heading: string) {
  expect([res.statusCode, /<h1>(.*?)<\/h1>/.exec(res.body)?.[1]]).toEqual([status, heading])
  expect(res.headers).toMatchObject({
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
    'x-service-version': '261122.01',
  })
  expect(res.body).toMatch(/^<!doctype html><html lang="(es|en)">/)
  expect(res.body).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">')
  expect(res.body).not.toMatch(/<script|\bon\w+=|javascript:/i)
}
const forms = (res: LightMyRequestResponse) =>
  [...res.body.matchAll(/<form method="post"><input type="hidden" name="action" value="(\w+)">/g)].map(
    (m) => m[1],
  )

describe('GET /p/a/<token>: the page a reminder links to', () => {
  test("shows the date and time in the appointment's time zone (winter and summer), center and practitioner, in the token's language, with Confirm and Cancel", async () => {
    const company = freshCompanyId()
    const winter = appointmentOf(company)
    const res = await open((await linkTo(company, winter)).token)
    expectPage(res, 200, 'Su cita')
    expect(res.body).toContain('lunes, 7 de enero de 2030')
    expect(res.body).toContain('<dd>10:30 <small>(Europe/Madrid)</small></dd>')
    expect(res.body).toContain('<dd>ALM1</dd>')
    expect(res.body).toContain('<dd>Dra. Ficticia</dd>')
    expect(forms(res)).toEqual(['confirm', 'cancel'])
    expect(res.body).toContain('>Confirmar</button>')

    const summer = appointmentOf(company, {
      starts_at: '2030-07-08T09:30:00.000Z',
      time_zone: 'America/New_York',
    })
    const en = await open((await linkTo(company, summer, { lang: 'en' })).token)
    expectPage(en, 200, 'Your appointment')
    expect(en.body).toContain('Monday, 8 July 2030')
    expect(en.body).toContain('<dd>05:30 <small>(America/New York)</small></dd>')
    expect(en.body).toContain('>Confirm</button>')
    expect(en.body).toContain('>Cancel appointment</button>')
  })

  test('a confirmed appointment offers Cancel only; a cancelled or completed one is the 409 page, with its status', async () => {
    const company = freshCompanyId()
    const confirmed = await open(
      (await linkTo(company, appointmentOf(company, { status: 'confirmed' }))).token,
    )
    expectPage(confirmed, 200, 'Su cita')
    expect(confirmed.body).toContain('Su cita ya está confirmada')
    expect(forms(confirmed)).toEqual(['cancel'])
    for (const [status, shown] of [
      ['cancelled', 'cancelada'],
      ['completed', 'realizada'],
      ['checked_in', 'en la clínica'],
    ]) {
      const res = await open((await linkTo(company, appointmentOf(company, { status }))).token)
      expectPage(res, 409, 'Esta cita ya no se puede cambiar aquí')
      expect(res.body).toContain(`Estado: ${shown}`)
      expect(forms(res)).toEqual([])
    }
  })

  test('every interpolated value is escaped: a practitioner named <script> shows as text', async () => {
    const company = freshCompanyId()
    const a = appointmentOf(company, {
      practitioner: '<script>alert("x")</script> & \'Dr\' <img src=x onerror=alert(1)>',
      codalmacen: '<b>"ALM"</b>',
    })
    const { token } = await linkTo(company, a)
    for (const res of [await open(token), await answer(token, 'confirm')]) {
      expect(res.body).toContain(
        '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;Dr&#39; &lt;img src=x onerror=alert(1)&gt;',
      )
      expect(res.body).toContain('<dd>&lt;b&gt;&quot;ALM&quot;&lt;/b&gt;</dd>')
      expect(res.body).not.toMatch(/<script|<img|<b>/)
    }
  })

  test('an unknown appointment is the 404 page; nothing is recorded', async () => {
    const company = freshCompanyId()
    const gone: AppointmentInfo = { ...appointmentOf(freshCompanyId()), id: uuidv7() }
    const { token, id } = await linkTo(company, gone)
    expectPage(await open(token), 404, 'No encontramos esta cita')
    expectPage(await answer(token, 'confirm'), 404, 'No encontramos esta cita')
    expect(await usesOf(id)).toEqual([])
  })
})

describe('every view of a link page is on the audit trail', () => {
  test('each opening is a comms.patient_link.viewed by actor patient-link, naming the appointment and the link, never the token', async () => {
    const company = freshCompanyId()
    const a = appointmentOf(company)
    const link = await linkTo(company, a)
    const viewsOf = async () =>
      (await outboxOf(h.owner, company, a.id)).filter((e) => e.type === 'comms.patient_link.viewed')
    expectPage(await open(link.token), 200, 'Su cita')
    const [first] = await viewsOf()
    expect(first!.payload).toMatchObject({
      source: 'clinic/comms',
      subject: a.id,
      idempresa: company,
      actorname: 'patient-link',
      requestid: expect.any(String),
      data: { appointment_id: a.id, link_id: link.id, page: 'open' },
    })
    expect(JSON.stringify(first!.payload)).not.toContain(link.token)
    // Opened again (a reload, someone else with the message): another view, another event.
    await open(link.token)
    expect(await viewsOf()).toHaveLength(2)
    // After the answer the page still says what became of it, and that view is recorded too.
    expect((await answer(link.token, 'confirm')).statusCode).toBe(200)
    await open(link.token)
    expect((await viewsOf()).map((e) => e.payload.data.page)).toEqual(['open', 'open', 'used'])
  })

  test('an altered token names no company to put on a trail: its page records nothing', async () => {
    const company = freshCompanyId()
    const a = appointmentOf(company)
    const link = await linkTo(company, a)
    expectPage(await open(`${link.token.slice(0, -2)}xx`), 400, 'Este enlace no es válido')
    expect(await outboxOf(h.owner, company, a.id)).toEqual([])
  })
})

describe('POST /p/a/<token>: the answer, once', () => {
  test('Confirm: the appointments service is asked as patient-link of the link\'s company; the use is recorded; the link is then "already used"', async () => {
    const company = freshCompanyId()
    const a = appointmentOf(company)
    const { token, id } = await linkTo(company, a)
    const res = await answer(token, 'confirm')
    expectPage(res, 200, 'Su cita está confirmada')
    expect(res.body).toContain('<dd>10:30 <small>(Europe/Madrid)</small></dd>')
    expect(h.directory.responses.filter((r) => r.id === a.id)).toEqual([
      { companyId: company, username: 'patient-link', id: a.id, action: 'confirm' },
    ])
    expect(await usesOf(id)).toMatchObject([
      { idempresa: company, token_id: id, appointment_id: a.id, action: 'confirm' },
    ])

    const reopened = await open(token)
    expectPage(reopened, 410, 'Este enlace ya se ha usado')
    expect(reopened.body).toContain('Con él se confirmó la cita.')
    expectPage(await answer(token, 'cancel'), 410, 'Este enlace ya se ha usado')
    expect(h.directory.responses.filter((r) => r.id === a.id)).toHaveLength(1)
  })

  test('Cancel, in English; a confirmed appointment can still be cancelled', async () => {
    const company = freshCompanyId()
    const a = appointmentOf(company, { status: 'confirmed' })
    const { token } = await linkTo(company, a, { lang: 'en' })
    const res = await answer(token, 'cancel')
    expectPage(res, 200, 'Your appointment is cancelled')
    expect(h.directory.responses.at(-1)).toMatchObject({ id: a.id, action: 'cancel' })
    const reopened = await open(token)
    expectPage(reopened, 410, 'This link has already been used')
    expect(reopened.body).toContain('The appointment was cancelled with it.')
  })

  test('a double click acts once: the second waits for the first and finds the link used', async () => {
    const company = freshCompanyId()
    const a = appointmentOf(company)
    const { token } = await linkTo(company, a)
    h.directory.setRespondDelay(300)
    const [one, two] = await Promise.all([answer(token, 'confirm'), answer(token, 'confirm')])
    expect([one.statusCode, two.statusCode].sort()).toEqual([200, 410])
    expect(h.directory.responses.filter((r) => r.id === a.id)).toHaveLength(1)
  })

  test('an answer its status does not allow is the 409 page and leaves the link usable', async () => {
    const company = freshCompanyId()
    const a = appointmentOf(company, { status: 'checked_in' })
    const { token, id } = await linkTo(company, a)
    const res = await answer(token, 'confirm')
    expectPage(res, 409, 'Esta cita ya no se puede cambiar aquí')
    expect(res.body).toContain('Estado: en la clínica')
    expect(await usesOf(id)).toEqual([])
  })

  test("a token of another company cannot act on this company's appointment: its company scopes every lookup", async () => {
    const mine = freshCompanyId()
    const other = freshCompanyId()
    const a = appointmentOf(mine)
    const { token, id } = await linkTo(other, a)
    expectPage(await open(token), 404, 'No encontramos esta cita')
    expectPage(await answer(token, 'cancel'), 404, 'No encontramos esta cita')
    expect(h.directory.responses.filter((r) => r.id === a.id)).toEqual([
      { companyId: other, username: 'patient-link', id: a.id, action: 'cancel' },
    ])
    expect(await usesOf(id)).toEqual([])
    // Still scheduled, and still answerable with its own company's link.
    expectPage(await answer((await linkTo(mine, a)).token, 'confirm'), 200, 'Su cita está confirmada')
  })

  test('the appointments service down: the 503 page (Retry-After), the link not spent; it works once the service is back', async () => {
    const company = freshCompanyId()
    const a = appointmentOf(company)
    const { token, id } = await linkTo(company, a)
    h.directory.setDown(true)
    for (const res of [await open(token), await answer(token, 'confirm')]) {
      expectPage(res, 503, 'Ahora no podemos atenderle')
      expect(res.headers['retry-after']).toBeDefined()
    }
    expect(await usesOf(id)).toEqual([])
    h.directory.setDown(false)
    expectPage(await answer(token, 'confirm'), 200, 'Su cita está confirmada')
  })
})

describe('links that cannot be used', () => {
  test('altered, cut, foreign or of another purpose: the 400 page; the browser language when the token says none', async () => {
    const company = freshCompanyId()
    const a = appointmentOf(company)
    const { token } = await linkTo(company, a)
    const [header, body, mac] = token.split('.') as [string, string, string]
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(body, 'base64url').toString()), companyId: 1 }),
    ).toString('base64url')
    const flipped = `${mac.slice(0, -2)}${mac.endsWith('AA') ? 'BB' : 'AA'}`
    const notAUuid = await signLink(TEST_LINK_SECRET, APPOINTMENT_LINK, {
      id: 'not-a-uuid',
      companyId: company,
      appointmentId: a.id,
      lang: 'es',
      exp: 1_900_000_000,
    })
    for (const bad of [
      `${header}.${forged}.${mac}`,
      `${header}.${body}.${flipped}`,
      `${header}.${body}`,
      '',
      'x',
      `${token}.extra`,
      `${token}/more`,
      await signLink(
        'another-secret-another-secret-0123456789',
        APPOINTMENT_LINK,
        JSON.parse(Buffer.from(body, 'base64url').toString()) as AppointmentLink,
      ),
      await signLink(TEST_LINK_SECRET, UNSUBSCRIBE_LINK, { companyId: company, messageId: a.id, lang: 'es' }),
      notAUuid,
    ]) {
      expectPage(await open(bad), 400, 'Este enlace no es válido')
      expectPage(await answer(bad, 'confirm'), 400, 'Este enlace no es válido')
    }
    expectPage(await open('garbage', { 'accept-language': 'en-US,en;q=0.9' }), 400, 'This link is not valid')
    expect(h.directory.responses.filter((r) => r.id === a.id)).toEqual([])
  })

  test("expired at the appointment's start (exp <= now): the 410 page, for reading and answering", async () => {
    const company = freshCompanyId()
    const a = appointmentOf(company)
    const { token, id } = await linkTo(company, a)
    now = Date.parse(a.starts_at) - 1000
    expectPage(await open(token), 200, 'Su cita')
    now = Date.parse(a.starts_at)
    expectPage(await open(token), 410, 'Este enlace ha caducado')
    const late = await answer(token, 'confirm')
    expectPage(late, 410, 'Este enlace ha caducado')
    expect(await usesOf(id)).toEqual([])
    expect(h.directory.responses.filter((r) => r.id === a.id)).toEqual([])
  })

  test('a form that is not ours is an HTML 4xx too, never JSON', async () => {
    const company = freshCompanyId()
    const { token } = await linkTo(company, appointmentOf(company))
    expectPage(await answer(token, 'delete'), 400, 'Este enlace no es válido')
    expectPage(await answer(token, 'confirm&extra=1'), 400, 'Este enlace no es válido')
    expectPage(
      await answer(token, 'confirm', 'multipart/form-data; boundary=x'),
      415,
      'Este enlace no es válido',
    )
    const big = await h.app.inject({
      method: 'POST',
      url: `/p/a/${token}`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: `action=confirm&pad=${'x'.repeat(4096)}`,
    })
    expectPage(big, 413, 'Este enlace no es válido')
    expectPage(await answer(token, 'confirm%00'), 400, 'Este enlace no es válido')
    // And the link still works.
    expectPage(await answer(token, 'confirm'), 200, 'Su cita está confirmada')
  })

  test('no token reaches the logs; the access line names the route and what the page said', () => {
    const all = logLines.join('\n')
    expect(issued.length).toBeGreaterThan(10)
    for (const part of issued.flatMap((token) => token.split('.'))) expect(all).not.toContain(part)
    const access = logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request')
    expect(access.some((l) => l.route === '/p/a/*' && l.status === 410 && l.code === 'link_used')).toBe(true)
  })
})
