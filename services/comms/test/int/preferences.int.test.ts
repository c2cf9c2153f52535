import { randomInt, randomUUID } from 'node:crypto'
import type { Principal } from '@clinic/platform'
import { createLogger } from '@clinic/platform'
import { gatewayHeaders, outboxOf, tapEvents, testPrincipal, waitFor } from '@clinic/platform/testing'
import twilio from 'twilio'
import { twilioInboundUrl } from '../../src/config'
import type { Provider } from '../../src/domain/deliver-message'
import { signLink } from '@clinic/platform/core'
import { APPOINTMENT_LINK, UNSUBSCRIBE_LINK } from '../../src/domain/link-kinds'
import { SmtpProvider } from '../../src/providers/smtp-provider'
import { guardianOf, makeContact } from '../fixtures'
import { TwilioMessageTimes } from '../../src/providers/twilio-provider'
import { TEST_LINK_SECRET, clientFor, startComms, startSmtp, startTwilio, type Harness } from '../helpers'

const TOKEN = 'test-twilio-auth-token'
const WEBHOOK = 'https://clinic.example/api/comms/webhooks/twilio'
const INBOUND = twilioInboundUrl({ TWILIO_WEBHOOK_URL: WEBHOOK })!

/** Numbers and addresses no other test (nor another run on the same database) uses. */
const phone = () => `+346${String(randomInt(0, 100_000_000)).padStart(8, '0')}`
const email = (name = 'ana') => `${name}-${randomUUID().slice(0, 8)}@example.test`

const ACCOUNT = 'AC00000000000000000000000000000001'

let h: Harness
/** Twilio's Messages API, which dates the incoming messages comms asks it about. */
let twilioApi: Awaited<ReturnType<typeof startTwilio>>
beforeAll(async () => {
  twilioApi = await startTwilio(ACCOUNT, TOKEN)
  const times = new TwilioMessageTimes(
    { accountSid: ACCOUNT, authToken: TOKEN, apiUrl: twilioApi.url },
    createLogger({ service: 'comms', level: 'silent' }),
  )
  h = await startComms({ twilio: { authToken: TOKEN, webhookUrl: WEBHOOK, inboundUrl: INBOUND, times } })
})
afterAll(async () => {
  await h?.close()
  await twilioApi?.close()
})

/** The API as the gateway calls it for `principal` (PUT too, which helpers' client lacks). */
function api(principal: Principal = testPrincipal(), on: () => Harness = () => h) {
  const put = async (url: string, body: unknown) =>
    on().app.inject({
      method: 'PUT',
      url,
      headers: await gatewayHeaders(principal, 'PUT', url, undefined, undefined, body),
      payload: body as Record<string, unknown>,
    })
  const get = (url: string) => clientFor(on().app, principal).get(url)
  const find = async (address: string, channel?: string) => {
    const q = new URLSearchParams({ address, ...(channel ? { channel } : {}) })
    const res = await get(`/comms/preferences?${q}`)
    expect(res.statusCode).toBe(200)
    return res.json().data as Array<Record<string, unknown>>
  }
  return { principal, put, get, find }
}

/** The consent events of a company in the outbox (no relay runs in this harness: they stay there). */
const consentEvents = async (companyId: number, preferenceId: string) =>
  (await outboxOf(h.owner, companyId, preferenceId)).filter((e) => e.type === 'comms.preference.updated')

/** A message (SMS to the patient's phone, or the guardian's) queued through the API. */
async function smsTo(principal: Principal, contact = makeContact({ phone: phone() })) {
  h.directory.addPatient(principal.companyId, contact)
  const res = await clientFor(h.app, principal).post('/comms/send', {
    patient_id: contact.id,
    channel: 'sms',
    body: 'Recordatorio de cita',
  })
  expect(res.statusCode).toBe(202)
  return res.json() as { id: string; status: string }
}

