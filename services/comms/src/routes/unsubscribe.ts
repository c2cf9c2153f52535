import { verifyLink } from '@clinic/platform/core'
import { LinkTokenParams, linkPages, linkTokenOf } from '@clinic/platform/http'
import type { FastifyPluginAsync, FastifyRequest } from 'fastify'
import { UNSUBSCRIBE_LINK, type UnsubscribeLink } from '../domain/link-kinds'
import type { PreferenceStore } from '../domain/preference-store'
import { unsubscribeByLink, unsubscribeTarget } from '../domain/set-preference'
import { renderUnsubscribePage } from '../pages/unsubscribe-page'

export interface UnsubscribeOptions {
  store: PreferenceStore
  /** COMMS_LINK_SECRET; without it every link is invalid (400 page). */
  secret?: string
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
  const sendPage = linkPages(app, {
    prefix: '/p/u',
    render: renderUnsubscribePage,
    bodyLimit: 4096,
    anyBody: true,
  })
  const linkOf = async (req: FastifyRequest): Promise<UnsubscribeLink | null> => {
    if (!o.secret) return null
    const v = await verifyLink(o.secret, UNSUBSCRIBE_LINK, linkTokenOf(req), new Date())
    return v.ok ? v.claims : null
  }
  const options = { config: { public: true }, schema: { hide: true, params: LinkTokenParams } }

  app.get('/p/u/*', options, async (req, reply) => {
    const link = await linkOf(req)
    if (!link) return sendPage(req, reply, { kind: 'invalid' })
    if (!(await unsubscribeTarget(o.store, link))) return sendPage(req, reply, { kind: 'not_found' })
    return sendPage(req, reply, { kind: 'ask' })
  })

  app.post('/p/u/*', options, async (req, reply) => {
    const link = await linkOf(req)
    if (!link) return sendPage(req, reply, { kind: 'invalid' })
    const outcome = await unsubscribeByLink(o.store, link, String(req.id))
    if (outcome === 'not_found') return sendPage(req, reply, { kind: 'not_found' })
    req.log.info({ company_id: link.companyId, message_id: link.messageId }, 'email unsubscribe')
    return sendPage(req, reply, { kind: 'done' })
  })
}
