import { errors, jwtVerify, SignJWT } from 'jose'

/**
 * Consent link tokens (`PUBLIC_BASE_URL/p/c/<token>`, no API token behind them): a JWT made and
 * checked with `jose`, HS256 under DOCUMENTS_LINK_SECRET (documents alone makes and checks them),
 * `typ` and audience of their own, expiring with the consent. Ids only: tokens end up in URLs.
 */
export interface ConsentLink {
  /** The link's id (the consent's link_id): a spent or replaced link is refused by it. */
  id: string
  companyId: number
  consentId: string
  /** The page's language. */
  lang: string
  /** Seconds since the epoch: the consent's expiry. */
  exp: number
}

const TYPE = 'clinic-consent-link+jwt'
const AUDIENCE = 'clinic-link:consent'
const MAX_TOKEN_CHARS = 1024
const keyOf = (secret: string) => new TextEncoder().encode(secret)
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

export function signConsentLink(secret: string, link: ConsentLink): Promise<string> {
  return new SignJWT({ ...link })
    .setProtectedHeader({ alg: 'HS256', typ: TYPE })
    .setAudience(AUDIENCE)
    .sign(keyOf(secret))
}

export type VerifiedLink = { ok: true; link: ConsentLink } | { ok: false; reason: 'altered' | 'expired' }

export async function verifyConsentLink(secret: string, token: string, now: Date): Promise<VerifiedLink> {
  if (token.length > MAX_TOKEN_CHARS) return { ok: false, reason: 'altered' }
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), {
      algorithms: ['HS256'],
      typ: TYPE,
      audience: AUDIENCE,
      currentDate: now,
      requiredClaims: ['exp'],
    })
    const p = payload as Partial<Record<keyof ConsentLink, unknown>>
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
    const valid =
      typeof p.id === 'string' &&
      uuid.test(p.id) &&
      Number.isSafeInteger(p.companyId) &&
      (p.companyId as number) > 0 &&
      typeof p.consentId === 'string' &&
      uuid.test(p.consentId) &&
      typeof p.lang === 'string' &&
      typeof p.exp === 'number'
    return valid ? { ok: true, link: p as ConsentLink } : { ok: false, reason: 'altered' }
  } catch (err) {
    return { ok: false, reason: err instanceof errors.JWTExpired ? 'expired' : 'altered' }
  }
}

/**
 * The signed PDF's link on the page after a grant (`/p/c/pdf/<token>`): 24 hours, its own `typ` and
 * audience (a consent link is never taken for it, nor the reverse), naming the document.
 */
export interface ConsentPdfLink {
  companyId: number
  consentId: string
  documentId: string
  exp: number
}
const PDF_TYPE = 'clinic-consent-pdf+jwt'
const PDF_AUDIENCE = 'clinic-link:consent-pdf'
/** How long the page after a grant offers the signed PDF. */
export const PDF_LINK_SECONDS = 24 * 3600

export function signConsentPdfLink(secret: string, link: ConsentPdfLink): Promise<string> {
  return new SignJWT({ ...link })
    .setProtectedHeader({ alg: 'HS256', typ: PDF_TYPE })
    .setAudience(PDF_AUDIENCE)
    .sign(keyOf(secret))
}

export async function verifyConsentPdfLink(
  secret: string,
  token: string,
  now: Date,
): Promise<{ ok: true; link: ConsentPdfLink } | { ok: false; reason: 'altered' | 'expired' }> {
  if (token.length > MAX_TOKEN_CHARS) return { ok: false, reason: 'altered' }
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), {
      algorithms: ['HS256'],
      typ: PDF_TYPE,
      audience: PDF_AUDIENCE,
      currentDate: now,
      requiredClaims: ['exp'],
    })
    const p = payload as Partial<Record<keyof ConsentPdfLink, unknown>>
    const valid =
      Number.isSafeInteger(p.companyId) &&
      (p.companyId as number) > 0 &&
      typeof p.consentId === 'string' &&
      UUID.test(p.consentId) &&
      typeof p.documentId === 'string' &&
      UUID.test(p.documentId)
    return valid ? { ok: true, link: p as ConsentPdfLink } : { ok: false, reason: 'altered' }
  } catch (err) {
    return { ok: false, reason: err instanceof errors.JWTExpired ? 'expired' : 'altered' }
  }
}