describe('GET and PUT /comms/preferences', () => {
  it('answers not opted out for an address nobody set, on the channel its form names', async () => {
    const { find } = api()
    const number = phone()
    expect(await find(number)).toEqual([
      {
        id: expect.any(String),
        channel: 'sms',
        address: number,
        opted_out: false,
        source: null,
        updated_at: null,
      },
    ])
    const address = email()
    expect(await find(address)).toEqual([
      { id: expect.any(String), channel: 'email', address, opted_out: false, source: null, updated_at: null },
    ])
    expect((await find(address, 'email'))[0]!.channel).toBe('email')
  })

  it('answers a list like every other: {data, meta}, paged by offset or after', async () => {
    const { get } = api()
    const number = phone()
    const q = `address=${encodeURIComponent(number)}`
    const first = await get(`/comms/preferences?${q}`)
    expect(first.statusCode).toBe(200)
    expect(Object.keys(first.json())).toEqual(['data', 'meta'])
    expect(first.json().meta).toEqual({ total: 1, offset: 0, limit: 25, next: null })

    const one = await get(`/comms/preferences?${q}&limit=1&offset=1`)
    expect(one.json()).toEqual({ data: [], meta: { total: 1, offset: 1, limit: 1, next: null } })

    // A page with a next page would name it; a cursor is checked as strictly as any list's.
    const forged = await get(
      `/comms/preferences?${q}&after=${Buffer.from('["sms",1]').toString('base64url')}`,
    )
    expect(forged.statusCode).toBe(400)
    expect(forged.json().errors).toEqual([expect.objectContaining({ path: '/after' })])
    const past = await get(`/comms/preferences?${q}&after=${Buffer.from('["sms"]').toString('base64url')}`)
    expect(past.json()).toEqual({ data: [], meta: { total: 1, offset: 0, limit: 25, next: null } })
    const both = await get(
      `/comms/preferences?${q}&offset=1&after=${Buffer.from('["email"]').toString('base64url')}`,
    )
    expect(both.statusCode).toBe(400)
    expect((await get(`/comms/preferences?${q}&limit=101`)).statusCode).toBe(400)
  })

  it('sets a preference (source api), reads it back, and puts one event without the address in the outbox', async () => {
    const { put, find, principal } = api()
    const number = phone()
    const res = await put('/comms/preferences', { channel: 'sms', address: number, opted_out: true })
    expect(res.statusCode).toBe(200)
    const pref = res.json()
    expect(pref).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/),
      channel: 'sms',
      address: number,
      opted_out: true,
      source: 'api',
      updated_at: expect.stringMatching(/Z$/),
    })
    expect(await find(number, 'sms')).toEqual([pref])

    const events = await consentEvents(principal.companyId, pref.id)
    expect(events).toHaveLength(1)
    const event = events[0]!.payload
    expect(event).toMatchObject({
      subject: pref.id,
      idempresa: principal.companyId,
      actorname: principal.username,
      actorid: principal.userId,
      actortokenid: principal.tokenId,
    })
    expect(event.data).toEqual({
      preference_id: pref.id,
      channel: 'sms',
      opted_out: true,
      source: 'api',
      changes: ['opted_out'],
    })
    // Patient data never goes to events: not the number, not any part of it.
    expect(JSON.stringify(event)).not.toContain(number.slice(1))

    // The same value again writes nothing: no event, the same updated_at.
    const again = await put('/comms/preferences', { channel: 'sms', address: number, opted_out: true })
    expect(again.json()).toEqual(pref)
    expect(await consentEvents(principal.companyId, pref.id)).toHaveLength(1)

    // Opting back in is a change, with its own event.
    const back = await put('/comms/preferences', { channel: 'sms', address: number, opted_out: false })
    expect(back.json()).toMatchObject({ id: pref.id, opted_out: false, source: 'api' })
    expect((await consentEvents(principal.companyId, pref.id)).map((e) => e.payload.data.opted_out)).toEqual([
      true,
      false,
    ])
  })

  it('compares email addresses lower-cased', async () => {
    const { put, find, principal } = api()
    const address = email('Ana.Mixta')
    const res = await put('/comms/preferences', {
      channel: 'email',
      address: `  ${address.toUpperCase()} `,
      opted_out: true,
    })
    expect(res.statusCode).toBe(200)
    expect(res.json()).toMatchObject({ address: address.toLowerCase(), opted_out: true })
    expect(await find(address)).toEqual([res.json()])
    expect((await find(address.toUpperCase()))[0]).toMatchObject({ opted_out: true })
    const events = await consentEvents(principal.companyId, res.json().id)
    expect(JSON.stringify(events)).not.toContain(address.toLowerCase().split('@')[0])
  })

  it('keeps each company to its own preferences', async () => {
    const a = api()
    const b = api()
    const number = phone()
    const set = await a.put('/comms/preferences', { channel: 'sms', address: number, opted_out: true })
    expect(set.statusCode).toBe(200)
    const [seenByB] = await b.find(number)
    expect(seenByB).toMatchObject({ opted_out: false, source: null, updated_at: null })
    // The id is per company too: it never links one person across tenants.
    expect(seenByB!.id).not.toBe(set.json().id)
    await b.put('/comms/preferences', { channel: 'sms', address: number, opted_out: false })
    expect((await a.find(number))[0]).toMatchObject({ opted_out: true, source: 'api' })
    // Row-level security: B's transaction sees no row of A.
    const rows = await h.owner('preferences').where({ address: number }).orderBy('idempresa')
    expect(rows.map((r) => [r.idempresa, r.opted_out])).toEqual(
      [
        [a.principal.companyId, true],
        [b.principal.companyId, false],
      ].sort((x, y) => Number(x[0]) - Number(y[0])),
    )
  })

  it("a token limited to centers reads and changes only the addresses of its centers' patients", async () => {
    const company = testPrincipal()
    const alm1 = api({ ...company, allowedCenters: ['ALM1'] })
    const alm2 = api({ ...company, allowedCenters: ['ALM2'] })
    const number = phone()
    // A patient of ALM1 was messaged at the number; nobody of ALM2 ever was.
    await smsTo(company, makeContact({ phone: number, codalmacen: 'ALM1' }))
    expect(
      (await api(company).put('/comms/preferences', { channel: 'sms', address: number, opted_out: true }))
        .statusCode,
    ).toBe(200)

    // ALM2's token can neither read the consent of ALM1's patient nor flip it.
    expect(await alm2.find(number)).toEqual([])
    const flip = await alm2.put('/comms/preferences', { channel: 'sms', address: number, opted_out: false })
    expect(flip.statusCode).toBe(404)
    expect(flip.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(flip.json().code).toBe('not_found')
    const other = await alm2.put('/comms/preferences', { channel: 'sms', address: phone(), opted_out: true })
    expect(other.json().code).toBe('not_found')
    expect(await h.owner('preferences').where({ idempresa: company.companyId, address: number })).toEqual([
      expect.objectContaining({ opted_out: true, source: 'api' }),
    ])

    // ALM1's token does both, written in any form of the number.
    expect((await alm1.find(number))[0]).toMatchObject({ opted_out: true })
    const spaced = `${number.slice(0, 3)} ${number.slice(3, 6)} ${number.slice(6)}`
    const back = await alm1.put('/comms/preferences', { channel: 'sms', address: number, opted_out: false })
    expect(back.statusCode).toBe(200)
    expect(
      (await alm1.get(`/comms/preferences?address=${encodeURIComponent(spaced)}&channel=sms`)).statusCode,
    ).toBe(400)

    const q = `address=${encodeURIComponent(number)}`
    expect((await alm1.get(`/comms/preferences?${q}&codalmacen=ALM2`)).json().code).toBe('center_forbidden')
    expect((await alm1.get(`/comms/preferences?${q}&codalmacen=NOPE`)).json().code).toBe('unknown_center')
  })

  it("an API call does not undo the person's own STOP unless it says override: true, which the trail shows", async () => {
    const { put, find, principal } = api()
    const number = phone()
    await smsTo(principal, makeContact({ phone: number }))
    expect((await inbound(sms(number, 'STOP'))).statusCode).toBe(200)
    const [stopped] = await find(number)
    expect(stopped).toMatchObject({ opted_out: true, source: 'sms_keyword' })

    const undo = await put('/comms/preferences', { channel: 'sms', address: number, opted_out: false })
    expect(undo.statusCode).toBe(409)
    expect(undo.headers['content-type']).toMatch(/^application\/problem\+json/)
    expect(undo.json()).toMatchObject({ status: 409, code: 'preference_set_by_person' })
    expect(JSON.stringify(undo.json())).not.toContain(number.slice(1))
    expect(
      (
        await put('/comms/preferences', {
          channel: 'sms',
          address: number,
          opted_out: false,
          override: false,
        })
      ).statusCode,
    ).toBe(409)
    expect(await find(number)).toEqual([stopped])
    // The same value as the person's changes nothing and needs no override.
    expect(
      (await put('/comms/preferences', { channel: 'sms', address: number, opted_out: true })).json(),
    ).toEqual(stopped)

    const forced = await put('/comms/preferences', {
      channel: 'sms',
      address: number,
      opted_out: false,
      override: true,
    })
    expect(forced.statusCode).toBe(200)
    expect(forced.json()).toMatchObject({ opted_out: false, source: 'api' })
    const events = await consentEvents(principal.companyId, stopped!.id as string)
    expect(events.map((e) => e.payload.data)).toEqual([
      expect.objectContaining({ opted_out: true, source: 'sms_keyword', changes: ['opted_out'] }),
      {
        preference_id: stopped!.id,
        channel: 'sms',
        opted_out: false,
        source: 'api',
        override: true,
        changes: ['opted_out', 'override'],
      },
    ])
    expect(events[1]!.payload).toMatchObject({ actorname: principal.username, actorid: principal.userId })
    // Set by the API now: the next API change needs no override, and records none.
    const again = await put('/comms/preferences', { channel: 'sms', address: number, opted_out: true })
    expect(again.statusCode).toBe(200)
    expect(
      (await consentEvents(principal.companyId, stopped!.id as string))[2]!.payload.data,
    ).not.toHaveProperty('override')
  })

  it('answers 400 validation_failed naming every bad field', async () => {
    const { put, get } = api()
    const bad = async (res: Awaited<ReturnType<typeof get>>) => {
      expect(res.statusCode).toBe(400)
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/)
      expect(res.json().code).toBe('validation_failed')
      return res.json().errors as Array<{ path: string; message: string }>
    }
    expect(
      await bad(
        await put('/comms/preferences', { channel: 'sms', address: 'ana@example.test', opted_out: true }),
      ),
    ).toEqual([{ path: '/address', message: 'must be an E.164 phone number, e.g. +34600111222' }])
    expect(
      await bad(
        await put('/comms/preferences', { channel: 'email', address: '+34600111222', opted_out: true }),
      ),
    ).toEqual([{ path: '/address', message: 'must be a valid email address' }])
    expect(
      (
        await bad(await put('/comms/preferences', { channel: 'fax', address: '', opted_out: 'yes', id: 'x' }))
      ).map((e) => e.path),
    ).toEqual(expect.arrayContaining(['/channel', '/address', '/opted_out', '/id']))
    expect(
      await bad(await put('/comms/preferences', { channel: 'sms', address: '600111222', opted_out: true })),
    ).toEqual([{ path: '/address', message: 'must be an E.164 phone number, e.g. +34600111222' }])
    expect(await bad(await get('/comms/preferences?address=nobody'))).toEqual([
      { path: '/address', message: 'must be an email address or an E.164 phone number' },
    ])
    expect((await bad(await get('/comms/preferences'))).map((e) => e.path)).toEqual(['/address'])
    expect((await bad(await get('/comms/preferences?address=%2B34600111222&channel=email')))[0]!.path).toBe(
      '/address',
    )
    expect((await bad(await get('/comms/preferences?address=%2B34600111222&channel=fax')))[0]!.path).toBe(
      '/channel',
    )
  })
})

