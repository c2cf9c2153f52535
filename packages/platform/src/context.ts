import type { Logger } from 'pino'
import type { Principal } from './assertion'

/** What domain code gets instead of globals: who asks, where to log, which request. */
export interface Ctx {
  auth: Principal
  log: Logger
  requestId: string
}
