import type { Knex } from 'knex'
import { enqueueEvents, uuidv7, type CloudEvent } from '@clinic/platform'
import type { TokenRecord } from '../auth/token-store'

export type { TokenRecord }

export interface TokenSummary {
  id: string
  name: string | null
  centers: string[] | null
  scopes: string[] | null
  created_at: Date
  expires_at: Date | null
  revoked_at: Date | null
  last_used_at: Date | null
}

/**
 * The most characters of a company's or center's name an assertion carries: names travel in every
 * assertion (they are for people: a consent's message, page and PDF), which stays well under the
 * assertion's size limit.
 */
const NAME_CHARS = 80

/** All reads and writes of the identity schema. The admin CLI and the gateway share it. */
/** A token as `token:create` stores it: its lookup prefix and hash, never the token. */
export interface NewToken {
  id?: string
  companyId: number
  userId: string
  name: string | null
  lookup: string
  hash: Buffer
  centers: string[] | null
  scopes?: string[] | null
  expiresAt: Date | null
}

export class KnexIdentityRepository {
  constructor(private readonly knex: Knex) {}

  /** Candidate tokens for a lookup prefix, with their owner and the company's centers. */
  async tokensByLookup(lookup: string): Promise<TokenRecord[]> {
    const { rows } = await this.knex.raw(
      `SELECT t.id, t.idempresa, t.user_id, u.username, t.token_hash, t.centers, t.scopes, t.expires_at,
              t.revoked_at, t.last_used_at,
              coalesce((SELECT array_agg(c.code ORDER BY c.code) FROM centers c WHERE c.idempresa = t.idempresa), '{}') AS company_centers,
              (SELECT left(co.name, ${NAME_CHARS}) FROM companies co WHERE co.id = t.idempresa) AS company_name,
              coalesce((SELECT jsonb_object_agg(c.code, left(c.name, ${NAME_CHARS})) FROM centers c WHERE c.idempresa = t.idempresa), '{}') AS center_names
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

  /** A new token and `events` (its `token.created`) in one transaction: both or neither. */
  async createToken(t: NewToken, events: CloudEvent[] = []): Promise<string> {
    const id = t.id ?? uuidv7()
    await this.knex.transaction(async (trx) => {
      await trx('api_tokens').insert({
        idempresa: t.companyId,
        id,
        user_id: t.userId,
        name: t.name,
        lookup: t.lookup,
        token_hash: t.hash,
        centers: t.centers,
        scopes: t.scopes ?? null,
        expires_at: t.expiresAt,
      })
      await enqueueEvents(trx, events)
    })
    return id
  }

  /** A user's tokens, newest first: what they are, never the secret or its hash. */
  async tokensOfUser(userId: string): Promise<TokenSummary[]> {
    return this.knex('api_tokens')
      .where({ user_id: userId })
      .orderBy('created_at', 'desc')
      .select('id', 'name', 'centers', 'scopes', 'created_at', 'expires_at', 'revoked_at', 'last_used_at')
  }

  /**
   * Revokes a token; revoking twice keeps the first time. Null when there is no such token, else
   * what it is and whether this call revoked it: then `events(token)` (its `token.revoked`) are
   * written in the same transaction.
   */
  async revokeToken(
    id: string,
    events: (token: RevokedToken) => CloudEvent[] = () => [],
  ): Promise<{ token: RevokedToken; revokedNow: boolean } | null> {
    return this.knex.transaction(async (trx) => {
      const revoked = await trx('api_tokens')
        .where({ id })
        .whereNull('revoked_at')
        .update({ revoked_at: trx.fn.now() }, ['id'])
      const token: RevokedToken | undefined = await trx('api_tokens as t')
        .join('users as u', (j) => j.on('u.idempresa', 't.idempresa').andOn('u.id', 't.user_id'))
        .where('t.id', id)
        .first(
          't.id',
          't.idempresa',
          't.user_id',
          'u.username',
          't.name',
          't.centers',
          't.scopes',
          't.expires_at',
        )
      if (!token) return null
      if (revoked.length) await enqueueEvents(trx, events(token))
      return { token, revokedNow: revoked.length > 0 }
    })
  }
}

/** A revoked token as `token.revoked` names it: never its secret or hash. */
export interface RevokedToken {
  id: string
  idempresa: number
  user_id: string
  username: string
  name: string | null
  centers: string[] | null
  scopes: string[] | null
  expires_at: Date | null
}

/** What the gateway and the admin CLI use of it (tests give a fake). */
export type IdentityRepository = { [K in keyof KnexIdentityRepository]: KnexIdentityRepository[K] }

export const identityRepository = (knex: Knex): IdentityRepository => new KnexIdentityRepository(knex)