/** An incoming SMS as Twilio posts it, signed with twilio's own helper unless `signature` is given. */
function inbound(params: Record<string, string>, signature?: string | null) {
  const sig = signature === undefined ? twilio.getExpectedTwilioSignature(TOKEN, INBOUND, params) : signature
  return h.app.inject({
    method: 'POST',
    url: '/comms/webhooks/twilio/inbound',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(sig === null ? {} : { 'x-twilio-signature': sig }),
    },
    payload: new URLSearchParams(params).toString(),
  })
}
/** An incoming SMS, which Twilio's API dates `at` (now unless given). */
const sms = (from: string, body: string, at = new Date()) => {
  const MessageSid = `SM${randomUUID().replaceAll('-', '')}`
  twilioApi.incoming(MessageSid, at)
  return { MessageSid, AccountSid: ACCOUNT, From: from, To: '+34900000000', Body: body }
}

describe('POST /comms/webhooks/twilio/inbound (keywords)', () => {
  it('signs for TWILIO_WEBHOOK_URL + /inbound unless TWILIO_INBOUND_WEBHOOK_URL says otherwise', () => {
    expect(INBOUND).toBe('https://clinic.example/api/comms/webhooks/twilio/inbound')
    expect(twilioInboundUrl({ TWILIO_WEBHOOK_URL: `${WEBHOOK}/` })).toBe(INBOUND)
    expect(
      twilioInboundUrl({ TWILIO_WEBHOOK_URL: WEBHOOK, TWILIO_INBOUND_WEBHOOK_URL: 'https://sms.example/in' }),
    ).toBe('https://sms.example/in')
    expect(twilioInboundUrl({})).toBeUndefined()
  })

  it('refuses a missing or wrong signature with 403 and changes nothing', async () => {
    const principal = testPrincipal()
    const number = phone()
    await smsTo(principal, makeContact({ phone: number }))
    const params = sms(number, 'STOP')
    for (const signature of [
      null,
      'bm90IGEgc2lnbmF0dXJl',
      twilio.getExpectedTwilioSignature('another-auth-token', INBOUND, params),
      // Signed for the status callback's URL: the inbound URL is part of what is signed.
      twilio.getExpectedTwilioSignature(TOKEN, WEBHOOK, params),
    ]) {
      const res = await inbound(params, signature)
      expect(res.statusCode).toBe(403)
      expect(res.json().code).toBe('invalid_signature')
    }
    // A signed form with one field changed after signing.
    const forged = await inbound(
      { ...params, Body: 'START' },
      twilio.getExpectedTwilioSignature(TOKEN, INBOUND, params),
    )
    expect(forged.statusCode).toBe(403)
    expect(await h.owner('preferences').where({ address: number })).toEqual([])
    // The signature check is twilio's own: what it accepts, we accept.
    expect(
      twilio.validateRequest(
        TOKEN,
        twilio.getExpectedTwilioSignature(TOKEN, INBOUND, params),
        INBOUND,
        params,
      ),
    ).toBe(true)
  })

  it('STOP opts the number out in every company that wrote to it (one event each), START back in', async () => {
    const a = api()
    const b = api()
    const stranger = api()
    const number = phone()
    await smsTo(a.principal, makeContact({ phone: number }))
    await smsTo(b.principal, makeContact({ phone: number }))

    const stop = await inbound(sms(number, 'STOP'))
    expect(stop.statusCode).toBe(200)
    expect(stop.headers['content-type']).toMatch(/^text\/xml/)
    expect(stop.body).toBe('<?xml version="1.0" encoding="UTF-8"?><Response/>')

    for (const who of [a, b]) {
      const [pref] = await who.find(number)
      expect(pref).toMatchObject({ channel: 'sms', opted_out: true, source: 'sms_keyword' })
      const events = await consentEvents(who.principal.companyId, pref!.id as string)
      expect(events).toHaveLength(1)
      expect(events[0]!.payload).toMatchObject({ actorname: 'sms-keyword', requestid: expect.any(String) })
      expect(events[0]!.payload.actorid).toBeUndefined()
      expect(events[0]!.payload.data).toEqual({
        preference_id: pref!.id,
        channel: 'sms',
        opted_out: true,
        source: 'sms_keyword',
        changes: ['opted_out'],
      })
      expect(JSON.stringify(events[0]!.payload)).not.toContain(number.slice(1))
    }
    // A company that never wrote to the number gets no row.
    expect((await stranger.find(number))[0]).toMatchObject({ opted_out: false, source: null })
    // The send path suppresses what goes to it now.
    expect((await smsTo(a.principal, makeContact({ phone: number }))).status).toBe('suppressed')

    // STOP again changes nothing: no second event.
    expect((await inbound(sms(number, 'Stop'))).statusCode).toBe(200)
    const [prefA] = await a.find(number)
    expect(await consentEvents(a.principal.companyId, prefA!.id as string)).toHaveLength(1)

    const start = await inbound(sms(number, ' start '))
    expect(start.statusCode).toBe(200)
    for (const who of [a, b]) {
      const [pref] = await who.find(number)
      expect(pref).toMatchObject({ opted_out: false, source: 'sms_keyword' })
      const events = await consentEvents(who.principal.companyId, pref!.id as string)
      expect(events.map((e) => e.payload.data.opted_out)).toEqual([true, false])
    }
    expect((await smsTo(a.principal, makeContact({ phone: number }))).status).toBe('queued')
  })

  it('takes keywords in any case and language of the list (stop, baja, CANCELAR, alta), and ignores other texts', async () => {
    const { principal, find } = api()
    const number = phone()
    await smsTo(principal, makeContact({ phone: number }))
    const state = async () => (await find(number))[0]!.opted_out
    for (const [body, optedOut] of [
      ['hola, ¿a qué hora es la cita?', false],
      ['stop', true],
      ['ALTA', false],
      ['baja', true],
      ['Sí', true],
      ['alta!', false],
      ['CANCELAR', true],
      ['please stop sending', true],
    ] as const) {
      const res = await inbound(sms(number, body))
      expect(res.statusCode).toBe(200)
      expect(res.body).toBe('<?xml version="1.0" encoding="UTF-8"?><Response/>')
      expect(await state()).toBe(optedOut)
    }
  })

  it("keeps one preference for a guardian's phone that serves two children of one company", async () => {
    const { principal, find } = api()
    const number = phone()
    const guardian = guardianOf({ phone: number, email: null })
    for (const child of [
      makeContact({ requires_legal_guardian: true, guardian, phone: null }),
      makeContact({ requires_legal_guardian: true, guardian, phone: null }),
    ]) {
      const m = await smsTo(principal, child)
      expect(m.status).toBe('queued')
    }
    expect((await inbound(sms(number, 'BAJA'))).statusCode).toBe(200)
    const rows = await h.owner('preferences').where({ idempresa: principal.companyId, address: number })
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({ channel: 'sms', opted_out: true, source: 'sms_keyword' })
    const [pref] = await find(number)
    expect(await consentEvents(principal.companyId, pref!.id as string)).toHaveLength(1)
  })

  it('a replayed START (the same signed request again) never undoes a later STOP', async () => {
    const { principal, find } = api()
    const number = phone()
    await smsTo(principal, makeContact({ phone: number }))
    const start = sms(number, 'START', new Date(Date.now() - 120_000))
    expect((await inbound(start)).statusCode).toBe(200)
    expect((await inbound(sms(number, 'STOP', new Date(Date.now() - 60_000)))).statusCode).toBe(200)
    const [stopped] = await find(number)
    expect(stopped).toMatchObject({ opted_out: true, source: 'sms_keyword' })

    // The captured request, signature and all, sent again: 200 (Twilio's answer) and nothing changes.
    const replay = await inbound(start)
    expect(replay.statusCode).toBe(200)
    expect(await find(number)).toEqual([stopped])
    const events = await consentEvents(principal.companyId, stopped!.id as string)
    // START's row (opted in), then STOP; the replay added nothing.
    expect(events.map((e) => e.payload.data.opted_out)).toEqual([false, true])
    expect(await h.owner('sms_keywords').where({ sender: number }).select('message_sid')).toHaveLength(2)
  })

  it('applies keywords in the order Twilio received them: an older START delivered late changes nothing', async () => {
    const { principal, find } = api()
    const number = phone()
    await smsTo(principal, makeContact({ phone: number }))
    const now = Date.now()
    expect((await inbound(sms(number, 'STOP', new Date(now - 60_000)))).statusCode).toBe(200)
    // Sent before the STOP, delivered after it (never seen before, so no duplicate).
    expect((await inbound(sms(number, 'ALTA', new Date(now - 120_000)))).statusCode).toBe(200)
    expect((await find(number))[0]).toMatchObject({ opted_out: true, source: 'sms_keyword' })
    // A newer one does apply.
    expect((await inbound(sms(number, 'START', new Date(now - 30_000)))).statusCode).toBe(200)
    expect((await find(number))[0]).toMatchObject({ opted_out: false, source: 'sms_keyword' })
  })

  it('ignores a message without a MessageSid, and one Twilio cannot date falls back to its arrival', async () => {
    const { principal, find } = api()
    const number = phone()
    await smsTo(principal, makeContact({ phone: number }))
    const { MessageSid: _, ...noSid } = sms(number, 'STOP')
    expect((await inbound(noSid)).statusCode).toBe(200)
    expect((await find(number))[0]).toMatchObject({ opted_out: false, source: null })
    // A sid Twilio's API does not know: dated by its arrival, so applied after what came before.
    const unknown = { ...sms(number, 'STOP'), MessageSid: `SM${randomUUID().replaceAll('-', '')}` }
    expect((await inbound(unknown)).statusCode).toBe(200)
    expect((await find(number))[0]).toMatchObject({ opted_out: true })
  })

  it('ignores a sender that is not an E.164 number', async () => {
    const res = await inbound(sms('whatsapp:+34600111222', 'STOP'))
    expect(res.statusCode).toBe(200)
    expect(await h.owner('preferences').where({ address: 'whatsapp:+34600111222' })).toEqual([])
  })
})

