import { randomBytes } from 'node:crypto'
import { createLogger } from '@clinic/platform'
import { tapEvents, testPrincipal, waitFor } from '@clinic/platform/testing'
import twilio from 'twilio'
import { DeliveryRepository } from '../../src/db/repositories/delivery-repository'
import { setCompany } from '@clinic/platform/db'
import { deliverMessage, type ClaimedMessage, type Provider } from '../../src/domain/deliver-message'
import { DeliveryWorker } from '../../src/worker'
import { SmtpProvider } from '../../src/providers/smtp-provider'
import { TwilioProvider } from '../../src/providers/twilio-provider'
import { makeContact } from '../fixtures'
import { clientFor, startComms, startSmtp, startTwilio, type Harness } from '../helpers'

const SID = 'AC00000000000000000000000000000001'
const TOKEN = 'test-twilio-auth-token'
const WEBHOOK = 'https://clinic.example/api/comms/webhooks/twilio'

let h: Harness
let smtp: Awaited<ReturnType<typeof startSmtp>>
let tw: Awaited<ReturnType<typeof startTwilio>>
let tap: Awaited<ReturnType<typeof tapEvents>>
/** Every log line of the app and the worker (LOG_LEVEL trace), for the privacy checks. */
const logLines: string[] = []

beforeAll(async () => {
  smtp = await startSmtp()
  tw = await startTwilio(SID, TOKEN)
  h = await startComms({
    providers: {
      email: new SmtpProvider(smtp.url, 'Clinic <no-reply@clinic.example>', 2),
      sms: new TwilioProvider({ accountSid: SID, authToken: TOKEN, from: '+34900000000', apiUrl: tw.url }),
    },
    twilio: { authToken: TOKEN, webhookUrl: WEBHOOK },
    logLines,
  })
  tap = await tapEvents(h.amqpUrl, 'comms.message.*')
})
afterAll(async () => {
  await tap.close()
  await h.close()
  await smtp.close()
  await tw.close()
})

async function send(contact: ReturnType<typeof makeContact>, body: Record<string, unknown> = {}) {
  const principal = testPrincipal()
  h.directory.addPatient(principal.companyId, contact)
  const res = await clientFor(h.app, principal).post('/comms/send', {
    patient_id: contact.id,
    body: 'Recordatorio',
    ...body,
  })
  expect(res.statusCode).toBe(202)
  return { principal, id: res.json().id as string, client: clientFor(h.app, principal) }
}

const rowOf = (companyId: number, id: string) =>
  h.owner('messages').where({ idempresa: companyId, id }).first()
/** The message once it left queued and sending; a retry waiting out its backoff gets the clock moved past it. */
const settled = (companyId: number, id: string) =>
  waitFor(
    async () => {
      const r = await rowOf(companyId, id)
      if (r?.status === 'queued' && r.attempts > 0) h.moveDeliveryClock(10 * 60_000)
      return r && !['queued', 'sending'].includes(r.status) ? r : null
    },
    { timeoutMs: 15_000 },
  )
/** A day from the worker's clock: a row due then is not the running worker's until a test claims it. */
const later = () => new Date(h.deliveryClock().getTime() + 86_400_000)
/** Claims `id` as a worker would (whatever else is due by `at` is claimed too: none is, by then). */
async function claimAt(at: Date, id: string): Promise<ClaimedMessage | undefined> {
  return (await new DeliveryRepository(h.knex).claim(at, 100)).find((m) => m.id === id)
}
const deps = (providers: Record<'email' | 'sms', Provider>) => ({
  store: new DeliveryRepository(h.knex),
  providers,
  maxAttempts: 3,
  retryBaseMs: 60_000,
  clock: h.deliveryClock,
})
/** The events published about a message (a tap on the broker), once `n` of them have arrived. */
const eventsOf = (id: string, n: number) =>
  waitFor(() => (tap.about(id).length >= n ? tap.about(id) : null), {
    timeoutMs: 10_000,
    what: `${n} events`,
  })
const typesOf = async (id: string, n: number) => (await eventsOf(id, n)).map((e) => e.type)
/**
 * The events published about a message, as `type:status`, once every event written before this
 * call is out: the relay publishes in outbox order, so a fresh message's queued event is a barrier.
 */
async function publishedOf(id: string) {
  const principal = testPrincipal()
  const contact = makeContact({ email: 'barrier@example.test' })
  h.directory.addPatient(principal.companyId, contact)
  const res = await clientFor(h.app, principal).post('/comms/send', { patient_id: contact.id, body: 'x' })
  await eventsOf(res.json().id as string, 1)
  return tap.about(id).map((e) => `${e.type}:${(e.data as { status: string }).status}`)
}

