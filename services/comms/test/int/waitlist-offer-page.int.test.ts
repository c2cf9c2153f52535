import { uuidv7 } from '@clinic/platform'
import { signLink } from '@clinic/platform/core'
import { freshCompanyId, outboxOf } from '@clinic/platform/testing'
import type { LightMyRequestResponse } from 'fastify'
import type { OfferInfo } from '../../src/domain/directories'
import { APPOINTMENT_LINK, WAITLIST_LINK, type WaitlistLink } from '../../src/domain/link-kinds'
import { TEST_LINK_SECRET, startComms, type Harness } from '../helpers'

/**
 * `/p/w/<token>` (DESIGN.md section 20): the page of a waitlist offer's message, against the
 * appointments stand-in of test/helpers.ts (its offers, and their answers as the real service
 * gives them: only an open offer changes). The links' clock is moved, never waited for.
 */
let now = Date.parse('2030-01-07T08:00:00Z')
const clock = () => new Date(now)
const logLines: string[] = []
let h: Harness
beforeAll(async () => {
  h = await startComms({ clock, logLines })
})
afterAll(() => h.close())
afterEach(() => {
  now = Date.parse('2030-01-07T08:00:00Z')
  h.directory.setDown(false)
})

const issued: string[] = []
/** An offer of `companyId` known to the stand-in: 10:30 in Madrid, held until 09:30 Madrid. */
function offerOf(companyId: number, overrides: Partial<OfferInfo> = {}): OfferInfo {
  const o: OfferInfo = {
    id: uuidv7(),
    entry_id: uuidv7(),
    patient_id: uuidv7(),
    codalmacen: 'ALM1',
    practitioner: 'dra-ficticia',
    starts_at: '2030-01-08T09:30:00.000Z',
    ends_at: '2030-01-08T10:00:00.000Z',
    time_zone: 'Europe/Madrid',
    expires_at: '2030-01-07T08:30:00.000Z',
    state: 'open',
    appointment_id: null,
    ...overrides,
  }
  h.directory.addOffer(companyId, o)
  return o
}
/** The link an offer's message carries: until the offer expires, in the patient's language. */
async function linkTo(companyId: number, o: OfferInfo, over: Partial<WaitlistLink> = {}) {
  const token = await signLink(TEST_LINK_SECRET, WAITLIST_LINK, {
    companyId,
    offerId: o.id,
    lang: 'es',
    exp: Date.parse(o.expires_at) / 1000,
    ...over,
  })
  issued.push(token)
  return token
}
const open = (token: string, headers: Record<string, string> = {}) =>
  h.app.inject({ method: 'GET', url: `/p/w/${token}`, headers })
const answer = (token: string, action: string, contentType = 'application/x-www-form-urlencoded') =>
  h.app.inject({
    method: 'POST',
    url: `/p/w/${token}`,
    headers: { 'content-type': contentType },
    payload: `action=${action}`,
  })
const answersTo = (o: OfferInfo) => h.directory.offerAnswers.filter((a) => a.id === o.id)

/** An HTML page (never JSON) with the status, the heading and the headers every link page has. */
function expectPage(res: LightMyRequestResponse, status: number, heading: string) {
  expect([res.statusCode, /<h1>(.*?)<\/h1>/.exec(res.body)?.[1]]).toEqual([status, heading])
  expect(res.headers).toMatchObject({
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
    'x-content-type-options': 'nosniff',
  })
  expect(res.body).toMatch(/^<!doctype html><html lang="(es|en)">/)
  expect(res.body).toContain('<meta name="viewport" content="width=device-width, initial-scale=1">')
  expect(res.body).not.toMatch(/<script|\bon\w+=|javascript:/i)
}
const forms = (res: LightMyRequestResponse) =>
  [...res.body.matchAll(/<form method="post"><input type="hidden" name="action" value="(\w+)">/g)].map(
    (m) => m[1],
  )

