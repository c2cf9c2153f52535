import { LinkTokenParams, PAGE_HEADERS, linkTokenOf, toAppError } from '@clinic/platform/http'
import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify'
import type { PreferenceStore } from '../domain/preference-store'
import { unsubscribeByLink, unsubscribeTarget } from '../domain/set-preference'
import { verifyLink, type UnsubscribeLink } from '../links/tokens'
import {
  askPage,
  donePage,
  invalidLinkPage,
  notFoundPage,
  pageLang,
  unavailablePage,
} from '../links/unsubscribe-page'

export interface UnsubscribeOptions {
  store: PreferenceStore
  /** COMMS_LINK_SECRET; without it every link is invalid (400 page). */
  secret?: string
}

const page = (reply: FastifyReply, status: number, html: string, code?: string) => {
  // The access line names what the page said (never the token: the route is logged, not the URL).
  if (code && !reply.problemCode) reply.problemCode = code
  return reply.code(status).headers(PAGE_HEADERS).send(html)
}

/**
 * RFC 8058 one-click unsubscribe, `PUBLIC_BASE_URL/p/u/<token>` (no API token: the signed link is
 * the authority; the gateway forwards `/p/` pages). GET shows a page with one button and changes
 * nothing (link scanners and previews open links); POST, from that button or straight from a mail
 * client (`List-Unsubscribe=One-Click`, form-encoded or multipart), opts the message's address out
 * of email in the link's company. Every answer is a page: an altered token 400, an unknown message
 * 404, any other bad request its 4xx, the database away 503. Hidden from the OpenAPI document.
 */
export const unsubscribeRoutes: FastifyPluginAsync<UnsubscribeOptions> = async (app, o) => {
  // Mail clients post `List-Unsubscribe=One-Click` form-encoded or as multipart/form-data (RFC 8058
  // shows both); the token decides, so the body is read (and bounded) but not interpreted.
  app.addContentTypeParser('*', { parseAs: 'string', bodyLimit: 4096 }, (_req, body, done) =>
    done(null, body),
  )
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const e = toAppError(err)
    if (e.status >= 500) req.log[e.status === 503 ? 'warn' : 'error']({ err }, 'unsubscribe link failed')
    reply.problemCode = e.code
    return page(reply, e.status, e.status < 500 ? invalidLinkPage() : unavailablePage())
  })

  const linkOf = async (req: FastifyRequest): Promise<UnsubscribeLink | null> => {
    const token = linkTokenOf(req)
    if (!o.secret) return null
    const v = await verifyLink(o.secret, 'unsubscribe', token, new Date())
    return v.ok ? v.payload : null
  }
  const options = { config: { public: true }, schema: { hide: true, params: LinkTokenParams } }

  app.get('/p/u/*', options, async (req, reply) => {
    const link = await linkOf(req)
    if (!link) return page(reply, 400, invalidLinkPage(), 'link_invalid')
    const lang = pageLang(link.lang)
    if (!(await unsubscribeTarget(o.store, link)))
      return page(reply, 404, notFoundPage(lang), 'link_not_found')
    return page(reply, 200, askPage(lang))
  })

  app.post('/p/u/*', options, async (req, reply) => {
    const link = await linkOf(req)
    if (!link) return page(reply, 400, invalidLinkPage(), 'link_invalid')
    const lang = pageLang(link.lang)
    const outcome = await unsubscribeByLink(o.store, link, String(req.id))
    if (outcome === 'not_found') return page(reply, 404, notFoundPage(lang), 'link_not_found')
    req.log.info({ company_id: link.companyId, message_id: link.messageId }, 'email unsubscribe')
    return page(reply, 200, donePage(lang))
  })
}
