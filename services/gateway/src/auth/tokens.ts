import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** `csk_` + 43 base64url chars (256 random bits). The first 16 chars index the row; only a hash is stored. */
export const TOKEN_PREFIX = 'csk_'
const TOKEN_SHAPE = /^csk_[A-Za-z0-9_-]{43}$/
const LOOKUP_LENGTH = 16

export function newToken(): { token: string; lookup: string; hash: Buffer } {
  const token = TOKEN_PREFIX + randomBytes(32).toString('base64url')
  return { token, lookup: tokenLookup(token), hash: hashToken(token) }
}

export const isTokenShaped = (s: string) => TOKEN_SHAPE.test(s)
export const tokenLookup = (token: string) => token.slice(0, LOOKUP_LENGTH)
export const hashToken = (token: string) => createHash('sha256').update(token).digest()
export const sameHash = (a: Buffer, b: Buffer) => a.length === b.length && timingSafeEqual(a, b)

export interface Credentials {
  token: string
  /** Present with HTTP Basic: must be the token's owner. */
  username?: string
}

/** `X-service-Token: <token>` or `Authorization: Basic base64(username:token)`. */
export function credentialsFrom(headers: Record<string, string | string[] | undefined>): Credentials | null {
  const header = headers['x-service-token']
  if (typeof header === 'string' && header) return { token: header.trim() }
  const auth = headers.authorization
  if (typeof auth === 'string') {
    const m = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(auth)
    if (!m) return null
    const decoded = Buffer.from(m[1]!, 'base64').toString('utf8')
    const colon = decoded.indexOf(':')
    if (colon <= 0) return null
    return { username: decoded.slice(0, colon), token: decoded.slice(colon + 1) }
  }
  return null
}

/** `90d`, `12h`, `30m` or an RFC 3339 instant -> Date. */
export function parseExpiry(spec: string, now = new Date()): Date {
  const m = /^(\d+)([dhm])$/.exec(spec)
  if (m) {
    const unit = { d: 86_400_000, h: 3_600_000, m: 60_000 }[m[2] as 'd' | 'h' | 'm']
    return new Date(now.getTime() + Number(m[1]) * unit)
  }
  const at = new Date(spec)
  // `new Date('2027-02-30')` is 2 March: a day that does not exist is refused, not rolled over.
  const day = /^(\d{4})-(\d{2})-(\d{2})/.exec(spec)
  const realDay =
    day !== null && new Date(Date.UTC(+day[1]!, +day[2]! - 1, +day[3]!)).toISOString().startsWith(day[0])
  if (Number.isNaN(at.getTime()) || !realDay)
    throw new Error(`--expires must be like 90d, 12h, 30m or a date, not "${spec}"`)
  return at
}