/** A Twilio status callback, signed as Twilio signs it unless `signature` says otherwise. */
const receipt = (
  params: Record<string, string>,
  signature: string | null = twilio.getExpectedTwilioSignature(TOKEN, WEBHOOK, params),
) =>
  h.app.inject({
    method: 'POST',
    url: '/comms/webhooks/twilio',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      ...(signature === null ? {} : { 'x-twilio-signature': signature }),
    },
    payload: new URLSearchParams(params).toString(),
  })
const receiptFor = (sid: string, status: string, extra: Record<string, string> = {}) =>
  receipt({ MessageSid: sid, MessageStatus: status, AccountSid: SID, ...extra })

/** A queued SMS written straight to the table, due only tomorrow: the running worker leaves it alone. */
async function queuedSms(companyId: number) {
  const id = `0190c5a0-0000-7000-8000-${randomBytes(6).toString('hex')}`
  await h.knex.transaction(async (trx) => {
    await setCompany(trx, companyId)
    await trx('messages').insert({
      idempresa: companyId,
      id,
      patient_id: '0190c5a0-0000-7000-8000-0000000f0001',
      channel: 'sms',
      recipient_role: 'patient',
      recipient_name: 'Testa',
      recipient_address: '+34600000125',
      body: 'x',
      next_attempt_at: later(),
    })
  })
  return id
}

describe('email over SMTP (a real smtp-server)', () => {
  it('delivers once and marks the message sent with the provider id', async () => {
    const { principal, id, client } = await send(makeContact({ email: 'ana@example.test' }), {
      subject: 'Cita',
    })
    const row = await settled(principal.companyId, id)
    expect(row).toMatchObject({ status: 'sent', attempts: 1, last_error: null })
    expect(row.provider_id).toMatch(/^<.+>$/)
    expect(smtp.copiesOf(id)).toBe(1)
    const mail = smtp.received.find((m) => m.raw.includes(id))!
    expect(mail.to).toEqual(['ana@example.test'])
    expect(mail.raw).toContain('Subject: Cita')
    const shown = (await client.get(`/comms/messages/${id}`)).json()
    expect(shown).toMatchObject({ status: 'sent', provider_id: row.provider_id, sent_at: expect.any(String) })
    expect(await typesOf(id, 2)).toEqual(['comms.message.queued', 'comms.message.sent'])
    // The sent event names who queued the message, and the request that did.
    const [queued, sent] = await eventsOf(id, 2)
    expect(sent).toMatchObject({
      actorid: principal.userId,
      actorname: principal.username,
      actortokenid: principal.tokenId,
      requestid: queued!.requestid,
    })
  })

  it('a 4xx answer is retried after its backoff, then sent', async () => {
    const { principal, id } = await send(makeContact({ email: 'tempfail-1@example.test' }))
    const row = await settled(principal.companyId, id)
    expect(row).toMatchObject({ status: 'sent', attempts: 2 })
    expect(smtp.copiesOf(id)).toBe(1)
  })

  it('a transient failure waits in the table until its backoff is over on the worker clock, not in a sleep', async () => {
    const before = h.deliveryClock().getTime()
    const { principal, id } = await send(makeContact({ email: 'tempfail-wait@example.test' }))
    const waiting = await waitFor(
      async () => {
        const r = await rowOf(principal.companyId, id)
        return r?.status === 'queued' && r.attempts === 1 ? r : null
      },
      { what: 'the retry scheduled' },
    )
    expect(waiting.last_error).toBe('smtp 451 (RCPT)')
    // retryDelay(60 s, 1): between 30 and 60 s after the failure, by the worker's clock.
    const delay = new Date(waiting.next_attempt_at).getTime() - before
    expect(delay).toBeGreaterThanOrEqual(30_000)
    expect(delay).toBeLessThan(65_000)
    // Not due yet: a look finds nothing to do; the worker holds nothing meanwhile.
    h.worker!.wake()
    await h.worker!.idle()
    expect(await rowOf(principal.companyId, id)).toMatchObject({ status: 'queued', attempts: 1 })
    expect(smtp.copiesOf(id)).toBe(0)
    // Time moves past it: the second attempt is made and succeeds.
    h.moveDeliveryClock(60_000)
    expect(await settled(principal.companyId, id)).toMatchObject({
      status: 'sent',
      attempts: 2,
      last_error: null,
    })
    expect(smtp.copiesOf(id)).toBe(1)
  })

  it('a 5xx answer fails at once with last_error; nothing retried', async () => {
    const { principal, id } = await send(makeContact({ email: 'reject-1@example.test' }))
    const row = await settled(principal.companyId, id)
    expect(row).toMatchObject({ status: 'failed', attempts: 1, last_error: 'smtp 550 (RCPT)' })
    expect(smtp.copiesOf(id)).toBe(0)
    expect(await typesOf(id, 2)).toEqual(['comms.message.queued', 'comms.message.failed'])
  })

  it('two workers over the same due messages send each once', async () => {
    const provider = new SmtpProvider(smtp.url, 'Clinic <no-reply@clinic.example>', 2)
    const second = new DeliveryWorker({
      store: new DeliveryRepository(h.knex),
      log: createLogger({ service: 'comms', level: 'silent' }),
      providers: { email: provider, sms: provider },
      clock: h.deliveryClock,
      maxAttempts: 3,
      retryBaseMs: 60_000,
      staleMinutes: 10,
      concurrency: 4,
      pollMs: 20,
    }).start()
    try {
      const sends = await Promise.all(
        Array.from({ length: 12 }, (_, i) => send(makeContact({ email: `race-${i}@example.test` }))),
      )
      for (const { principal, id } of sends)
        expect(await settled(principal.companyId, id)).toMatchObject({ status: 'sent', attempts: 1 })
      expect(sends.map(({ id }) => smtp.copiesOf(id))).toEqual(sends.map(() => 1))
    } finally {
      await second.stop()
    }
  })
})

