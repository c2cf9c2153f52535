import type { Knex } from 'knex'
import { uuidv7 } from '@clinic/platform'

export interface TokenRecord {
  id: string
  idempresa: number
  user_id: string
  username: string
  token_hash: Buffer
  centers: string[] | null
  company_centers: string[]
  expires_at: Date | null
  revoked_at: Date | null
  last_used_at: Date | null
}

export interface TokenSummary {
  id: string
  name: string | null
  centers: string[] | null
  created_at: Date
  expires_at: Date | null
  revoked_at: Date | null
  last_used_at: Date | null
}

/** All reads and writes of the identity schema. The admin CLI and the gateway share it. */
export class KnexIdentityRepository {
  constructor(private readonly knex: Knex) {}

  /** Candidate tokens for a lookup prefix, with their owner and the company's centers. */
  async tokensByLookup(lookup: string): Promise<TokenRecord[]> {
    const { rows } = await this.knex.raw(
      `SELECT t.id, t.idempresa, t.user_id, u.username, t.token_hash, t.centers, t.expires_at,
              t.revoked_at, t.last_used_at,
              coalesce((SELECT array_agg(c.code ORDER BY c.code) FROM centers c WHERE c.idempresa = t.idempresa), '{}') AS company_centers
         FROM api_tokens t JOIN users u ON u.idempresa = t.idempresa AND u.id = t.user_id
        WHERE t.lookup = ?`,
      [lookup],
    )
    return rows
  }

  async touchToken(companyId: number, id: string): Promise<void> {
    await this.knex('api_tokens')
      .where({ idempresa: companyId, id })
      .update({ last_used_at: this.knex.fn.now() })
  }

  async createCompany(id: number, name: string) {
    await this.knex('companies').insert({ id, name })
  }

  async createCenter(companyId: number, code: string, name: string) {
    await this.knex('centers').insert({ idempresa: companyId, code, name })
  }

  async createUser(companyId: number, username: string): Promise<string> {
    const id = uuidv7()
    await this.knex('users').insert({ idempresa: companyId, id, username })
    return id
  }

  async userByName(
    username: string,
  ): Promise<{ idempresa: number; id: string; username: string } | undefined> {
    return this.knex('users')
      .whereRaw('lower(username) = lower(?)', [username])
      .first('idempresa', 'id', 'username')
  }

  async centerCodes(companyId: number): Promise<string[]> {
    return (await this.knex('centers').where({ idempresa: companyId }).orderBy('code').select('code')).map(
      (r) => r.code,
    )
  }

  async createToken(t: {
    companyId: number
    userId: string
    name: string | null
    lookup: string
    hash: Buffer
    centers: string[] | null
    expiresAt: Date | null
  }): Promise<string> {
    const id = uuidv7()
    await this.knex('api_tokens').insert({
      idempresa: t.companyId,
      id,
      user_id: t.userId,
      name: t.name,
      lookup: t.lookup,
      token_hash: t.hash,
      centers: t.centers,
      expires_at: t.expiresAt,
    })
    return id
  }

  /** A user's tokens, newest first: what they are, never the secret or its hash. */
  async tokensOfUser(userId: string): Promise<TokenSummary[]> {
    return this.knex('api_tokens')
      .where({ user_id: userId })
      .orderBy('created_at', 'desc')
      .select('id', 'name', 'centers', 'created_at', 'expires_at', 'revoked_at', 'last_used_at')
  }

  /** Returns false when there is no such token. Revoking twice keeps the first time. */
  async revokeToken(id: string): Promise<boolean> {
    const n = await this.knex('api_tokens')
      .where({ id })
      .update({ revoked_at: this.knex.raw('coalesce(revoked_at, now())') })
    return n > 0
  }
}

/** What the gateway and the admin CLI use of it (tests give a fake). */
export type IdentityRepository = { [K in keyof KnexIdentityRepository]: KnexIdentityRepository[K] }

export const identityRepository = (knex: Knex): IdentityRepository => new KnexIdentityRepository(knex)