describe('GET /p/w/<token>: the offer', () => {
  test('open: the slot in its time zone, center, practitioner and until when it is held, with Accept and Decline (es, en)', async () => {
    const company = freshCompanyId()
    const o = offerOf(company)
    const res = await open(await linkTo(company, o))
    expectPage(res, 200, 'Hay una cita libre para usted')
    expect(res.body).toContain('<dd>martes, 8 de enero de 2030</dd>')
    expect(res.body).toContain('<dd>10:30 <small>(Europe/Madrid)</small></dd>')
    expect(res.body).toContain('<dd>ALM1</dd>')
    expect(res.body).toContain('<dd>dra-ficticia</dd>')
    expect(res.body).toContain(
      '<dt>Reservada para usted hasta</dt><dd>09:30 <small>(lunes, 7 de enero de 2030)</small></dd>',
    )
    expect(forms(res)).toEqual(['accept', 'decline'])
    expect(res.body).toContain('>Aceptar la cita</button>')
    expect(res.body).toContain('>Rechazar</button>')

    const ny = offerOf(company, { time_zone: 'America/New_York', starts_at: '2030-07-08T13:30:00.000Z' })
    const en = await open(await linkTo(company, ny, { lang: 'en' }))
    expectPage(en, 200, 'An appointment is free for you')
    expect(en.body).toContain('<dd>Monday, 8 July 2030</dd>')
    expect(en.body).toContain('<dd>09:30 <small>(America/New York)</small></dd>')
    expect(en.body).toContain(
      '<dt>Held for you until</dt><dd>03:30 <small>(Monday, 7 January 2030)</small></dd>',
    )
    expect(en.body).toContain('>Accept</button>')
    expect(en.body).toContain('>Decline</button>')
  })

  test('accepted: the booked page with the slot; declined: still on the waitlist; no forms', async () => {
    const company = freshCompanyId()
    const booked = await open(
      await linkTo(company, offerOf(company, { state: 'accepted', appointment_id: uuidv7() })),
    )
    expectPage(booked, 200, 'Su cita está reservada')
    expect(booked.body).toContain('<dd>10:30 <small>(Europe/Madrid)</small></dd>')
    expect(forms(booked)).toEqual([])
    const declined = await open(
      await linkTo(company, offerOf(company, { state: 'declined' }), { lang: 'en' }),
    )
    expectPage(declined, 200, 'You declined this appointment')
    expect(declined.body).toContain('You stay on the waitlist')
    expect(forms(declined)).toEqual([])
  })

  test('taken by the clinic meanwhile: 409, still on the waitlist; expired: 410; withdrawn or unknown: 404', async () => {
    const company = freshCompanyId()
    const taken = await open(await linkTo(company, offerOf(company, { state: 'taken' })))
    expectPage(taken, 409, 'Lo sentimos: la clínica ha ocupado esta cita')
    expect(taken.body).toContain('Sigue en la lista de espera')
    expect(forms(taken)).toEqual([])
    expectPage(
      await open(await linkTo(company, offerOf(company, { state: 'expired' }))),
      410,
      'Esta oferta ha caducado',
    )
    expectPage(
      await open(await linkTo(company, offerOf(company, { state: 'withdrawn' }))),
      404,
      'No encontramos esta oferta',
    )
    const unknown = { ...offerOf(freshCompanyId()), id: uuidv7() }
    expectPage(
      await open(await linkTo(company, unknown, { lang: 'en' })),
      404,
      'We could not find this offer',
    )
  })

  test("the token expires with the offer (the links' clock): 410, for reading and answering; nothing answered", async () => {
    const company = freshCompanyId()
    const o = offerOf(company)
    const token = await linkTo(company, o)
    now = Date.parse(o.expires_at) - 1000
    expectPage(await open(token), 200, 'Hay una cita libre para usted')
    now = Date.parse(o.expires_at)
    expectPage(await open(token), 410, 'Esta oferta ha caducado')
    expectPage(await answer(token, 'accept'), 410, 'Esta oferta ha caducado')
    expect(answersTo(o)).toEqual([])
  })

  test('every interpolated value is escaped', async () => {
    const company = freshCompanyId()
    const o = offerOf(company, {
      practitioner: '<script>alert("x")</script> & <img src=x onerror=alert(1)>',
      codalmacen: '<b>A</b>',
    })
    const res = await open(await linkTo(company, o))
    expect(res.body).toContain(
      '&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt;',
    )
    expect(res.body).toContain('<dd>&lt;b&gt;A&lt;/b&gt;</dd>')
    expect(res.body).not.toMatch(/<script|<img|<b>/)
  })
})

describe('every view is on the audit trail', () => {
  test('comms.waitlist_link.viewed by patient-link, subject the entry, naming the offer and what the page said; never the token', async () => {
    const company = freshCompanyId()
    const o = offerOf(company)
    const token = await linkTo(company, o)
    const views = async () =>
      (await outboxOf(h.owner, company, o.entry_id)).filter((e) => e.type === 'comms.waitlist_link.viewed')
    expectPage(await open(token), 200, 'Hay una cita libre para usted')
    const [first] = await views()
    expect(first!.payload).toMatchObject({
      source: 'clinic/comms',
      subject: o.entry_id,
      idempresa: company,
      actorname: 'patient-link',
      requestid: expect.any(String),
      data: { entry_id: o.entry_id, offer_id: o.id, page: 'open' },
    })
    expect(JSON.stringify(first!.payload)).not.toContain(token)
    expectPage(await answer(token, 'accept'), 200, 'Su cita está reservada')
    await open(token)
    const all = await views()
    expect(all.map((e) => e.payload.data.page)).toEqual(['open', 'accepted'])
  })

  test('an altered token names no company: its page records nothing', async () => {
    const company = freshCompanyId()
    const o = offerOf(company)
    const token = await linkTo(company, o)
    expectPage(await open(`${token.slice(0, -2)}xx`), 400, 'Este enlace no es válido')
    expect(await outboxOf(h.owner, company, o.id)).toEqual([])
  })
})

