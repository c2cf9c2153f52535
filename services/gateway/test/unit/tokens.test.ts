import { createHash } from 'node:crypto'
import {
  TOKEN_PREFIX,
  credentialsFrom,
  hashToken,
  isTokenShaped,
  newToken,
  parseExpiry,
  sameHash,
  tokenLookup,
} from '../../src/auth/tokens'

const basic = (s: string) => `Basic ${Buffer.from(s, 'utf8').toString('base64')}`

describe('newToken', () => {
  it('is csk_ and 43 base64url characters (256 random bits), different every time', () => {
    const seen = new Set<string>()
    for (let i = 0; i < 50; i++) {
      const { token } = newToken()
      expect(token).toMatch(/^csk_[A-Za-z0-9_-]{43}$/)
      expect(token.startsWith(TOKEN_PREFIX)).toBe(true)
      expect(Buffer.from(token.slice(4), 'base64url')).toHaveLength(32)
      expect(isTokenShaped(token)).toBe(true)
      seen.add(token)
    }
    expect(seen.size).toBe(50)
  })

  it('returns the SHA-256 of the token and its 16-character lookup prefix, never storing the token itself', () => {
    const { token, lookup, hash } = newToken()
    expect(hash).toEqual(createHash('sha256').update(token).digest())
    expect(hash).toHaveLength(32)
    expect(hash.toString('utf8')).not.toContain(token)
    expect(lookup).toBe(token.slice(0, 16))
    expect(lookup.startsWith('csk_')).toBe(true)
    expect(tokenLookup(token)).toBe(lookup)
    expect(hashToken(token)).toEqual(hash)
  })

  it('compares hashes by value', () => {
    const a = hashToken('csk_a')
    expect(sameHash(a, hashToken('csk_a'))).toBe(true)
    expect(sameHash(a, hashToken('csk_b'))).toBe(false)
    expect(sameHash(a, a.subarray(0, 16))).toBe(false)
  })

  it('recognises only the exact token shape', () => {
    const { token } = newToken()
    expect(isTokenShaped(token.slice(0, -1))).toBe(false)
    expect(isTokenShaped(`${token}A`)).toBe(false)
    expect(isTokenShaped(`xsk_${token.slice(4)}`)).toBe(false)
    expect(isTokenShaped(`${token.slice(0, -1)}+`)).toBe(false)
    expect(isTokenShaped('')).toBe(false)
  })
})

describe('credentialsFrom', () => {
  const { token } = newToken()

  it('reads X-service-Token (trimmed) without a username', () => {
    expect(credentialsFrom({ 'x-service-token': token })).toEqual({ token })
    expect(credentialsFrom({ 'x-service-token': `  ${token} ` })).toEqual({ token })
  })

  it('prefers X-service-Token over Authorization', () => {
    expect(credentialsFrom({ 'x-service-token': token, authorization: basic('alice:csk_other') })).toEqual({
      token,
    })
  })

  it('reads Basic username:token', () => {
    expect(credentialsFrom({ authorization: basic(`alice:${token}`) })).toEqual({ username: 'alice', token })
    expect(
      credentialsFrom({ authorization: `basic   ${Buffer.from(`alice:${token}`).toString('base64')}` }),
    ).toEqual({
      username: 'alice',
      token,
    })
  })

  it('splits Basic at the first colon, so a token may contain colons', () => {
    expect(credentialsFrom({ authorization: basic('bob:csk_a:b:c') })).toEqual({
      username: 'bob',
      token: 'csk_a:b:c',
    })
  })

  it('refuses Basic that is not base64, has no colon, or has no username', () => {
    expect(credentialsFrom({ authorization: 'Basic !!not-base64!!' })).toBeNull()
    expect(credentialsFrom({ authorization: 'Basic' })).toBeNull()
    expect(credentialsFrom({ authorization: basic(`alice${token}`) })).toBeNull()
    expect(credentialsFrom({ authorization: basic(`:${token}`) })).toBeNull()
  })

  it('refuses other schemes and missing headers', () => {
    expect(credentialsFrom({ authorization: `Bearer ${token}` })).toBeNull()
    expect(credentialsFrom({ authorization: `Digest username="alice"` })).toBeNull()
    expect(credentialsFrom({ authorization: token })).toBeNull()
    expect(credentialsFrom({ 'x-service-token': '' })).toBeNull()
    expect(credentialsFrom({})).toBeNull()
  })
})

describe('parseExpiry', () => {
  const now = new Date('2026-11-22T09:30:00Z')

  it('adds days, hours or minutes to now', () => {
    expect(parseExpiry('90d', now).toISOString()).toBe('2027-02-20T09:30:00.000Z')
    expect(parseExpiry('12h', now).toISOString()).toBe('2026-11-22T21:30:00.000Z')
    expect(parseExpiry('30m', now).toISOString()).toBe('2026-11-22T10:00:00.000Z')
  })

  it('takes a date or an RFC 3339 instant', () => {
    expect(parseExpiry('2027-01-31', now).toISOString()).toBe('2027-01-31T00:00:00.000Z')
    expect(parseExpiry('2027-01-31T12:00:00+02:00', now).toISOString()).toBe('2027-01-31T10:00:00.000Z')
  })

  it.each([
    '',
    'soon',
    '90',
    '90 d',
    '90w',
    '-1d',
    '1.5h',
    '2027-13-01',
    '2027-02-30',
    '2027-1-1',
    'Jan 31 2027',
    '31/01/2027',
  ])('refuses %j with a message naming the accepted forms', (spec) => {
    expect(() => parseExpiry(spec, now)).toThrow(/--expires must be like 90d, 12h, 30m or a date/)
  })
})
