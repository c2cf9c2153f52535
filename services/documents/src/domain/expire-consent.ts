import type { Ctx } from '@clinic/platform/core'
import { consentEvent } from '../events/consent-events'
import type { ConsentStore } from './consent-store'

/** A pending consent past its expiry becomes expired (the expiry worker, with its clock). */
export async function expireConsent(
  ctx: Ctx,
  store: ConsentStore,
  input: { id: string; now: Date },
): Promise<boolean> {
  return store.transaction(ctx.auth.companyId, async (tx) => {
    const current = await tx.findById(input.id, { forUpdate: true })
    if (!current || current.status !== 'pending' || Date.parse(current.expires_at) > input.now.getTime())
      return false
    const expired = await tx.update(input.id, { status: 'expired' })
    await tx.publish([consentEvent('consent.expired', ctx, expired)])
    return true
  })
}
