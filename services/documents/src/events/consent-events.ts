import { makeEvent, type CloudEvent, type Ctx } from '@clinic/platform/core'
import type { Consent } from '../schemas/consent'

const SOURCE = 'clinic/documents'

/** Ids, template, role and status: never the text, the signer's name or the evidence. */
const dataOf = (c: Consent) => ({
  id: c.id,
  patient_id: c.patient_id,
  template_key: c.template_key,
  template_version: c.template_version,
  text_sha256: c.text_sha256,
  signer_role: c.signer_role,
  status: c.status,
  version: c.version,
  document_id: c.document_id,
})

type Plain = 'consent.requested' | 'consent.refused' | 'consent.withdrawn' | 'consent.expired'

export const consentEvent = <T extends Plain>(type: T, ctx: Ctx, c: Consent): CloudEvent<T> =>
  makeEvent({
    type,
    source: SOURCE,
    subject: c.id,
    companyId: ctx.auth.companyId,
    codalmacen: c.codalmacen,
    ctx,
    data: dataOf(c),
  })

export const consentGranted = (ctx: Ctx, c: Consent): CloudEvent<'consent.granted'> =>
  makeEvent({
    type: 'consent.granted',
    source: SOURCE,
    subject: c.id,
    companyId: ctx.auth.companyId,
    codalmacen: c.codalmacen,
    ctx,
    data: { ...dataOf(c), method: c.evidence?.method ?? 'in_person' },
  })

export const consentLinkViewed = (
  ctx: Ctx,
  v: { consentId: string; linkId: string; page: string; codalmacen: string | null },
): CloudEvent<'consent.link_viewed'> =>
  makeEvent({
    type: 'consent.link_viewed',
    source: SOURCE,
    subject: v.consentId,
    companyId: ctx.auth.companyId,
    codalmacen: v.codalmacen,
    ctx,
    data: { consent_id: v.consentId, link_id: v.linkId, page: v.page },
  })
