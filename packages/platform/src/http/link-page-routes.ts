import { Type } from '@sinclair/typebox'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { pageLanguage } from '../links/language'
import { linkLanguageOf } from '../links/tokens'
import { PAGE_HEADERS, linkTokenOf } from './link-pages'
import { toAppError } from './problems'

/** The pages every link site shows of its own accord: a bad request, the service away, a failure. */
export type FailurePage = { kind: 'invalid' } | { kind: 'unavailable' } | { kind: 'error' }
/** Their status codes. */
export const FAILURE_STATUS = { invalid: 400, unavailable: 503, error: 500 } as const

/** The languages link pages are written in, the default first. */
export const PAGE_LANGUAGES = ['es', 'en'] as const
export type PageLanguage = (typeof PAGE_LANGUAGES)[number]

export interface LinkPageSite<V extends { kind: string }, L extends string> {
  /** The pages' path prefix, e.g. `/p/a` (a token follows it: `/p/a/<token>`). */
  prefix: string
  /** A page and its status code. */
  render: (view: V | FailurePage, lang: L) => { status: number; html: string }
  /** The largest body its POSTs take, in bytes. */
  bodyLimit: number
  /**
   * Its POSTs are forms (application/x-www-form-urlencoded, parsed); with `anyBody`, any media
   * type, read as text and bounded, not interpreted (RFC 8058's one-click POST comes form-encoded or
   * as multipart).
   */
  anyBody?: boolean
  /** The languages its pages are written in, the default first (pageLanguage); PAGE_LANGUAGES by default. */
  languages?: readonly [L, ...L[]]
}

export type SendPage<V> = (
  req: FastifyRequest,
  reply: FastifyReply,
  view: V | FailurePage,
  status?: number,
) => FastifyReply

/**
 * The common part of a site of link pages, registered in the (encapsulated) plugin of its routes:
 * its body parser; an error handler that makes whatever fails on the way a page too (a request no
 * page of ours makes: `invalid` with its 4xx; the service or the database away: `unavailable`, 503
 * with Retry-After; anything else `error`, 500), never JSON; the bare prefix without a token, the
 * invalid page. Returns how its routes send a page: in the page language (pageLanguage: the token's
 * own, else the browser's), with PAGE_HEADERS, and the access line naming what the page said
 * (`link_<kind>`, never the token: the route is logged, not the URL).
 */
export function linkPages<V extends { kind: string }, L extends string = PageLanguage>(
  app: FastifyInstance,
  site: LinkPageSite<V, L>,
): SendPage<V> {
  const languages = site.languages ?? (PAGE_LANGUAGES as unknown as readonly [L, ...L[]])
  const what = `link page ${site.prefix}`
  const send: SendPage<V> = (req, reply, view, status) => {
    const lang = pageLanguage(languages, {
      link: linkLanguageOf(linkTokenOf(req)),
      acceptLanguage: req.headers['accept-language'],
    })
    const page = site.render(view, lang)
    const code = status ?? page.status
    if (code >= 400 && !reply.problemCode) reply.problemCode = `link_${view.kind}`
    return reply.code(code).headers(PAGE_HEADERS).send(page.html)
  }
  const form = !site.anyBody
  app.addContentTypeParser(
    form ? 'application/x-www-form-urlencoded' : '*',
    { parseAs: 'string', bodyLimit: site.bodyLimit },
    (_req, body, done) => done(null, form ? Object.fromEntries(new URLSearchParams(body as string)) : body),
  )
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const appErr = toAppError(err)
    if (appErr.status === 503) req.log.warn({ err: err.message, code: appErr.code }, `${what} failed`)
    else if (appErr.status >= 500) req.log.error({ err }, `${what} failed`)
    if (appErr.headers) reply.headers(appErr.headers)
    reply.problemCode = appErr.code
    if (appErr.status < 500) return send(req, reply, { kind: 'invalid' }, appErr.status)
    return send(req, reply, { kind: appErr.status === 503 ? 'unavailable' : 'error' })
  })
  // No token at all (`/p/a`, `/p/a/`): the invalid page rather than the API's 401 or 404.
  app.route({
    method: ['GET', 'POST'],
    url: site.prefix,
    config: { public: true },
    schema: { hide: true, params: Type.Object({}) },
    handler: async (req, reply) => send(req, reply, { kind: 'invalid' }),
  })
  return send
}
