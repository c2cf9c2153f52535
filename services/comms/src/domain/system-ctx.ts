import { traceOfCause, type Ctx } from '@clinic/platform/core'

/**
 * The company's own work, done by comms rather than by a person with a token (reminders, a patient
 * link): no user or token, every center of the company; `username` names it on the audit trail.
 */
export function systemCtx(
  companyId: number,
  username: string,
  o: Pick<Ctx, 'log' | 'traceparent' | 'tracestate'> & { requestId?: string },
): Ctx {
  return {
    auth: { companyId, userId: '', username, tokenId: '', companyCenters: [], allowedCenters: null },
    log: o.log,
    requestId: o.requestId ?? '',
    ...traceOfCause(o),
  }
}
