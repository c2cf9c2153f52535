import { errors, jwtVerify, SignJWT } from 'jose'

/**
 * Signed, single-purpose link tokens (no API token behind them): a JWT (RFC 7519, a JWS in compact
 * form, RFC 7515) made and checked with `jose`, HS256 under COMMS_LINK_SECRET (comms alone makes and
 * checks them, so no key pair: nothing else needs to verify them), `typ` LINK_TYPE and the purpose
 * as its audience, so a token of one purpose never passes for another. Only HS256 is accepted
 * (never `none`). Payloads carry ids only (tokens end up in URLs and logs).
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

export const LINK_TYPE = 'clinic-link+jwt'
const MAX_TOKEN_CHARS = 1024
const audienceOf = (purpose: LinkPurpose) => `clinic-link:${purpose}`
const keyOf = (secret: string) => new TextEncoder().encode(secret)

export function signLink<P extends LinkPurpose>(
  secret: string,
  purpose: P,
  payload: PayloadOf<P>,
): Promise<string> {
  // An appointment link's `exp` is the JWT's own (checked by jose); an unsubscribe link has none.
  return new SignJWT({ ...payload })
    .setProtectedHeader({ alg: 'HS256', typ: LINK_TYPE })
    .setAudience(audienceOf(purpose))
    .sign(keyOf(secret))
}

export type Verified<P extends LinkPurpose> =
  { ok: true; payload: PayloadOf<P> } | { ok: false; reason: 'altered' | 'expired' }

/** The token's payload if its signature holds (and, for appointment links, it has not expired at `now`). */
export async function verifyLink<P extends LinkPurpose>(
  secret: string,
  purpose: P,
  token: string,
  now: Date,
): Promise<Verified<P>> {
  if (token.length > MAX_TOKEN_CHARS) return { ok: false, reason: 'altered' }
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), {
      algorithms: ['HS256'],
      typ: LINK_TYPE,
      audience: audienceOf(purpose),
      currentDate: now,
      ...(purpose === 'appointment' ? { requiredClaims: ['exp'] } : {}),
    })
    const { aud: _aud, ...fields } = payload
    return { ok: true, payload: fields as unknown as PayloadOf<P> }
  } catch (err) {
    return { ok: false, reason: err instanceof errors.JWTExpired ? 'expired' : 'altered' }
  }
}