describe('POST /p/w/<token>: the answer', () => {
  test("Accept: asked of appointments as patient-link of the token's company; the booked page; a second answer finds it booked", async () => {
    const company = freshCompanyId()
    const o = offerOf(company)
    const token = await linkTo(company, o)
    const res = await answer(token, 'accept')
    expectPage(res, 200, 'Su cita está reservada')
    expect(res.body).toContain('<dd>10:30 <small>(Europe/Madrid)</small></dd>')
    expect(answersTo(o)).toEqual([
      { companyId: company, username: 'patient-link', id: o.id, action: 'accept' },
    ])
    expectPage(await answer(token, 'decline'), 200, 'Su cita está reservada')
    expectPage(await open(token), 200, 'Su cita está reservada')
  })

  test('Decline (en): the declined page; the offer stays declined', async () => {
    const company = freshCompanyId()
    const o = offerOf(company)
    const token = await linkTo(company, o, { lang: 'en' })
    expectPage(await answer(token, 'decline'), 200, 'You declined this appointment')
    expect(answersTo(o).map((a) => a.action)).toEqual(['decline'])
    expectPage(await answer(token, 'accept'), 200, 'You declined this appointment')
  })

  test('an offer the clinic took meanwhile: the taken page, nothing booked', async () => {
    const company = freshCompanyId()
    const o = offerOf(company)
    const token = await linkTo(company, o)
    h.directory.addOffer(company, { ...o, state: 'taken' })
    expectPage(await answer(token, 'accept'), 409, 'Lo sentimos: la clínica ha ocupado esta cita')
  })

  test("a token of another company cannot answer this company's offer", async () => {
    const mine = freshCompanyId()
    const other = freshCompanyId()
    const o = offerOf(mine)
    expectPage(await answer(await linkTo(other, o), 'accept'), 404, 'No encontramos esta oferta')
    expectPage(await open(await linkTo(mine, o)), 200, 'Hay una cita libre para usted')
  })

  test('appointments down: the 503 page (Retry-After), nothing answered; the same link works once it is back', async () => {
    const company = freshCompanyId()
    const o = offerOf(company)
    const token = await linkTo(company, o)
    h.directory.setDown(true)
    for (const res of [await open(token), await answer(token, 'accept')]) {
      expectPage(res, 503, 'Ahora no podemos atenderle')
      expect(res.headers['retry-after']).toBeDefined()
    }
    expect(answersTo(o)).toEqual([])
    h.directory.setDown(false)
    expectPage(await answer(token, 'accept'), 200, 'Su cita está reservada')
  })

  test('a form that is not ours, an altered token or a link of another kind: the 400 page, nothing answered', async () => {
    const company = freshCompanyId()
    const o = offerOf(company)
    const token = await linkTo(company, o)
    expectPage(await answer(token, 'confirm'), 400, 'Este enlace no es válido')
    expectPage(await answer(token, 'accept&extra=1'), 400, 'Este enlace no es válido')
    expectPage(
      await answer(token, 'accept', 'multipart/form-data; boundary=x'),
      415,
      'Este enlace no es válido',
    )
    expectPage(await answer(`${token.slice(0, -2)}xx`, 'accept'), 400, 'Este enlace no es válido')
    const appointmentLink = await signLink(TEST_LINK_SECRET, APPOINTMENT_LINK, {
      id: uuidv7(),
      companyId: company,
      appointmentId: o.id,
      lang: 'es',
      exp: 1_900_000_000,
    })
    expectPage(await answer(appointmentLink, 'accept'), 400, 'Este enlace no es válido')
    expectPage(await open(appointmentLink), 400, 'Este enlace no es válido')
    expectPage(await open(''), 400, 'Este enlace no es válido')
    expect(answersTo(o)).toEqual([])
  })

  test('no token reaches the logs; the access line names the route and what the page said', () => {
    const all = logLines.join('\n')
    expect(issued.length).toBeGreaterThan(10)
    for (const part of issued.flatMap((t) => t.split('.'))) expect(all).not.toContain(part)
    const access = logLines.map((l) => JSON.parse(l)).filter((l) => l.msg === 'request')
    expect(access.some((l) => l.route === '/p/w/*' && l.status === 409 && l.code === 'link_taken')).toBe(true)
  })
})
