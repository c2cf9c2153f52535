import { verifyLink, type InternalMessage, type Refusal } from '@clinic/platform/core'
import type { ClinicNames } from '../../src/domain/consent-store'
import { CONSENT_LINK } from '../../src/domain/link-kinds'
import { consentLinkSender } from '../../src/domain/send-consent-link'
import type { Consent } from '../../src/schemas/consent'
import { consentWorld } from '../consent-fakes'
import { ctxOf, problemOf } from '../fakes'

const SECRET = 'documents-unit-link-secret-0123456789abcdef'

/** The sender on the fakes: comms as a list of what it was asked to send, or a refusal. */
function setup(o: { publicBaseUrl?: string; refusal?: Refusal } = {}) {
  const w = consentWorld()
  const ctx = ctxOf()
  const company = ctx.auth.companyId
  w.store.addTemplate(company, { title: 'Cirugía de cataratas' })
  w.store.addTemplate(company, { language: 'en', title: 'Cataract surgery' })
  w.store.addTemplate(company, { language: 'en-GB', title: 'Cataract surgery (GB)' })
  w.store.addTemplate(company, { language: 'fr', title: 'Chirurgie de la cataracte' })
  const sent: InternalMessage[] = []
  const messages = {
    send: async (_: unknown, m: InternalMessage) => {
      sent.push(m)
      return o.refusal ? { outcome: 'refused', refusal: o.refusal } : { outcome: 'done' as const }
    },
  }
  const sender = consentLinkSender({
    store: w.store,
    messages,
    secret: SECRET,
    publicBaseUrl: o.publicBaseUrl ?? 'https://clinic.test/',
  })
  const consent = {
    id: '019ab2c4-1f00-7000-8000-0000000000c1',
    template_key: 'cataract-surgery',
    language: 'es',
    template_version: 1,
    expires_at: '2026-12-04T10:00:00.000Z',
  } as Consent
  const linkId = '019ab2c4-1f00-7000-8000-0000000000l1'.replace('l', 'a')
  const send = (
    o2: {
      language?: string
      channel?: 'email' | 'sms'
      clinic?: Partial<ClinicNames>
      patient?: Parameters<typeof w.patients.add>[1]
    } = {},
  ) => {
    const id = w.patients.add(company, o2.patient)
    return sender.send(ctx, {
      consent: { ...consent, language: o2.language ?? 'es' },
      linkId,
      patient: w.patients.entries.get(`${company}:${id}`)!,
      ...(o2.channel ? { channel: o2.channel } : {}),
      clinic: { name: null, center: null, timeZone: 'Europe/Madrid', ...o2.clinic },
    })
  }
  return { sent, send, company, consent, linkId }
}

const urlIn = (body: string) => /https:\/\/clinic\.test\/p\/c\/(\S+)/.exec(body)!

