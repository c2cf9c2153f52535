import { makeEvent, type CloudEvent, type Ctx } from '@clinic/platform/core'
import type { Practitioner } from '../schemas/practitioner'
import { SOURCE } from './appointment-events'

/** A practitioner's id, active flag and version (and the names of changed fields): no hours, no name. */
export function practitionerEvent<T extends 'practitioner.created' | 'practitioner.updated'>(
  ctx: Ctx,
  type: T,
  p: Practitioner,
  changes?: string[],
): CloudEvent<T> {
  const ids = { id: p.id, active: p.active, version: p.version }
  return makeEvent({
    type,
    source: SOURCE,
    subject: p.id,
    companyId: ctx.auth.companyId,
    ctx,
    data: (type === 'practitioner.updated'
      ? { ...ids, changes: changes ?? [] }
      : ids) as CloudEvent<T>['data'],
  })
}
