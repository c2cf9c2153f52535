/** An API token with its user and company, as a request is checked against it. */
export interface TokenRecord {
  id: string
  idempresa: number
  user_id: string
  username: string
  token_hash: Buffer
  centers: string[] | null
  /** null: every scope (a token made without a list, or before scopes existed). */
  scopes: string[] | null
  company_centers: string[]
  /** The company's name and its centers' names by code: what services show people (a consent). */
  company_name: string
  center_names: Record<string, string>
  expires_at: Date | null
  revoked_at: Date | null
  last_used_at: Date | null
}

/** What checking a token needs from storage (db/identity-repository.ts). */
export interface TokenStore {
  /** The tokens whose lookup prefix is `lookup` (the caller compares the full hash). */
  tokensByLookup(lookup: string): Promise<TokenRecord[]>
  /** Notes that the token was used now. */
  touchToken(companyId: number, id: string): Promise<void>
}
