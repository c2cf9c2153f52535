import pino from 'pino'
import type { CloudEvent, Ctx } from '@clinic/platform/core'
import {
  deliverMessage,
  type DeliveryStore,
  type OutgoingMessage,
  type Provider,
} from '../../src/domain/deliver-message'
import {
  addressErrors,
  normaliseAddress,
  preferenceId,
  type InboundKeyword,
  type PreferenceStore,
  type PreferenceWrite,
} from '../../src/domain/preference-store'
import { applySmsKeyword, parseSmsKeyword } from '../../src/domain/sms-keywords'
import { unsubscribeUrlFor } from '../../src/links/unsubscribe-link'
import { verifyLink } from '@clinic/platform/core'
import { UNSUBSCRIBE_LINK } from '../../src/domain/link-kinds'
import { claimedMessage } from '../fixtures'

describe('parseSmsKeyword', () => {
  it.each([
    'STOP',
    'stop',
    'Stop',
    ' STOP ',
    'stop.',
    '¡Baja!',
    'BAJA',
    'baja',
    'CANCELAR',
    'cancelar',
    'UNSUBSCRIBE',
    'unsubscribe',
  ])('%j opts out (DESIGN.md section 12)', (body) => expect(parseSmsKeyword(body)).toBe('opt_out'))

  it.each(['STOPALL', 'cancel', 'End', 'quit', 'OPTOUT', 'revoke'])(
    "%j opts out (Twilio's own opt-out words: our record follows what the carrier blocks)",
    (body) => expect(parseSmsKeyword(body)).toBe('opt_out'),
  )

  it.each(['START', 'start', ' Alta ', 'ALTA', 'alta!', 'UNSTOP'])('%j opts back in', (body) =>
    expect(parseSmsKeyword(body)).toBe('opt_in'),
  )

  it.each([
    'YES', // Twilio's opt-in, but a patient's "yes" answers a reminder
    'Sí',
    'ok',
    'please stop sending',
    'stop stop',
    'STOP 1',
    'stopp',
    'baja?!x',
    '',
    '   ',
    `STOP${' '.repeat(100)}x`,
    'S T O P',
  ])('%j is no keyword', (body) => expect(parseSmsKeyword(body)).toBeNull())

  it('takes only text', () => {
    for (const body of [undefined, null, 42, ['STOP'], { Body: 'STOP' }])
      expect(parseSmsKeyword(body)).toBeNull()
  })

  it('reads fullwidth letters as letters (NFKC), as a phone keyboard may send them', () => {
    expect(parseSmsKeyword('ＳＴＯＰ')).toBe('opt_out')
  })
})

describe('addresses and preference ids', () => {
  it('keeps email addresses lower-cased and trimmed, numbers as E.164', () => {
    expect(normaliseAddress('email', '  Ana.Test@Example.TEST ')).toBe('ana.test@example.test')
    expect(normaliseAddress('sms', ' +34600111222 ')).toBe('+34600111222')
    // One number however it is spaced: one quota, one consent.
    expect(normaliseAddress('sms', '+34 600 111 222')).toBe('+34600111222')
    expect(normaliseAddress('email', 'Quota@Example.com')).toBe(
      normaliseAddress('email', 'quota@example.com'),
    )
  })

  it('accepts an address only on the channel of its form', () => {
    expect(addressErrors('sms', '+34600111222')).toEqual([])
    expect(addressErrors('email', 'ana@example.test')).toEqual([])
    expect(addressErrors(undefined, 'ana@example.test')).toEqual([])
    expect(addressErrors('sms', '600111222')[0]?.path).toBe('/address')
    expect(addressErrors('sms', '+0034600111222')).toHaveLength(1)
    expect(addressErrors('email', '+34600111222')).toHaveLength(1)
    expect(addressErrors('email', 'ana@')).toHaveLength(1)
    expect(addressErrors(undefined, 'nobody')).toHaveLength(1)
  })

  it('gives a stable UUIDv5 per company, channel and address, blind to case in emails', () => {
    const id = preferenceId(7, 'email', 'Ana@Example.test')
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(preferenceId(7, 'email', 'ana@example.test')).toBe(id)
    expect(preferenceId(8, 'email', 'ana@example.test')).not.toBe(id)
    expect(preferenceId(7, 'sms', '+34600111222')).not.toBe(preferenceId(7, 'sms', '+34600111223'))
    // RFC 9562 UUIDv5 exactly (Python's uuid.uuid5 of the namespace and '7:sms:+34600111222' gives
    // the same), and fixed: ids already on the audit trail must never change.
    expect(preferenceId(7, 'sms', '+34600111222')).toBe('155a56c9-5d3c-5b93-834a-89eeb7094948')
  })
})

