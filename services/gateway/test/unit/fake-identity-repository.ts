import { randomUUID } from 'node:crypto'
import type { CloudEvent } from '@clinic/platform'
import type {
  IdentityRepository,
  NewToken,
  RevokedToken,
  TokenRecord,
} from '../../src/db/identity-repository'

interface StoredToken {
  id: string
  idempresa: number
  user_id: string
  name: string | null
  lookup: string
  token_hash: Buffer
  centers: string[] | null
  scopes: string[] | null
  expires_at: Date | null
  revoked_at: Date | null
  last_used_at: Date | null
}

const pgError = (code: string, message: string) => Object.assign(new Error(message), { code })

/**
 * The identity repository in memory, with the constraints of the real schema (unique company id,
 * center per company, case-insensitive username; foreign keys) reported as PostgreSQL would
 * (23505 / 23503), and counters for the calls the authenticator makes.
 */
export class FakeIdentityRepository implements IdentityRepository {
  companies = new Map<number, string>()
  centers: Array<{ idempresa: number; code: string; name: string }> = []
  users: Array<{ idempresa: number; id: string; username: string }> = []
  tokens: StoredToken[] = []
  lookups: string[] = []
  touches: Array<{ companyId: number; id: string }> = []
  touchError: Error | null = null
  /** Events written with the tokens (the outbox), in order. */
  events: CloudEvent[] = []
  /** The database clock, for `last_used_at`. */
  clock: () => Date = () => new Date()

  async tokensByLookup(lookup: string): Promise<TokenRecord[]> {
    this.lookups.push(lookup)
    return this.tokens
      .filter((t) => t.lookup === lookup)
      .map((t) => ({
        id: t.id,
        idempresa: t.idempresa,
        user_id: t.user_id,
        username: this.users.find((u) => u.id === t.user_id)!.username,
        token_hash: t.token_hash,
        centers: t.centers,
        scopes: t.scopes,
        company_centers: this.centers
          .filter((c) => c.idempresa === t.idempresa)
          .map((c) => c.code)
          .sort(),
        company_name: this.companies.get(t.idempresa)!,
        center_names: Object.fromEntries(
          this.centers.filter((c) => c.idempresa === t.idempresa).map((c) => [c.code, c.name]),
        ),
        expires_at: t.expires_at,
        revoked_at: t.revoked_at,
        last_used_at: t.last_used_at,
      }))
  }

  async touchToken(companyId: number, id: string): Promise<void> {
    this.touches.push({ companyId, id })
    if (this.touchError) throw this.touchError
    const t = this.tokens.find((x) => x.idempresa === companyId && x.id === id)
    if (t) t.last_used_at = this.clock()
  }

  async createCompany(id: number, name: string): Promise<void> {
    if (this.companies.has(id))
      throw pgError('23505', 'duplicate key value violates unique constraint "companies_pkey"')
    this.companies.set(id, name)
  }

  async createCenter(companyId: number, code: string, name: string): Promise<void> {
    if (!this.companies.has(companyId)) throw pgError('23503', 'violates foreign key constraint')
    if (this.centers.some((c) => c.idempresa === companyId && c.code === code))
      throw pgError('23505', 'duplicate key value violates unique constraint "centers_pkey"')
    this.centers.push({ idempresa: companyId, code, name })
  }

  async createUser(companyId: number, username: string): Promise<string> {
    if (!this.companies.has(companyId)) throw pgError('23503', 'violates foreign key constraint')
    if (this.users.some((u) => u.username.toLowerCase() === username.toLowerCase()))
      throw pgError('23505', 'duplicate key value violates unique constraint "users_username"')
    const id = randomUUID()
    this.users.push({ idempresa: companyId, id, username })
    return id
  }

  async userByName(username: string) {
    const u = this.users.find((x) => x.username.toLowerCase() === username.toLowerCase())
    return u && { ...u }
  }

  async centerCodes(companyId: number): Promise<string[]> {
    return this.centers
      .filter((c) => c.idempresa === companyId)
      .map((c) => c.code)
      .sort()
  }

  async createToken(t: NewToken, events: CloudEvent[] = []): Promise<string> {
    const id = t.id ?? randomUUID()
    this.events.push(...events)
    this.tokens.push({
      id,
      idempresa: t.companyId,
      user_id: t.userId,
      name: t.name,
      lookup: t.lookup,
      token_hash: t.hash,
      centers: t.centers,
      scopes: t.scopes ?? null,
      expires_at: t.expiresAt,
      revoked_at: null,
      last_used_at: null,
    })
    return id
  }

  async tokensOfUser(userId: string) {
    return this.tokens
      .filter((t) => t.user_id === userId)
      .reverse()
      .map((t) => ({
        id: t.id,
        name: t.name,
        centers: t.centers,
        scopes: t.scopes,
        created_at: this.clock(),
        expires_at: t.expires_at,
        revoked_at: t.revoked_at,
        last_used_at: t.last_used_at,
      }))
  }

  async revokeToken(id: string, events: (token: RevokedToken) => CloudEvent[] = () => []) {
    const t = this.tokens.find((x) => x.id === id)
    if (!t) return null
    const revokedNow = t.revoked_at === null
    t.revoked_at ??= new Date()
    const username = this.users.find((u) => u.id === t.user_id)!.username
    const token: RevokedToken = { ...t, username }
    if (revokedNow) this.events.push(...events(token))
    return { token, revokedNow }
  }
}

/** A writable stream stand-in that keeps what was written. */
export class Sink {
  text = ''
  write(chunk: string): boolean {
    this.text += chunk
    return true
  }
}
