import type { CompanyNames, Principal } from '@clinic/platform'
import { DEFAULT_SCOPES, isScope, type Scope } from '../scopes'
import type { TokenRecord, TokenStore } from './token-store'
import { credentialsFrom, hashToken, isTokenShaped, sameHash, tokenLookup, type Credentials } from './tokens'

export type AuthResult =
  /** `scopes`: the token's; for a token made without a list, every scope but the named-only ones (DESIGN.md section 13). */
  | {
      ok: true
      principal: Principal
      /**
       * The same with the company's and its centers' names (`names`), for the families that show
       * people names (services.json `names`: a consent's message, page and PDF); no other request
       * carries them.
       */
      named: Principal
      scopes: readonly Scope[]
    }
  /** `companyId` is known when the token was found (revoked, expired, wrong username): for the audit trail. */
  | { ok: false; reason: string; companyId?: number }

interface CacheEntry {
  record: TokenRecord | null
  until: number
  /** What a request with this token is granted, made on its first success and kept with the entry. */
  granted?: { principal: Principal; named: Principal; scopes: readonly Scope[] }
}

const LAST_USED_EVERY_MS = 60_000

/**
 * Token checks with a small bounded cache, so a request does not hit the database. Entries live
 * `ttlMs` (default 5 s): a revoked or expired token stops working within that time on every
 * gateway replica. Unknown tokens are cached too, so guessing costs no database load.
 */
export class Authenticator {
  private cache = new Map<string, CacheEntry>()
  private inFlight = new Map<string, Promise<CacheEntry>>()

  constructor(
    private readonly repo: TokenStore,
    private readonly opts: { ttlMs: number; maxEntries?: number; onError?: (err: unknown) => void },
  ) {}

  /**
   * The result at once when the token's entry is cached (most requests: no promise, no tick),
   * else once the token has been looked up.
   */
  authenticate(
    headers: Record<string, string | string[] | undefined>,
    now = Date.now(),
  ): AuthResult | Promise<AuthResult> {
    const creds = credentialsFrom(headers)
    if (!creds)
      return {
        ok: false,
        reason: headers.authorization === undefined ? 'no credentials' : 'unsupported authorization',
      }
    if (!isTokenShaped(creds.token)) return { ok: false, reason: 'malformed token' }
    const hit = this.cache.get(creds.token)
    if (hit && hit.until > now) return this.decide(hit, creds, now)
    return this.lookup(creds.token, now).then((entry) => this.decide(entry, creds, now))
  }

  private decide(entry: CacheEntry, creds: Credentials, now: number): AuthResult {
    const record = entry.record
    if (!record) return { ok: false, reason: 'unknown token' }
    const companyId = record.idempresa
    if (record.revoked_at) return { ok: false, reason: 'revoked token', companyId }
    if (record.expires_at && record.expires_at.getTime() <= now)
      return { ok: false, reason: 'expired token', companyId }
    if (creds.username !== undefined && creds.username.toLowerCase() !== record.username.toLowerCase())
      return { ok: false, reason: 'username does not own the token', companyId }
    this.touch(record, now)
    // Shared by the requests of the entry's life: nothing downstream changes a principal.
    if (!entry.granted) {
      const principal: Principal = {
        companyId,
        userId: record.user_id,
        username: record.username,
        tokenId: record.id,
        companyCenters: record.company_centers,
        allowedCenters: record.centers
          ? record.centers.filter((c) => record.company_centers.includes(c))
          : null,
      }
      const names = namesWithin(record.company_name, record.center_names)
      entry.granted = {
        principal,
        named: { ...principal, names },
        scopes: record.scopes ? record.scopes.filter(isScope) : DEFAULT_SCOPES,
      }
    }
    return { ok: true, ...entry.granted }
  }

  /**
   * The entry of a token, by the token itself: a hit costs one map lookup, and the token is hashed
   * (and compared in constant time with the stored hash) only when it is looked up in the database.
   */
  private lookup(token: string, now: number): Promise<CacheEntry> {
    // Single flight: when an entry expires under load, the requests that miss together share one
    // lookup instead of each sending its own.
    let pending = this.inFlight.get(token)
    if (!pending) {
      const hash = hashToken(token)
      pending = this.repo
        .tokensByLookup(tokenLookup(token))
        .then((candidates) => {
          const entry = {
            record: candidates.find((c) => sameHash(c.token_hash, hash)) ?? null,
            until: now + this.opts.ttlMs,
          }
          this.cache.delete(token)
          this.cache.set(token, entry)
          if (this.cache.size > (this.opts.maxEntries ?? 10_000))
            this.cache.delete(this.cache.keys().next().value!)
          return entry
        })
        .finally(() => this.inFlight.delete(token))
      this.inFlight.set(token, pending)
    }
    return pending
  }

  /** `last_used_at`, at most once a minute per token, off the request path. */
  private touch(record: TokenRecord, now: number) {
    if (record.last_used_at && now - record.last_used_at.getTime() < LAST_USED_EVERY_MS) return
    record.last_used_at = new Date(now)
    this.repo.touchToken(record.idempresa, record.id).catch((err) => this.opts.onError?.(err))
  }
}

/**
 * The most characters of center codes and names an assertion carries: enough for a clinic group's
 * centers (80 of 10-character codes and 15-character names), well under the assertion's size
 * limit whatever the company's size. Centers past it, in code order, go without their name (a
 * consent then shows its center's code).
 */
export const CENTER_NAMES_BUDGET = 2048

/** The company's name and as many of its centers' names (in code order) as the budget allows. */
export function namesWithin(company: string, centers: Record<string, string>): CompanyNames {
  const kept: Record<string, string> = {}
  let used = 0
  for (const code of Object.keys(centers).sort()) {
    used += code.length + centers[code]!.length
    if (used > CENTER_NAMES_BUDGET) break
    kept[code] = centers[code]!
  }
  return { company, centers: kept }
}
