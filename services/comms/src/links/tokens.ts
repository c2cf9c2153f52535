import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Signed, single-purpose link tokens (no API token behind them): `<payload>.<mac>`, both base64url,
 * the MAC an HMAC-SHA256 under COMMS_LINK_SECRET over the purpose and the payload, so a token of
 * one purpose never passes for another. Payloads carry ids only (tokens end up in URLs and logs).
 */
export type LinkPurpose = 'appointment' | 'unsubscribe'

/** `PUBLIC_BASE_URL/p/a/<token>`: confirm or cancel one appointment, once, until it starts. */
export interface AppointmentLink {
  /** The token's id (the reminder's): a used one is recorded in link_uses. */
  id: string
  companyId: number
  appointmentId: string
  /** `es` or `en`: the page's language. */
  lang: string
  /** Seconds since the epoch: the appointment's start. */
  exp: number
}

/** `PUBLIC_BASE_URL/p/u/<token>`: RFC 8058 one-click unsubscribe from one message's address. */
export interface UnsubscribeLink {
  companyId: number
  messageId: string
  lang: string
}

type PayloadOf<P extends LinkPurpose> = P extends 'appointment' ? AppointmentLink : UnsubscribeLink

const mac = (secret: string, purpose: LinkPurpose, payload: string) =>
  createHmac('sha256', secret).update(`clinic-link:${purpose}:${payload}`).digest()

export function signLink<P extends LinkPurpose>(secret: string, purpose: P, payload: PayloadOf<P>): string {
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url')
  return `${body}.${mac(secret, purpose, body).toString('base64url')}`
}

export type Verified<P extends LinkPurpose> =
  { ok: true; payload: PayloadOf<P> } | { ok: false; reason: 'altered' | 'expired' }

/** The token's payload if its MAC holds (and, for appointment links, it has not expired at `now`). */
export function verifyLink<P extends LinkPurpose>(
  secret: string,
  purpose: P,
  token: string,
  now: Date,
): Verified<P> {
  const [body, given, extra] = token.split('.')
  if (!body || !given || extra !== undefined || token.length > 1024) return { ok: false, reason: 'altered' }
  const expected = mac(secret, purpose, body)
  const actual = Buffer.from(given, 'base64url')
  if (actual.length !== expected.length || !timingSafeEqual(actual, expected))
    return { ok: false, reason: 'altered' }
  let payload: PayloadOf<P>
  try {
    payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as PayloadOf<P>
  } catch {
    return { ok: false, reason: 'altered' }
  }
  // Signed JSON that is no object (`null` would throw below) was never made by signLink.
  if (typeof payload !== 'object' || payload === null) return { ok: false, reason: 'altered' }
  if (purpose === 'appointment' && (payload as AppointmentLink).exp * 1000 <= now.getTime())
    return { ok: false, reason: 'expired' }
  return { ok: true, payload }
}
