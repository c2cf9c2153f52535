import { serviceList } from '../service-list'

export const BODY_LIMIT = 64 * 1024
export const VERSION_HEADER = 'X-service-Version'

/**
 * The most a request body to this service path (`/comms/send`, no base, no query) may weigh:
 * BODY_LIMIT unless services.json gives the path a `body_limits` entry. The gateway and the service
 * both read it, so the two agree.
 */
export function bodyLimitOf(servicePath: string): number {
  for (const s of serviceList().services) {
    const limit = s.body_limits?.[servicePath]
    if (limit !== undefined) return limit
  }
  return BODY_LIMIT
}
