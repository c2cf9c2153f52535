import { visibleCenters, visibleRow, type Ctx } from '@clinic/platform/core'
import { consentEvent } from '../events/consent-events'
import type { Consent, WithdrawInput } from '../schemas/consent'
import type { ConsentStore } from './consent-store'
import { InvalidTransition } from './errors'

/** POST /consents/{id}/withdraw: a granted consent becomes withdrawn; its history stays. */
export async function withdrawConsent(
  ctx: Ctx,
  store: ConsentStore,
  input: { id: string; body: WithdrawInput; queryCenter?: string; now: Date },
): Promise<Consent> {
  const visible = visibleCenters(ctx.auth, input.queryCenter)
  return store.transaction(ctx.auth.companyId, async (tx) => {
    const current = visibleRow(
      visible,
      await tx.findById(input.id.toLowerCase(), { forUpdate: true }),
      'No such consent',
    )
    if (current.status !== 'granted')
      throw new InvalidTransition(`only a granted consent can be withdrawn; it is ${current.status}`)
    const withdrawn = await tx.update(current.id, {
      status: 'withdrawn',
      withdrawn_at: input.now,
      withdrawal_reason: input.body.reason,
      withdrawal_signer: input.body.signer_name,
    })
    await tx.publish([consentEvent('consent.withdrawn', ctx, withdrawn)])
    return withdrawn
  })
}
