import { createHash } from 'node:crypto'
import type { Ctx, Principal } from '@clinic/platform/core'
import { CONSENT_KEYSET, TEMPLATE_KEYSET } from '../../src/domain/consent-keysets'
import { nameOf, textHash } from '../../src/domain/consent-rules'
import { createTemplate as create } from '../../src/domain/create-template'
import { expireConsent as expire } from '../../src/domain/expire-consent'
import { getConsent } from '../../src/domain/get-consent'
import { getTemplate as get } from '../../src/domain/get-template'
import { listConsents } from '../../src/domain/list-consents'
import { listTemplates } from '../../src/domain/list-templates'
import { requestConsent } from '../../src/domain/request-consent'
import { withdrawConsent } from '../../src/domain/withdraw-consent'
import type { Consent } from '../../src/schemas/consent'
import { consentWorld } from '../consent-fakes'
import { NOW, codeOf, ctxOf, fakeId, loggingCtxOf, problemOf } from '../fakes'

type Store = Parameters<typeof create>[1]
type Body = Parameters<typeof create>[2]['body']
const createTemplate = (ctx: Ctx, store: Store, body: Body, queryCenter?: string) =>
  create(ctx, store, { body, queryCenter })
const getTemplate = (ctx: Ctx, store: Store, id: string, queryCenter?: string) =>
  get(ctx, store, { id, queryCenter })
const expireConsent = (ctx: Ctx, store: Store, id: string, now: Date) => expire(ctx, store, { id, now })

/** A company with a template and one pending consent (in center ALM1) of a patient, on the fakes. */
async function setup(principal: Partial<Principal> = {}) {
  const w = consentWorld()
  const { ctx, lines } = loggingCtxOf(principal)
  const company = ctx.auth.companyId
  const patient = w.patients.add(company)
  w.store.addTemplate(company)
  const { body: consent } = await requestConsent(ctx, w.deps, {
    body: { patient_id: patient, template_key: 'cataract-surgery', codalmacen: 'ALM1' },
    idempotencyKey: undefined,
    requestHash: 'h',
  })
  w.store.events.length = 0
  lines.length = 0
  /** Puts the consent in that state, as if it got there. */
  const make = (fields: Partial<Consent>) => w.store.seed(company, { ...consent, ...fields })
  return { ...w, ctx, lines, company, patient, consent, make }
}

describe('createTemplate', () => {
  const body = {
    key: 'cataract-surgery',
    language: 'es',
    title: 'Cataratas',
    body: 'Texto «exacto».\n\nFin.',
  }

  it('a new version of a key and language each time, with the SHA-256 of its UTF-8 body; older ones stay', async () => {
    const { ctx, store, lines } = await setup()
    const v1 = await createTemplate(ctx, store, body)
    const v2 = await createTemplate(ctx, store, { ...body, body: 'Otro.' })
    const sha = createHash('sha256').update(body.body, 'utf8').digest('hex')
    expect(v1).toMatchObject({ ...body, version: 2, text_sha256: sha, codalmacen: null })
    expect(v2).toMatchObject({ version: 3, text_sha256: textHash('Otro.') })
    expect(await getTemplate(ctx, store, v1.id.toUpperCase())).toEqual(v1)
    expect(lines.map((l) => [l.msg, l.template_id, l.key, l.version])).toEqual([
      ['consent template created', v1.id, 'cataract-surgery', 2],
      ['consent template created', v2.id, 'cataract-surgery', 3],
    ])
  })

  it("its center: the body's, else the query's, else none; a token limited to centers must name one", async () => {
    const { ctx, store } = await setup()
    expect((await createTemplate(ctx, store, { ...body, codalmacen: 'ALM2' }, 'ALM1')).codalmacen).toBe(
      'ALM2',
    )
    expect((await createTemplate(ctx, store, body, 'ALM1')).codalmacen).toBe('ALM1')
    expect(await codeOf(createTemplate(ctx, store, { ...body, codalmacen: 'ALM9' }))).toBe('unknown_center')
    const limited = ctxOf({ companyId: ctx.auth.companyId, allowedCenters: ['ALM1'] })
    expect(await problemOf(createTemplate(limited, store, body))).toMatchObject({
      code: 'validation_failed',
      errors: [{ path: '/codalmacen', message: 'is required for a token limited to centers' }],
    })
    expect(await codeOf(createTemplate(limited, store, body, 'ALM2'))).toBe('center_forbidden')
  })

  it("getTemplate: 404 for another company's, or a center the caller may not see", async () => {
    const { ctx, store, company } = await setup()
    const t = await createTemplate(ctx, store, { ...body, codalmacen: 'ALM1' })
    expect(await problemOf(getTemplate(ctxOf(), store, t.id))).toMatchObject({
      code: 'not_found',
      detail: 'No such consent template',
    })
    expect(await codeOf(getTemplate(ctx, store, t.id, 'ALM2'))).toBe('not_found')
    const limited = ctxOf({ companyId: company, allowedCenters: ['ALM2'] })
    expect(await codeOf(getTemplate(limited, store, t.id))).toBe('not_found')
    expect(await codeOf(getTemplate(ctx, store, fakeId()))).toBe('not_found')
  })
})