describe('one-click unsubscribe in every email (RFC 8058)', () => {
  let mail: Harness
  let smtp: Awaited<ReturnType<typeof startSmtp>>
  let tap: Awaited<ReturnType<typeof tapEvents>>
  const noSms: Provider = { send: async () => ({ providerId: 'unused' }) }

  beforeAll(async () => {
    smtp = await startSmtp()
    mail = await startComms({
      providers: { email: new SmtpProvider(smtp.url, 'Clinic <no-reply@clinic.example>', 2), sms: noSms },
    })
    tap = await tapEvents(mail.amqpUrl, 'comms.preference.updated')
  })
  afterAll(async () => {
    await tap.close()
    await mail.close()
    await smtp.close()
  })

  /** The headers of a received email, unfolded (RFC 5322), by lower-case name. */
  const headersOf = (raw: string) => {
    const head = raw.split(/\r?\n\r?\n/)[0]!.replace(/\r?\n[ \t]+/g, ' ')
    return Object.fromEntries(
      head
        .split(/\r?\n/)
        .map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
    )
  }
  async function sendEmail(principal: Principal, address: string, language = 'es') {
    const contact = makeContact({ email: address, language })
    mail.directory.addPatient(principal.companyId, contact)
    const res = await clientFor(mail.app, principal).post('/comms/send', {
      patient_id: contact.id,
      channel: 'email',
      subject: 'Su cita',
      body: 'Recordatorio',
    })
    expect(res.statusCode).toBe(202)
    return res.json() as { id: string; status: string }
  }
  const received = (messageId: string) =>
    waitFor(
      () =>
        smtp.received.find((m) => /^x-clinic-message-id: *(.*)$/im.exec(m.raw)?.[1]?.trim() === messageId),
      { timeoutMs: 15_000, what: 'the email' },
    )
  const page = (method: 'GET' | 'POST', url: string, o: { payload?: string; type?: string } = {}) =>
    mail.app.inject({
      method,
      url,
      headers: o.type ? { 'content-type': o.type } : {},
      ...(o.payload === undefined ? {} : { payload: o.payload }),
    })
  const expectPage = (res: Awaited<ReturnType<typeof page>>, status: number) => {
    expect(res.statusCode).toBe(status)
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8')
    expect(res.headers['content-security-policy']).toBe(
      "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
    )
    expect(res.headers['cache-control']).toBe('no-store')
    expect(res.headers['x-content-type-options']).toBe('nosniff')
    expect(res.headers['referrer-policy']).toBe('no-referrer')
    expect(res.body).not.toMatch(/<script/i)
  }

  it('carries List-Unsubscribe and List-Unsubscribe-Post; the one-click POST opts the address out (email_unsubscribe)', async () => {
    const principal = testPrincipal()
    const address = email('Una.Baja')
    const sent = await sendEmail(principal, address)
    const headers = headersOf((await received(sent.id)).raw)
    expect(headers['list-unsubscribe-post']).toBe('List-Unsubscribe=One-Click')
    const url = /^<(http:\/\/127\.0\.0\.1:8080\/p\/u\/[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)>$/.exec(
      headers['list-unsubscribe'] ?? '',
    )?.[1]
    expect(url).toBeDefined()
    const path = new URL(url!).pathname

    // Opening the link (a person, a link scanner) changes nothing: a page with one button.
    const ask = await page('GET', path)
    expectPage(ask, 200)
    expect(ask.body).toContain('<html lang="es">')
    expect(ask.body).toContain('<form method="post">')
    expect(ask.body).toContain('name="List-Unsubscribe" value="One-Click"')
    const me = api(principal, () => mail)
    expect((await me.find(address))[0]).toMatchObject({ opted_out: false })

    // The mail client's one-click POST (RFC 8058: the key/value of List-Unsubscribe-Post).
    const done = await page('POST', path, {
      payload: 'List-Unsubscribe=One-Click',
      type: 'application/x-www-form-urlencoded',
    })
    expectPage(done, 200)
    const [pref] = await me.find(address)
    expect(pref).toMatchObject({
      channel: 'email',
      address: address.toLowerCase(),
      opted_out: true,
      source: 'email_unsubscribe',
    })
    // On the audit trail: one event, actor email-unsubscribe, no address.
    const [event] = await waitFor(() =>
      tap.about(pref!.id as string).length ? tap.about(pref!.id as string) : null,
    )
    expect(event).toMatchObject({
      type: 'comms.preference.updated',
      idempresa: principal.companyId,
      actorname: 'email-unsubscribe',
      data: {
        preference_id: pref!.id,
        channel: 'email',
        opted_out: true,
        source: 'email_unsubscribe',
        changes: ['opted_out'],
      },
    })
    expect(JSON.stringify(event)).not.toContain(address.toLowerCase().split('@')[0])

    // As multipart/form-data (RFC 8058's own example) and again: still 200, nothing more written.
    const boundary = '---FormBoundaryjWmhtjORrn'
    const multipart = `--${boundary}\r\nContent-Disposition: form-data; name="List-Unsubscribe"\r\n\r\nOne-Click\r\n--${boundary}--\r\n`
    expectPage(
      await page('POST', path, { payload: multipart, type: `multipart/form-data; boundary=${boundary}` }),
      200,
    )
    expect((await me.find(address))[0]).toEqual(pref)

    // The next email to the address is suppressed, never sent.
    expect((await sendEmail(principal, address.toUpperCase())).status).toBe('suppressed')
  })

  it('speaks the link language, and answers bad links with pages (400 altered, 404 unknown message), never a 5xx', async () => {
    const principal = testPrincipal()
    const sent = await sendEmail(principal, email(), 'en')
    const url = /<([^>]+)>/.exec(headersOf((await received(sent.id)).raw)['list-unsubscribe'] ?? '')![1]!
    const path = new URL(url).pathname
    const ask = await page('GET', path)
    expectPage(ask, 200)
    expect(ask.body).toContain('<html lang="en">')

    const token = path.slice('/p/u/'.length)
    const [header, body, mac] = token.split('.')
    const altered = [
      `${header}.${body}.${mac!.slice(0, -2)}AA`,
      `${header}.${Buffer.from(JSON.stringify({ companyId: principal.companyId + 1, messageId: sent.id, lang: 'en', aud: 'clinic-link:unsubscribe' })).toString('base64url')}.${mac}`,
      await signLink('another-secret-another-secret-0123456789', UNSUBSCRIBE_LINK, {
        companyId: principal.companyId,
        messageId: sent.id,
        lang: 'en',
      }),
      // An appointment link's token is not an unsubscribe token.
      await signLink(TEST_LINK_SECRET, APPOINTMENT_LINK, {
        id: randomUUID(),
        companyId: principal.companyId,
        appointmentId: randomUUID(),
        lang: 'en',
        exp: Math.floor(Date.now() / 1000) + 3600,
      }),
      'not-a-token',
      'x'.repeat(2000),
      '%00',
    ]
    for (const t of altered)
      for (const method of ['GET', 'POST'] as const) {
        const res = await page(
          method,
          `/p/u/${t}`,
          method === 'POST'
            ? { payload: 'List-Unsubscribe=One-Click', type: 'application/x-www-form-urlencoded' }
            : {},
        )
        expectPage(res, 400)
      }
    // Signed, but no such message in that company (or another company's message).
    for (const link of [
      { companyId: principal.companyId, messageId: randomUUID(), lang: 'en' },
      { companyId: principal.companyId + 1, messageId: sent.id, lang: 'en' },
      { companyId: principal.companyId, messageId: 'not-a-uuid', lang: 'en' },
    ]) {
      const t = await signLink(TEST_LINK_SECRET, UNSUBSCRIBE_LINK, link)
      expectPage(await page('GET', `/p/u/${t}`), 404)
      const res = await page('POST', `/p/u/${t}`, {
        payload: 'List-Unsubscribe=One-Click',
        type: 'application/x-www-form-urlencoded',
      })
      expectPage(res, 404)
      expect(res.body).toContain('<html lang="en">')
    }
    // An SMS's id in an unsubscribe token (comms never makes one) unsubscribes nothing.
    const contact = makeContact({ phone: phone() })
    mail.directory.addPatient(principal.companyId, contact)
    const text = await clientFor(mail.app, principal).post('/comms/send', {
      patient_id: contact.id,
      channel: 'sms',
      body: 'Recordatorio',
    })
    expect(text.statusCode).toBe(202)
    const t = await signLink(TEST_LINK_SECRET, UNSUBSCRIBE_LINK, {
      companyId: principal.companyId,
      messageId: text.json().id,
      lang: 'es',
    })
    expectPage(
      await page('POST', `/p/u/${t}`, { payload: '', type: 'application/x-www-form-urlencoded' }),
      404,
    )
    expect(await mail.owner('preferences').where({ idempresa: principal.companyId })).toEqual([])
  })
})
