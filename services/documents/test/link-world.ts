import { signLink, verifyLink } from '@clinic/platform/core'
import pino from 'pino'
import type { LinkDeps, LinkRequest } from '../src/domain/consent-links'
import { requestConsent } from '../src/domain/request-consent'
import { CONSENT_LINK, CONSENT_PDF_LINK } from '../src/domain/link-kinds'
import type { Consent } from '../src/schemas/consent'
import { consentWorld } from './consent-fakes'
import { ctxOf } from './fakes'

export const SECRET = 'documents-unit-link-secret-0123456789abcdef'

/**
 * A consent asked (center ALM1, by a clinic with names) and its link, on the fakes, with the link
 * page's dependencies (the secret), and the views it records on the trail.
 */
export async function linkWorld(o: { guardian?: boolean; secret?: string | undefined } = {}) {
  const w = consentWorld()
  const names = { company: 'Clínica Ñandú', centers: { ALM1: 'Centro Gràcia' } }
  const ctx = ctxOf({ names })
  const company = ctx.auth.companyId
  const patient = w.patients.add(company, {
    first_name: 'Begoña',
    last_name: 'Muñoz',
    requires_legal_guardian: !!o.guardian,
    guardian: o.guardian ? { name: 'Marta García', relationship: 'madre', email: null, phone: null } : null,
  })
  const template = w.store.addTemplate(company)
  const asked = await requestConsent(ctx, w.deps, {
    body: { patient_id: patient, template_key: 'cataract-surgery', codalmacen: 'ALM1' },
    idempotencyKey: undefined,
    requestHash: 'h',
  })
  const consent = asked.body
  const linkId = asked.linkId!
  w.store.events.length = 0
  const deps: LinkDeps = { ...w.deps, secret: 'secret' in o ? o.secret : SECRET }
  /** The views of the page on the trail: the consent.link_viewed events in the company's outbox. */
  const views = () => w.store.events.filter((e) => e.type === 'consent.link_viewed')
  /** The consent's link token (or one with other claims, or signed with another secret). */
  const token = (
    claims: Partial<{ id: string; consentId: string; companyId: number; exp: number }> = {},
    secret = SECRET,
  ) =>
    signLink(secret, CONSENT_LINK, {
      id: linkId,
      companyId: company,
      consentId: consent.id,
      lang: 'es',
      exp: Math.floor(Date.parse(consent.expires_at) / 1000),
      ...claims,
    })
  const request = async (t?: string): Promise<LinkRequest> => ({
    token: t ?? (await token()),
    log: pino({ level: 'silent' }),
    requestId: 'req-link-1',
    traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01',
  })
  const make = (fields: Partial<Consent>) => w.store.seed(company, { ...consent, ...fields })
  /** The views recorded: page, consent, link, center, actor and company. */
  const seen = () =>
    views().map((event) => ({
      companyId: event.idempresa,
      type: event.type,
      subject: event.subject,
      codalmacen: event.codalmacen,
      actorname: event.actorname,
      data: event.data,
    }))
  return { ...w, ctx, company, patient, template, consent, linkId, deps, views, token, request, make, seen }
}

/** The claims of a PDF link the page gave (its path /p/c/pdf/<token>), checked as of `now`. */
export async function pdfClaims(url: string, now: Date) {
  const verified = await verifyLink(SECRET, CONSENT_PDF_LINK, url.slice('/p/c/pdf/'.length), now)
  if (!verified.ok) throw new Error(`not a PDF link: ${verified.reason}`)
  return verified.claims
}