/** A store whose everywhere() answers as set_consent_everywhere would for these companies. */
function everywhereStore(companies: number[]) {
  const writes: PreferenceWrite[] = []
  const published: CloudEvent[] = []
  const keywords: InboundKeyword[] = []
  const store = {
    everywhere: async (fn) =>
      fn({
        // As record_sms_keyword: a sid once; none older than the latest of its sender.
        async recordKeyword(k) {
          const seen = keywords.some((x) => x.sid === k.sid)
          const later = keywords.some((x) => x.sender === k.sender && x.sentAt > k.sentAt)
          if (!seen) keywords.push(k)
          return seen ? 'duplicate' : later ? 'stale' : 'apply'
        },
        async setEverywhere(p) {
          writes.push(p)
          return companies.map((companyId) => ({
            companyId,
            row: { ...p, updated_at: '2026-11-22T09:30:00.000Z' },
          }))
        },
        publish: async (events) => void published.push(...events),
      }),
  } as Pick<PreferenceStore, 'everywhere'> as PreferenceStore
  const at = (iso: string) => () => new Date(iso)
  return { deps: { store, clock: at('2026-11-22T09:30:00Z') }, at, writes, published, keywords }
}
const sid = (n: number) => `SM${String(n).padStart(32, '0')}`

describe('applySmsKeyword', () => {
  it('sets the number in every company it names, one event per company, with no number in any', async () => {
    const { deps, writes, published } = everywhereStore([7, 8])
    const done = await applySmsKeyword(
      deps,
      { From: '+34600111222', Body: 'baja', MessageSid: sid(1) },
      'req-1',
    )
    expect(done).toEqual({ action: 'opt_out', companies: 2 })
    expect(writes).toEqual([
      { channel: 'sms', address: '+34600111222', opted_out: true, source: 'sms_keyword' },
    ])
    expect(published.map((e) => [e.idempresa, e.subject])).toEqual([
      [7, preferenceId(7, 'sms', '+34600111222')],
      [8, preferenceId(8, 'sms', '+34600111222')],
    ])
    expect(published[0]).toMatchObject({
      type: 'comms.preference.updated',
      actorname: 'sms-keyword',
      requestid: 'req-1',
      data: { channel: 'sms', opted_out: true, source: 'sms_keyword', changes: ['opted_out'] },
    })
    expect(JSON.stringify(published)).not.toContain('600111222')
  })

  it('changes nothing for other texts or a sender that is no E.164 number', async () => {
    const { deps, writes } = everywhereStore([7])
    expect(
      await applySmsKeyword(deps, { From: '+34600111222', Body: 'gracias', MessageSid: sid(1) }),
    ).toEqual({
      action: null,
      companies: 0,
    })
    expect(
      await applySmsKeyword(deps, { From: 'whatsapp:+34600111222', Body: 'STOP', MessageSid: sid(2) }),
    ).toMatchObject({ companies: 0 })
    expect(await applySmsKeyword(deps, { Body: 'STOP', MessageSid: sid(3) })).toMatchObject({ companies: 0 })
    // Twilio always names the message: a request without a sid (or with a malformed one) is not its.
    expect(await applySmsKeyword(deps, { From: '+34600111222', Body: 'STOP' })).toMatchObject({
      action: null,
    })
    expect(
      await applySmsKeyword(deps, { From: '+34600111222', Body: 'STOP', MessageSid: 'SM1' }),
    ).toMatchObject({ action: null })
    expect(writes).toEqual([])
  })

  it("dates each keyword by Twilio's word, else by the clock, and applies none twice nor out of order", async () => {
    const { deps, at, writes, keywords } = everywhereStore([7])
    const times = new Map([
      [sid(1), new Date('2026-11-22T09:00:00Z')],
      [sid(2), new Date('2026-11-22T08:00:00Z')],
    ])
    const dated = { ...deps, times: { receivedAt: async (s: string) => times.get(s) ?? null } }
    const stop = { From: '+34600111222', Body: 'STOP', MessageSid: sid(1) }
    expect(await applySmsKeyword(dated, stop)).toEqual({ action: 'opt_out', companies: 1 })
    expect(await applySmsKeyword(dated, stop)).toEqual({
      action: 'opt_out',
      companies: 0,
      ignored: 'duplicate',
    })
    const olderStart = { From: '+34600111222', Body: 'START', MessageSid: sid(2) }
    expect(await applySmsKeyword(dated, olderStart)).toEqual({
      action: 'opt_in',
      companies: 0,
      ignored: 'stale',
    })
    // Not dated by Twilio: the clock's instant (here after the STOP), so it applies.
    const undated = { ...dated, clock: at('2026-11-22T10:00:00Z') }
    expect(await applySmsKeyword(undated, { ...olderStart, MessageSid: sid(3) })).toMatchObject({
      companies: 1,
    })
    expect(keywords.map((k) => k.sentAt.toISOString())).toEqual([
      '2026-11-22T09:00:00.000Z',
      '2026-11-22T08:00:00.000Z',
      '2026-11-22T10:00:00.000Z',
    ])
    expect(writes.map((w) => w.opted_out)).toEqual([true, false])
  })
})

