import { makeEvent, type CloudEvent } from '@clinic/platform'

/** What the audit trail keeps of a token made or revoked: never the token or its hash. */
export interface TokenFacts {
  id: string
  idempresa: number
  user_id: string
  name: string | null
  centers: string[] | null
  scopes: string[] | null
  expires_at: Date | null
}

/**
 * `token.created` / `token.revoked` for the token's company, written to the gateway's outbox in the
 * same transaction as the change (the relay of any gateway publishes it; audit records it). The
 * actor is who ran the admin command (`--actor`, else the OS user): not an API user, so it is the
 * event's actor name only, with no user or token id.
 */
export function tokenEvent(
  type: 'token.created' | 'token.revoked',
  t: TokenFacts,
  owner: { username: string },
  actor: string,
): CloudEvent<typeof type> {
  const event = makeEvent({
    type,
    source: 'clinic/gateway',
    subject: t.id,
    companyId: t.idempresa,
    data: {
      id: t.id,
      user_id: t.user_id,
      username: owner.username,
      name: t.name,
      centers: t.centers,
      scopes: t.scopes,
      expires_at: t.expires_at ? new Date(t.expires_at).toISOString() : null,
      actor,
    },
  })
  event.actorname = actor
  return event
}
