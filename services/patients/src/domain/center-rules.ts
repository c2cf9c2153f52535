import { ValidationFailed, assertCenter, type Principal } from '@clinic/platform/core'

/**
 * The center a write puts a patient in. A known, allowed code passes (else 400 unknown_center or
 * 403 center_forbidden). No center is fine for a company-wide token; a token limited to centers
 * must name one of them, or it would create patients it can no longer see.
 */
export function centerForWrite(auth: Principal, code: string | null): string | null {
  if (code === null) {
    if (auth.allowedCenters)
      throw new ValidationFailed([
        { path: '/codalmacen', message: 'is required for a token limited to centers' },
      ])
    return null
  }
  assertCenter(auth, code)
  return code
}
