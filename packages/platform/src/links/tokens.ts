import { Type, type Static, type TObject } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { decodeJwt, errors, jwtVerify, SignJWT } from 'jose'
import { ctxOfCause, type Ctx } from '../context'
import { UUID_PATTERN } from '../ids'

/**
 * Signed link tokens for pages people open from a message, with no API token behind them (a patient
 * link, a consent link, an unsubscribe link): a JWT (RFC 7519, a JWS in compact form, RFC 7515)
 * made and checked with `jose`, HS256 under the secret of the one service that makes and checks
 * them (no key pair: nothing else verifies them). Each kind of link has its purpose as its audience
 * (`clinic-link:<purpose>`) and its `typ`, so a token of one kind never passes for another, and its
 * claims (ids only: tokens end up in URLs and logs), checked after the signature. Only HS256 is
 * accepted (never `none`).
 */
export interface LinkKind<T extends TObject = TObject> {
  /** The audience is `clinic-link:<purpose>`. */
  purpose: string
  /** The JWS `typ` header: LINK_TYPE unless a kind's links were first made with another. */
  typ: string
  /** What its payload must hold besides `aud`; a token whose claims do not fit is as altered. */
  claims: T
  /** Whether it carries `exp` (and is refused from then on): its claims name `exp`; else it never expires. */
  expires: boolean
}

export const LINK_TYPE = 'clinic-link+jwt'
/** A link's token is refused past this length before it is parsed. */
export const MAX_LINK_TOKEN_CHARS = 1024

/** The claims links share: ids, the company, the page's language (BCP 47), the expiry (seconds). */
export const LinkClaim = {
  id: Type.String({ pattern: UUID_PATTERN }),
  companyId: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  lang: Type.String({ maxLength: 35 }),
  exp: Type.Number(),
}

/**
 * The claims of a link sent in a message to act once on one record before it expires (a patient's
 * appointment, a consent): its own id (spent on use), the company, the record's id under `record`'s
 * name, the page's language and the expiry.
 */
export const actOnceClaims = <R extends string>(record: R) =>
  Type.Object({
    id: LinkClaim.id,
    companyId: LinkClaim.companyId,
    lang: LinkClaim.lang,
    exp: LinkClaim.exp,
    ...({ [record]: LinkClaim.id } as Record<R, typeof LinkClaim.id>),
  })

/**
 * A kind of link: `typ` LINK_TYPE unless given (the consent links kept theirs); it expires when its
 * claims have `exp`.
 */
export const linkKind = <T extends TObject>(k: {
  purpose: string
  typ?: string
  claims: T
}): LinkKind<T> => ({
  typ: LINK_TYPE,
  ...k,
  expires: (k.claims.required ?? []).includes('exp'),
})

export type LinkClaims<K extends LinkKind> = Static<K['claims']>

const audienceOf = (kind: LinkKind) => `clinic-link:${kind.purpose}`
const keyOf = (secret: string) => new TextEncoder().encode(secret)

/** A token of `kind` for `claims` (an expiring kind's `exp` is among them). */
export function signLink<K extends LinkKind>(
  secret: string,
  kind: K,
  claims: LinkClaims<K>,
): Promise<string> {
  return new SignJWT({ ...(claims as Record<string, unknown>) })
    .setProtectedHeader({ alg: 'HS256', typ: kind.typ })
    .setAudience(audienceOf(kind))
    .sign(keyOf(secret))
}

export type VerifiedLink<K extends LinkKind> =
  { ok: true; claims: LinkClaims<K> } | { ok: false; reason: 'altered' | 'expired' }

/**
 * The token's claims if it is a link of `kind` whose signature holds, whose claims fit and (an
 * expiring kind) whose `exp` is after `now`; else why not: `expired`, or `altered` for anything else
 * (another key, algorithm, kind or shape, a token too long to be ours).
 */
export async function verifyLink<K extends LinkKind>(
  secret: string,
  kind: K,
  token: string,
  now: Date,
): Promise<VerifiedLink<K>> {
  if (token.length > MAX_LINK_TOKEN_CHARS) return { ok: false, reason: 'altered' }
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), {
      algorithms: ['HS256'],
      typ: kind.typ,
      audience: audienceOf(kind),
      currentDate: now,
      ...(kind.expires ? { requiredClaims: ['exp'] } : {}),
    })
    const { aud: _aud, ...claims } = payload
    return Value.Check(kind.claims, claims)
      ? { ok: true, claims: claims as LinkClaims<K> }
      : { ok: false, reason: 'altered' }
  } catch (err) {
    return { ok: false, reason: err instanceof errors.JWTExpired ? 'expired' : 'altered' }
  }
}

/** The page a link that does not open shows: none could be checked, or its token is altered or expired. */
export type ClosedLink = { kind: 'invalid' } | { kind: 'expired' }

/**
 * A page's link: its claims, or the page saying why not (`invalid` without a secret to check it or
 * for an altered token, `expired` for an expired one), as every link page answers.
 */
export async function openLink<K extends LinkKind>(
  secret: string | undefined,
  kind: K,
  token: string,
  now: Date,
): Promise<{ link: LinkClaims<K> } | { page: ClosedLink }> {
  if (!secret) return { page: { kind: 'invalid' } }
  const verified = await verifyLink(secret, kind, token, now)
  if (!verified.ok) return { page: { kind: verified.reason === 'expired' ? 'expired' : 'invalid' } }
  return { link: verified.claims }
}

/**
 * Who acts through a link: the company its token names, as `actor` (the audit trail's actor: no
 * user, token or centers of its own), in the request's trace.
 */
export const linkCtx = (
  companyId: number,
  actor: string,
  req: Pick<Ctx, 'log' | 'requestId' | 'traceparent' | 'tracestate'>,
): Ctx =>
  ctxOfCause(
    {
      companyId,
      cause: {
        actorname: actor,
        requestid: req.requestId,
        traceparent: req.traceparent,
        tracestate: req.tracestate,
      },
    },
    req.log.child({ company_id: companyId }),
  )

/**
 * The language a token's payload names, read without checking it (an expired or altered link's page
 * still speaks it): it only picks among a page's languages, never what the page does.
 */
export function linkLanguageOf(token: string): string | undefined {
  if (token.length > MAX_LINK_TOKEN_CHARS) return undefined
  try {
    const { lang } = decodeJwt(token)
    return typeof lang === 'string' ? lang : undefined
  } catch {
    return undefined
  }
}
