import { CenterForbidden, UnknownCenter, assertCenter, centerVisible, visibleCenters } from '@clinic/platform'
import { testPrincipal } from '@clinic/platform/testing'

const all = testPrincipal({ companyCenters: ['ALM1', 'ALM2', 'ALM3'], allowedCenters: null })
const limited = testPrincipal({ companyCenters: ['ALM1', 'ALM2', 'ALM3'], allowedCenters: ['ALM1', 'ALM2'] })

describe('assertCenter', () => {
  it('accepts a center of the company the token may use', () => {
    expect(() => assertCenter(all, 'ALM3')).not.toThrow()
    expect(() => assertCenter(limited, 'ALM2')).not.toThrow()
  })
  it('refuses a code that is not a center of the company with 400 unknown_center', () => {
    for (const auth of [all, limited]) {
      expect(() => assertCenter(auth, 'OTHER')).toThrow(UnknownCenter)
      expect(() => assertCenter(auth, 'alm1')).toThrow(UnknownCenter)
    }
    expect(new UnknownCenter().status).toBe(400)
  })
  it('refuses a center outside a limited token with 403 center_forbidden', () => {
    expect(() => assertCenter(limited, 'ALM3')).toThrow(CenterForbidden)
    expect(new CenterForbidden().status).toBe(403)
  })
})

describe('visibleCenters', () => {
  it('is the center asked for, after checking it', () => {
    expect(visibleCenters(all, 'ALM3')).toEqual(['ALM3'])
    expect(visibleCenters(limited, 'ALM1')).toEqual(['ALM1'])
    expect(() => visibleCenters(limited, 'ALM3')).toThrow(CenterForbidden)
    expect(() => visibleCenters(all, 'NOPE')).toThrow(UnknownCenter)
  })
  it("is the token's centers without codalmacen, or every center (null) for an unlimited token", () => {
    expect(visibleCenters(limited, undefined)).toEqual(['ALM1', 'ALM2'])
    expect(visibleCenters(all, undefined)).toBeNull()
  })
})

describe('centerVisible', () => {
  it('shows every row, also without a center, when unrestricted', () => {
    expect(centerVisible(null, 'ALM9')).toBe(true)
    expect(centerVisible(null, null)).toBe(true)
  })
  it('shows only rows of the listed centers, never rows without a center', () => {
    expect(centerVisible(['ALM1'], 'ALM1')).toBe(true)
    expect(centerVisible(['ALM1'], 'ALM2')).toBe(false)
    expect(centerVisible(['ALM1'], null)).toBe(false)
  })
})
