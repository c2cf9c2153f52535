import type { Principal } from './principal'
import { CenterForbidden, UnknownCenter } from './errors'

/**
 * Center rules of DESIGN.md section 2, for services (the gateway checks the query parameter too;
 * services check again, and also check codes sent in bodies).
 */
export function assertCenter(auth: Principal, code: string): void {
  if (!auth.companyCenters.includes(code)) throw new UnknownCenter()
  if (auth.allowedCenters && !auth.allowedCenters.includes(code)) throw new CenterForbidden()
}

/**
 * Which centers a read may see: the one asked for, else the token's centers, else all (null).
 * A token limited to centers never sees rows of other centers, nor rows without a center.
 */
export function visibleCenters(auth: Principal, codalmacen: string | undefined): string[] | null {
  if (codalmacen !== undefined) {
    assertCenter(auth, codalmacen)
    return [codalmacen]
  }
  return auth.allowedCenters
}

/** Whether a row with this center is visible under `visibleCenters`. */
export const centerVisible = (centers: string[] | null, rowCenter: string | null): boolean =>
  centers === null || (rowCenter !== null && centers.includes(rowCenter))
