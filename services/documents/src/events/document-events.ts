import { makeEvent, type CloudEvent, type Ctx } from '@clinic/platform/core'
import type { Document } from '../schemas/document'

export const SOURCE = 'clinic/documents'

/** What integrators and the trail may know of a document: ids, type, size, hash; never title or name. */
const dataOf = (d: Document) => ({
  id: d.id,
  patient_id: d.patient_id,
  category: d.category,
  content_type: d.content_type,
  size_bytes: d.size_bytes,
  sha256: d.sha256,
  status: d.status,
  version: d.version,
})

const event = <T extends 'document.created' | 'document.deleted'>(type: T, ctx: Ctx, d: Document) =>
  makeEvent({
    type,
    source: SOURCE,
    subject: d.id,
    companyId: ctx.auth.companyId,
    codalmacen: d.codalmacen,
    ctx,
    data: dataOf(d),
  })

export const documentCreated = (ctx: Ctx, d: Document): CloudEvent<'document.created'> =>
  event('document.created', ctx, d)
export const documentDeleted = (ctx: Ctx, d: Document): CloudEvent<'document.deleted'> =>
  event('document.deleted', ctx, d)

/** `changes` names the changed fields, never their values. */
export function documentUpdated(ctx: Ctx, d: Document, changes: string[]): CloudEvent<'document.updated'> {
  return makeEvent({
    type: 'document.updated',
    source: SOURCE,
    subject: d.id,
    companyId: ctx.auth.companyId,
    codalmacen: d.codalmacen,
    ctx,
    data: { ...dataOf(d), changes },
  })
}
