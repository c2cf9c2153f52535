import { makeEvent, type CloudEvent, type Ctx } from '@clinic/platform/core'
import { preferenceId, type StoredPreference } from '../domain/preference-store'

/**
 * Who changed a preference, as the audit trail shows it: the API caller (`ctx`), or for a change
 * with no user behind it the name of its source (`sms-keyword`, `email-unsubscribe`), as `actorname`
 * with no user or token id, plus the id of the request that carried it.
 */
export type PreferenceActor = { ctx: Pick<Ctx, 'auth' | 'requestId'> } | { name: string; requestId?: string }

/**
 * `comms.preference.updated`: the preference's id (subject and `preference_id`), channel, value and
 * source, `changes: ['opted_out']` (with `override: true` and `override` among the changes when an
 * API call overrode the person's own choice); never the address (the id stands for it).
 */
export function preferenceEvent(
  companyId: number,
  p: Pick<StoredPreference, 'channel' | 'address' | 'opted_out' | 'source'>,
  actor: PreferenceActor,
  o: { override?: boolean } = {},
): CloudEvent {
  const id = preferenceId(companyId, p.channel, p.address)
  const event = makeEvent({
    type: 'comms.preference.updated',
    source: 'clinic/comms',
    subject: id,
    companyId,
    ctx: 'ctx' in actor ? actor.ctx : undefined,
    data: {
      preference_id: id,
      channel: p.channel,
      opted_out: p.opted_out,
      source: p.source,
      // An API change of what the person set themselves, said so explicitly: named on the trail.
      ...(o.override ? { override: true } : {}),
      changes: o.override ? ['opted_out', 'override'] : ['opted_out'],
    },
  })
  if ('name' in actor) {
    event.actorname = actor.name
    if (actor.requestId) event.requestid = actor.requestId
  }
  return event
}