describe('the worker dies after the provider accepted (at most once)', () => {
  it('the row stays sending; the sweep marks it failed "outcome unknown"; the job sends nothing again', async () => {
    // No worker in this company's path: claim it as a worker would, then "die" before recording.
    const principal = testPrincipal()
    const contact = makeContact({ email: 'crash@example.test' })
    h.directory.addPatient(principal.companyId, contact)
    // Insert directly (no queued event reaches the running worker).
    const id = '0190c5a0-0000-7000-8000-0000000c0001'
    await h.knex.transaction(async (trx) => {
      await setCompany(trx, principal.companyId)
      await trx('messages').insert({
        idempresa: principal.companyId,
        id,
        patient_id: contact.id,
        channel: 'email',
        recipient_role: 'patient',
        recipient_name: 'Testa',
        recipient_address: contact.email,
        body: 'x',
        next_attempt_at: later(),
      })
    })
    const claimed = await claimAt(later(), id)
    expect(claimed).toMatchObject({ attempts: 1 })
    expect((await rowOf(principal.companyId, id)).status).toBe('sending')
    // ...the provider accepted here, and the process died.
    const store = new DeliveryRepository(h.knex)
    expect(await store.failStale(10)).toEqual([])
    await h
      .owner('messages')
      .where({ id })
      .update({ claimed_at: h.owner.raw("now() - interval '11 minutes'") })
    const swept = await store.failStale(10)
    expect(swept.map((m) => m.id)).toEqual([id])
    const row = await rowOf(principal.companyId, id)
    expect(row.status).toBe('failed')
    expect(row.last_error).toMatch(/^outcome unknown/)
    expect(await typesOf(id, 1)).toEqual(['comms.message.failed'])
    // Nothing brings it back: no claim finds it, and the dead worker's outcome is not written.
    expect(await claimAt(new Date(later().getTime() + 86_400_000), id)).toBeUndefined()
    const late = await store.transaction(principal.companyId, (tx) =>
      tx.finish(id, 1, { providerId: 'late' }),
    )
    expect(late).toBeNull()
    expect(smtp.copiesOf(id)).toBe(0)
  })
})

