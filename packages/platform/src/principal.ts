/**
 * Who is calling, as the gateway established it from the token (or who work done later acts for):
 * what every service's domain is handed in `ctx.auth`.
 */
export interface Principal {
  companyId: number
  userId: string
  username: string
  tokenId: string
  /** Every center code of the company (to check a codalmacen sent in a body). */
  companyCenters: string[]
  /** The centers the token is limited to, or null when it may use them all. */
  allowedCenters: string[] | null
  /**
   * What people are shown of the company, from the gateway's identity records: its name and each
   * center's name by code (documents names the clinic in a consent's message, page and PDF).
   * Absent where no gateway made the principal (events, links, most tests).
   */
  names?: CompanyNames
}

/** A company's and its centers' names as the gateway's identity schema holds them. */
export interface CompanyNames {
  company: string
  /** center code -> its name */
  centers: Record<string, string>
}