describe('consentLinkSender', () => {
  it('sends the link PUBLIC_BASE_URL/p/c/<token>: a consent link of the company, expiring with the consent', async () => {
    const { send, sent, company, consent, linkId } = setup()
    await send()
    expect(sent).toHaveLength(1)
    const [url, token] = urlIn(sent[0]!.body)
    expect(url).toBe(`https://clinic.test/p/c/${token}`)
    const verified = await verifyLink(SECRET, CONSENT_LINK, token!, new Date('2026-12-04T09:59:59Z'))
    expect(verified).toEqual({
      ok: true,
      claims: { id: linkId, companyId: company, consentId: consent.id, lang: 'es', exp: 1796378400 },
    })
    expect(Date.parse(consent.expires_at) / 1000).toBe(1796378400)
    expect(await verifyLink(SECRET, CONSENT_LINK, token!, new Date(consent.expires_at))).toEqual({
      ok: false,
      reason: 'expired',
    })
  })

  it('in Spanish, naming the clinic and its center, with a subject for an email', async () => {
    const { send, sent } = setup()
    await send({ clinic: { name: 'Clínica Ñandú', center: 'Centro Gràcia' }, channel: 'email' })
    const url = urlIn(sent[0]!.body)[0]
    expect(sent[0]).toEqual({
      patient_id: expect.any(String),
      channel: 'email',
      subject: 'Clínica Ñandú (Centro Gràcia): Cirugía de cataratas',
      body: `Clínica Ñandú (Centro Gràcia) le pide su consentimiento informado para: Cirugía de cataratas.\n\nLéalo y responda aquí: ${url}\n\nEl enlace caduca; si tiene dudas, contacte con Clínica Ñandú (Centro Gràcia).`,
    })
  })

  it('in English for English (any region), else Spanish; "the clinic" when no name was kept', async () => {
    const { send, sent } = setup()
    await send({ language: 'en', clinic: { name: 'Eye Clinic' }, channel: 'email' })
    await send({ language: 'fr', channel: 'email' })
    await send({ language: 'en-GB', channel: 'email' })
    const [en, fr, gb] = sent
    const url = urlIn(en!.body)[0]
    expect(en!.subject).toBe('Eye Clinic: Cataract surgery')
    expect(en!.body).toBe(
      `Eye Clinic asks for your informed consent to: Cataract surgery.\n\nRead it and answer here: ${url}\n\nThe link expires; if you have questions, contact Eye Clinic.`,
    )
    expect(gb!.subject).toBe('Consent: Cataract surgery (GB)')
    expect(fr!.subject).toBe('Consentimiento: Chirurgie de la cataracte')
    expect(fr!.body).toMatch(
      /^La clínica le pide su consentimiento informado para: Chirurgie de la cataracte\.\n\n/,
    )
    expect(fr!.body).toMatch(/si tiene dudas, contacte con la clínica\.$/)
    const english = setup()
    await english.send({ language: 'en', channel: 'email' })
    expect(english.sent[0]!.subject).toBe('Consent: Cataract surgery')
    expect(english.sent[0]!.body).toMatch(/^The clinic asks .*contact the clinic\.$/s)
    // The center alone names nobody.
    await english.send({ language: 'en', clinic: { center: 'Centro Gràcia' }, channel: 'email' })
    expect(english.sent[1]!.subject).toBe('Consent: Cataract surgery')
  })

  it("a subject only for an email: the channel asked for, else the patient's preferred, else email when the recipient has an address", async () => {
    const { send, sent } = setup()
    const guardian = (email: string | null) => ({
      name: 'Marta',
      relationship: null,
      email,
      phone: '600000000',
    })
    await send({ channel: 'sms', patient: { preferred_channel: 'email', email: 'p@example.invalid' } })
    await send({ patient: { preferred_channel: 'sms', email: 'p@example.invalid' } })
    await send({ patient: { preferred_channel: 'email', email: null } })
    await send({ patient: { email: 'p@example.invalid' } })
    await send({ patient: { email: null } })
    await send({
      patient: { requires_legal_guardian: true, email: 'p@example.invalid', guardian: guardian(null) },
    })
    await send({
      patient: { requires_legal_guardian: true, email: null, guardian: guardian('m@example.invalid') },
    })
    await send({ patient: { requires_legal_guardian: true, email: 'p@example.invalid', guardian: null } })
    expect(sent.map((m) => [m.channel, 'subject' in m])).toEqual([
      ['sms', false],
      [undefined, false],
      [undefined, true],
      [undefined, true],
      [undefined, false],
      [undefined, false],
      [undefined, true],
      [undefined, false],
    ])
    expect(sent.every((m) => !('channel' in m) || m.channel === 'sms')).toBe(true)
  })

  it('a base URL without its trailing slash', async () => {
    const { send, sent } = setup({ publicBaseUrl: 'https://clinic.test' })
    await send()
    expect(sent[0]!.body).toMatch(/aquí: https:\/\/clinic\.test\/p\/c\/[\w-]+\.[\w-]+\.[\w-]+\n/)
  })

  it("what comms refuses is the caller's answer, its status and code: the consent was stored, the link not sent", async () => {
    const refused = setup({
      refusal: { status: 422, code: 'no_address', title: 'No address', detail: 'no email' },
    })
    expect(await problemOf(refused.send())).toMatchObject({
      status: 422,
      code: 'no_address',
      detail: 'the consent was stored, but its link could not be sent: no email',
    })
    const bare = setup({ refusal: { status: 429, code: 'quota_exceeded' } })
    const err = await bare.send().catch((e: { title: string; detail: string; status: number }) => e)
    expect(err).toMatchObject({
      status: 429,
      code: 'quota_exceeded',
      title: 'The link could not be sent',
      detail: 'the consent was stored, but its link could not be sent: quota_exceeded',
    })
    expect(await refused.send().catch((e: { title: string }) => e.title)).toBe('No address')
  })
})
