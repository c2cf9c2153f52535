import { internalApi } from '@clinic/platform/core'
import { serveInternal } from '@clinic/platform/http'
import type { FastifyPluginAsync } from 'fastify'
import { sendWindow, sendWindowFieldErrors, type QuietHoursStore } from '../waitlist/send-window'

/**
 * `POST /internal/comms/send-window` (declared in packages/platform/src/internal-api/comms.ts;
 * appointments asks it before offering a freed slot): when the caller's company may message a
 * patient, after its quiet hours. A time zone the runtime does not know is a 400.
 */
export const sendWindowRoutes: FastifyPluginAsync<{ store: QuietHoursStore }> = async (app, { store }) => {
  serveInternal(app, internalApi.comms.sendWindow, async (req) => sendWindow(req.ctx, store, req.body), {
    config: { rules: { extra: sendWindowFieldErrors } },
  })
}
