import type { Ctx } from '@clinic/platform/core'
import type { Logger } from 'pino'

/**
 * The company's own work, done by comms rather than a person (reminders, patient links): no user
 * or token, every center of the company. `username` names it on the audit trail.
 */
export function systemCtx(companyId: number, log: Logger, requestId = '', username = 'comms-reminders'): Ctx {
  return {
    auth: { companyId, userId: '', username, tokenId: '', companyCenters: [], allowedCenters: null },
    log: requestId ? log.child({ request_id: requestId }) : log,
    requestId,
  }
}
