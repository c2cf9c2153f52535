import { LinkTokenParams, linkPages, linkRequestOf } from '@clinic/platform/http'
import { OFFER_ACTIONS } from '@clinic/platform/core'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import { answerOfferLink, openOfferLink, type OfferLinkDeps } from '../domain/offer-links'
import { renderOfferPage } from '../pages/offer-page'

const AnswerForm = Type.Object(
  { action: Type.Union(OFFER_ACTIONS.map((a) => Type.Literal(a))) },
  { additionalProperties: false },
)

/**
 * `GET /p/w/<token>`: the waitlist offer an offer's message links to, with Accept and Decline while
 * it is open; `POST` the same URL (a form, `action=accept|decline`): the answer. Public as `/p/a`
 * (the signed token is the authentication; the gateway forwards services.json `pages`), hidden
 * from the OpenAPI document, every outcome an HTML page: 200 open, booked or declined, 409 taken
 * by the clinic meanwhile, 410 expired, 404 unknown or withdrawn, 400 an altered token or a form
 * that is not ours, 503 the appointments service or the database away (nothing answered).
 */
export const waitlistLinkRoutes: FastifyPluginAsync<OfferLinkDeps> = async (app, deps) => {
  const sendPage = linkPages(app, { prefix: '/p/w', render: renderOfferPage, bodyLimit: 1024 })
  const config = { public: true }
  app.get('/p/w/*', { config, schema: { hide: true, params: LinkTokenParams } }, async (req, reply) =>
    sendPage(req, reply, await openOfferLink(deps, linkRequestOf(req))),
  )
  app.post(
    '/p/w/*',
    { config, schema: { hide: true, params: LinkTokenParams, body: AnswerForm } },
    async (req, reply) => {
      const action = (req.body as { action?: unknown }).action
      return sendPage(req, reply, await answerOfferLink(deps, { ...linkRequestOf(req), action }))
    },
  )
}