describe('the lists', () => {
  it('listTemplates and listConsents ask for their filters, ids in lower case, centers as the caller sees them', async () => {
    const { ctx, store, patient } = await setup({ allowedCenters: ['ALM1'] })
    const tpl = await listTemplates(ctx, store, { key: 'k', language: 'en', limit: 5 } as never)
    expect(tpl.meta).toMatchObject({ total: 1 })
    const appointment = fakeId()
    const consents = await listConsents(ctx, store, {
      patient_id: patient.toUpperCase(),
      template_key: 'cataract-surgery',
      status: 'pending',
      appointment_id: appointment.toUpperCase(),
      codalmacen: 'ALM1',
    } as never)
    expect(consents.data).toHaveLength(1)
    expect(store.filters).toEqual([
      { centers: ['ALM1'], key: 'k', language: 'en', offset: 0, limit: 6, after: undefined },
      {
        centers: ['ALM1'],
        patientId: patient,
        templateKey: 'cataract-surgery',
        status: 'pending',
        appointmentId: appointment,
        offset: 0,
        limit: 26,
        after: undefined,
      },
    ])
    expect(await codeOf(listConsents(ctx, store, { codalmacen: 'ALM2' } as never))).toBe('center_forbidden')
    expect(await codeOf(listTemplates(ctx, store, { codalmacen: 'ALM2' } as never))).toBe('center_forbidden')
  })

  it('both page newest first by created_at and id, each through a cursor of its own', () => {
    for (const k of [CONSENT_KEYSET, TEMPLATE_KEYSET]) {
      expect(k.order).toBe('desc')
      expect(k.columns.map((c) => [c.name, c.kind])).toEqual([
        ['created_at', 'instant'],
        ['id', 'uuid'],
      ])
    }
    const row = { created_at: NOW.toISOString(), id: fakeId() }
    expect(CONSENT_KEYSET.parse(CONSENT_KEYSET.cursorOf(row))).toEqual(row)
    expect(() => TEMPLATE_KEYSET.parse(CONSENT_KEYSET.cursorOf(row))).toThrow()
  })

  it("getConsent: any case of the id; 404 for another company's or a hidden center's", async () => {
    const { ctx, store, consent, company } = await setup()
    expect(await getConsent(ctx, store, { id: consent.id.toUpperCase() })).toEqual(consent)
    expect(await problemOf(getConsent(ctxOf(), store, { id: consent.id }))).toMatchObject({
      code: 'not_found',
      detail: 'No such consent',
    })
    expect(await codeOf(getConsent(ctx, store, { id: consent.id, queryCenter: 'ALM2' }))).toBe('not_found')
    const limited = ctxOf({ companyId: company, allowedCenters: ['ALM2'] })
    expect(await codeOf(getConsent(limited, store, { id: consent.id }))).toBe('not_found')
  })
})