describe('the one-click unsubscribe URL of an email', () => {
  const secret = 'unit-test-link-secret-0123456789abcdef'
  const claimed = (over: Parameters<typeof claimedMessage>[0] = {}) =>
    claimedMessage({ language: 'en-GB', ...over })
  async function deliver(m: ReturnType<typeof claimedMessage>) {
    const got: OutgoingMessage[] = []
    const provider: Provider = { send: async (o) => (got.push(o), { providerId: 'p-1' }) }
    const store: DeliveryStore = {
      claim: async () => [m],
      reschedule: async () => true,
      transaction: (_companyId, work) =>
        work({
          finish: async () => ({ ...m, status: 'sent' }),
          applyEarlyReceipt: async () => null,
          publish: async () => undefined,
        }),
      failStale: async () => [],
    }
    const log = pino({ level: 'silent' })
    const ctx: Ctx = {
      auth: { companyId: 7, userId: '', username: '', tokenId: '', companyCenters: [], allowedCenters: null },
      log,
      requestId: '',
    }
    const unsubscribeUrl = unsubscribeUrlFor(secret, 'https://clinic.example/')
    await deliverMessage(
      ctx,
      {
        store,
        providers: { email: provider, sms: provider },
        maxAttempts: 3,
        retryBaseMs: 1000,
        clock: () => new Date(),
        unsubscribeUrl,
      },
      m,
    )
    return got[0]!
  }

  it('is signed for the company, the message and its language, under PUBLIC_BASE_URL/p/u/', async () => {
    const out = await deliver(claimed())
    const url = new URL(out.unsubscribeUrl!)
    expect(`${url.origin}${url.pathname.slice(0, 5)}`).toBe('https://clinic.example/p/u/')
    const v = await verifyLink(secret, UNSUBSCRIBE_LINK, url.pathname.slice(5), new Date())
    expect(v).toEqual({ ok: true, claims: { companyId: 7, messageId: claimed().id, lang: 'en' } })
    // No address in the link: it travels in URLs and logs.
    expect(out.unsubscribeUrl).not.toContain('ficticia')
  })

  it('speaks Spanish for any other language, and is for email only', async () => {
    const es = new URL((await deliver(claimed({ language: 'fr' }))).unsubscribeUrl!)
    expect(await verifyLink(secret, UNSUBSCRIBE_LINK, es.pathname.slice(5), new Date())).toMatchObject({
      claims: { lang: 'es' },
    })
    const sms = await deliver(
      claimed({
        channel: 'sms',
        subject: null,
        recipient: { role: 'patient', name: 'T', address: '+34600111222' },
      }),
    )
    expect(sms.unsubscribeUrl).toBeUndefined()
  })
})