describe('SMS with the real twilio client against a local Twilio API', () => {
  it('sends, stores the sid, and takes signed status callbacks', async () => {
    const { principal, id, client } = await send(makeContact({ email: null, phone: '+34600000123' }))
    const row = await settled(principal.companyId, id)
    expect(row).toMatchObject({ status: 'sent', channel: 'sms' })
    const sent = tw.sent.find((s) => s.sid === row.provider_id)!
    expect(sent).toMatchObject({ To: '+34600000123', From: '+34900000000', Body: 'Recordatorio' })

    const params = { MessageSid: row.provider_id, MessageStatus: 'delivered', AccountSid: SID }
    const post = (signature: string, p: Record<string, string> = params) =>
      h.app.inject({
        method: 'POST',
        url: '/comms/webhooks/twilio',
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': signature },
        payload: new URLSearchParams(p).toString(),
      })
    const forged = await post(twilio.getExpectedTwilioSignature('wrong-token', WEBHOOK, params))
    expect(forged.statusCode).toBe(403)
    expect(forged.headers['content-type']).toContain('application/problem+json')
    expect((await rowOf(principal.companyId, id)).status).toBe('sent')
    const ok = await post(twilio.getExpectedTwilioSignature(TOKEN, WEBHOOK, params))
    expect(ok.statusCode).toBe(204)
    expect((await client.get(`/comms/messages/${id}`)).json().status).toBe('delivered')
    expect(await typesOf(id, 3)).toEqual([
      'comms.message.queued',
      'comms.message.sent',
      'comms.message.delivered',
    ])
    const unknown = { ...params, MessageSid: 'SM99999999999999999999999999999999' }
    expect((await post(twilio.getExpectedTwilioSignature(TOKEN, WEBHOOK, unknown), unknown)).statusCode).toBe(
      204,
    )
  })

  it('Twilio 4xx fails at once; 5xx is retried then sent', async () => {
    const bad = await send(makeContact({ email: null, phone: '+34600000400' }))
    expect(await settled(bad.principal.companyId, bad.id)).toMatchObject({
      status: 'failed',
      attempts: 1,
      last_error: 'twilio 400 error 21211',
    })
    const flaky = await send(makeContact({ email: null, phone: '+34600000503' }))
    expect(await settled(flaky.principal.companyId, flaky.id)).toMatchObject({ status: 'sent', attempts: 2 })
  })

  it('an undelivered (or failed) receipt makes the message undelivered with the error code; it stays so', async () => {
    const { principal, id, client } = await send(makeContact({ email: null, phone: '+34600000124' }))
    const row = await settled(principal.companyId, id)
    const res = await receiptFor(row.provider_id, 'undelivered', { ErrorCode: '30003' })
    expect(res.statusCode).toBe(204)
    expect((await client.get(`/comms/messages/${id}`)).json()).toMatchObject({
      status: 'undelivered',
      last_error: 'twilio error 30003',
    })
    expect(await typesOf(id, 3)).toEqual([
      'comms.message.queued',
      'comms.message.sent',
      'comms.message.delivered',
    ])
    expect(tap.about(id)[2]!.data).toMatchObject({ status: 'undelivered' })
    // Final: a late (out of order) delivered receipt changes nothing and emits nothing.
    expect((await receiptFor(row.provider_id, 'delivered')).statusCode).toBe(204)
    expect((await rowOf(principal.companyId, id)).status).toBe('undelivered')
    expect(await publishedOf(id)).toEqual([
      'comms.message.queued:queued',
      'comms.message.sent:sent',
      'comms.message.delivered:undelivered',
    ])
  })

  it('delivered is final: a later undelivered or failed receipt does not overturn it', async () => {
    const { principal, id } = await send(makeContact({ email: null, phone: '+34600000126' }))
    const row = await settled(principal.companyId, id)
    expect((await receiptFor(row.provider_id, 'delivered')).statusCode).toBe(204)
    for (const status of ['undelivered', 'failed', 'delivered'])
      expect((await receiptFor(row.provider_id, status, { ErrorCode: '30005' })).statusCode).toBe(204)
    expect(await rowOf(principal.companyId, id)).toMatchObject({ status: 'delivered', last_error: null })
    expect(await publishedOf(id)).toEqual([
      'comms.message.queued:queued',
      'comms.message.sent:sent',
      'comms.message.delivered:delivered',
    ])
  })

  it('an unknown sid is 204 and changes nothing; a missing or wrong signature is 403 invalid_signature', async () => {
    const { principal, id } = await send(makeContact({ email: null, phone: '+34600000127' }))
    const row = await settled(principal.companyId, id)
    const unknown = await receiptFor(`SM${randomBytes(16).toString('hex')}`, 'delivered')
    expect(unknown.statusCode).toBe(204)
    const params = { MessageSid: row.provider_id, MessageStatus: 'delivered', AccountSid: SID }
    const missing = await receipt(params, null)
    // Signed for other parameters (a replayed signature with the status changed).
    const tampered = await receipt(
      params,
      twilio.getExpectedTwilioSignature(TOKEN, WEBHOOK, { ...params, MessageStatus: 'undelivered' }),
    )
    for (const res of [missing, tampered]) {
      expect([res.statusCode, res.json().code]).toEqual([403, 'invalid_signature'])
      expect(res.headers['content-type']).toContain('application/problem+json')
    }
    expect(await rowOf(principal.companyId, id)).toMatchObject({ status: 'sent', version: row.version })
    expect(await publishedOf(id)).toEqual(['comms.message.queued:queued', 'comms.message.sent:sent'])
  })
})