describe('withdrawConsent', () => {
  const reason = { reason: 'cambia de opinión', signer_name: 'Marta García' }
  const later = new Date('2026-12-01T09:30:00.000Z')

  it('a granted consent becomes withdrawn: when, why and who; its evidence and document stay; consent.withdrawn', async () => {
    const { ctx, store, consent, make, company } = await setup()
    const evidence = { signer_name: 'Marta' } as Consent['evidence']
    make({ status: 'granted', evidence, document_id: fakeId() })
    const withdrawn = await withdrawConsent(ctx, store, {
      id: consent.id.toUpperCase(),
      body: reason,
      now: later,
    })
    expect(withdrawn).toMatchObject({
      status: 'withdrawn',
      withdrawn_at: later.toISOString(),
      withdrawal_reason: 'cambia de opinión',
      evidence,
      version: consent.version + 1,
    })
    expect(store.extrasOf(company, consent.id).withdrawal_signer).toBe('Marta García')
    expect(store.locked).toEqual([consent.id])
    expect(
      store.events.map((e) => [e.type, e.subject, e.codalmacen, (e.data as { status: string }).status]),
    ).toEqual([['consent.withdrawn', consent.id, 'ALM1', 'withdrawn']])
  })

  it.each(['pending', 'refused', 'withdrawn', 'expired'] as const)(
    '409 invalid_transition for a %s consent; nothing changes',
    async (status) => {
      const { ctx, store, consent, make, company } = await setup()
      make({ status })
      expect(
        await problemOf(withdrawConsent(ctx, store, { id: consent.id, body: reason, now: later })),
      ).toMatchObject({
        status: 409,
        code: 'invalid_transition',
        detail: `only a granted consent can be withdrawn; it is ${status}`,
      })
      expect((await store.findById(company, consent.id))?.status).toBe(status)
      expect(store.events).toEqual([])
    },
  )

  it("404 for another company's consent or a center the caller may not see", async () => {
    const { ctx, store, consent, make } = await setup()
    make({ status: 'granted' })
    expect(await codeOf(withdrawConsent(ctxOf(), store, { id: consent.id, body: reason, now: later }))).toBe(
      'not_found',
    )
    const hidden = { id: consent.id, body: reason, now: later, queryCenter: 'ALM2' }
    expect(await codeOf(withdrawConsent(ctx, store, hidden))).toBe('not_found')
    expect(store.events).toEqual([])
  })
})

describe('expireConsent', () => {
  it('a pending consent at or past its expiry becomes expired, once; consent.expired', async () => {
    const { ctx, store, consent, company } = await setup()
    const expiry = new Date(consent.expires_at)
    expect(await expireConsent(ctx, store, consent.id, new Date(expiry.getTime() - 1))).toBe(false)
    expect(store.events).toEqual([])
    expect(await expireConsent(ctx, store, consent.id, expiry)).toBe(true)
    expect(store.locked).toEqual([consent.id, consent.id])
    expect(await store.findById(company, consent.id)).toMatchObject({ status: 'expired', version: 2 })
    expect(store.events.map((e) => [e.type, e.subject, e.codalmacen])).toEqual([
      ['consent.expired', consent.id, 'ALM1'],
    ])
    expect(await expireConsent(ctx, store, consent.id, new Date(expiry.getTime() + 1))).toBe(false)
    expect(store.events).toHaveLength(1)
  })

  it('leaves an answered consent, and one that is not there, as they are', async () => {
    const { ctx, store, consent, make } = await setup()
    const long = new Date('2030-01-01T00:00:00Z')
    for (const status of ['granted', 'refused', 'withdrawn'] as const) {
      make({ status })
      expect([status, await expireConsent(ctx, store, consent.id, long)]).toEqual([status, false])
    }
    expect(await expireConsent(ctx, store, fakeId(), long)).toBe(false)
    expect(await expireConsent(ctxOf(), store, consent.id, long)).toBe(false)
    expect(store.events).toEqual([])
  })
})

describe('nameOf', () => {
  it("the patient's first and last name, or 'unknown patient'", () => {
    const p = { first_name: 'Begoña', last_name: 'Muñoz' } as Parameters<typeof nameOf>[0]
    expect(nameOf(p)).toBe('Begoña Muñoz')
    expect(nameOf(null)).toBe('unknown patient')
  })
})