describe('a Twilio receipt that arrives before the worker recorded the sid', () => {
  it('is kept and applied when the send is recorded (the callback beat the Messages API answer)', async () => {
    const principal = testPrincipal()
    const id = await queuedSms(principal.companyId)
    const sid = `SM${randomBytes(16).toString('hex')}`
    let early: number | undefined
    // Twilio's callback comes in while the provider call has not returned yet.
    const racing: Provider = {
      async send() {
        early = (await receiptFor(sid, 'delivered')).statusCode
        return { providerId: sid }
      },
    }
    const outcome = await deliverMessage(
      { auth: principal, log: h.app.log, requestId: '' },
      deps({ email: racing, sms: racing }),
      (await claimAt(later(), id))!,
    )
    expect([early, outcome]).toEqual([204, 'sent'])
    expect(await rowOf(principal.companyId, id)).toMatchObject({ status: 'delivered', provider_id: sid })
    expect(await publishedOf(id)).toEqual(['comms.message.sent:sent', 'comms.message.delivered:delivered'])
  })

  it('waits for a finish in progress, then applies to the committed row', async () => {
    const principal = testPrincipal()
    const id = await queuedSms(principal.companyId)
    const sid = `SM${randomBytes(16).toString('hex')}`
    expect(await claimAt(later(), id)).toBeDefined()
    // The worker's transaction: the row is sent with its sid, not yet committed.
    const { pending } = await new DeliveryRepository(h.knex).transaction(principal.companyId, async (tx) => {
      await tx.finish(id, 1, { providerId: sid })
      expect(await tx.applyEarlyReceipt(sid)).toBeNull()
      const pending = receiptFor(sid, 'undelivered', { ErrorCode: '30003' })
      // The callback waits on the sid's lock rather than missing the uncommitted row.
      await waitFor(
        async () =>
          Number(
            (
              await h.owner.raw(
                `select count(*) as n from pg_locks where locktype = 'advisory' and objsubid = 2 and not granted`,
              )
            ).rows[0].n,
          ) > 0,
        { what: 'the receipt waiting on the lock' },
      )
      return { pending }
    })
    expect((await pending).statusCode).toBe(204)
    expect(await rowOf(principal.companyId, id)).toMatchObject({
      status: 'undelivered',
      last_error: 'twilio error 30003',
    })
  })
})

describe('privacy', () => {
  it('no body, subject, address or name in any log line or comms event (sent, retried, failed)', async () => {
    const tag = randomBytes(4).toString('hex')
    const sends = [
      { email: `privacy-${tag}@example.test` },
      { email: `tempfail-privacy-${tag}@example.test` },
      { email: `reject-privacy-${tag}@example.test` },
      { email: null, phone: `+3469${String(parseInt(tag, 16) % 10_000_000).padStart(7, '0')}` },
      { email: null, phone: '+34600000400' },
    ]
    const secrets: string[] = []
    const ids: string[] = []
    for (const [i, contact] of sends.entries()) {
      const c = makeContact({ ...contact, last_name: `Reservada${tag}${i}` })
      const text = `Cuerpo confidencial ${tag} ${i}`
      const subject = c.email ? `Asunto ${tag} ${i}` : undefined
      const { principal, id } = await send(c, { body: text, ...(subject ? { subject } : {}) })
      ids.push(id)
      // The recipient's address is the email, or the phone for an SMS.
      secrets.push(text, c.last_name, (c.email ?? c.phone)!, ...(subject ? [subject] : []))
      await settled(principal.companyId, id)
    }
    const outcomes = await Promise.all(
      ids.map(async (id) => (await h.owner('messages').where({ id }).first()).status),
    )
    expect(outcomes).toEqual(['sent', 'sent', 'failed', 'sent', 'failed'])
    // Every queued and sent or failed event is out (the outbox rows are deleted once published:
    // the tap has their payloads as published), and the log lines written before them.
    const events = (await Promise.all(ids.map((id) => eventsOf(id, 2)))).flat()
    expect(events.map((e) => e.type).sort()).toEqual(
      [
        ...Array(5).fill('comms.message.queued'),
        ...Array(3).fill('comms.message.sent'),
        ...Array(2).fill('comms.message.failed'),
      ].sort(),
    )
    expect(logLines.length).toBeGreaterThan(0)
    expect(logLines.some((l) => ids.some((id) => l.includes(id)))).toBe(true)
    for (const secret of secrets) {
      for (const line of logLines) expect(line).not.toContain(secret)
      for (const e of tap.messages) expect(JSON.stringify(e.event)).not.toContain(secret)
    }
  })
})
