import { Readable } from 'node:stream'
import { LinkTokenParams, linkPages, linkRequestOf } from '@clinic/platform/http'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import { answerConsentLink } from '../domain/answer-consent-link'
import type { LinkDeps } from '../domain/consent-links'
import { openConsentLink } from '../domain/open-consent-link'
import { openConsentPdf } from '../domain/open-consent-pdf'
import { contentDisposition } from '../domain/filename'
import { renderConsentPage } from '../pages/consent-page'

const AnswerForm = Type.Object(
  {
    answer: Type.Union([Type.Literal('accept'), Type.Literal('decline')]),
    name: Type.Optional(Type.String({ maxLength: 300 })),
  },
  { additionalProperties: false },
)

/**
 * `GET /p/c/<token>`: the consent's exact text, whose behalf the signer acts on, a name field and
 * Accept / Decline; `POST` the same URL (a form): the answer, once. Public for the platform's
 * assertion check (the gateway forwards services.json `pages` without an API token): the signed
 * token is the authentication. Every outcome is an HTML page, never a 5xx for a bad token.
 */
export const consentPageRoutes: FastifyPluginAsync<LinkDeps> = async (app, deps) => {
  const sendPage = linkPages(app, { prefix: '/p/c', render: renderConsentPage, bodyLimit: 2048 })
  const config = { public: true }
  // The signed PDF the page after a grant offers (24 hours): data to keep, never a page to run.
  app.get('/p/c/pdf/*', { config, schema: { hide: true, params: LinkTokenParams } }, async (req, reply) => {
    const pdf = await openConsentPdf(deps, linkRequestOf(req))
    if (pdf.kind !== 'pdf') return sendPage(req, reply, pdf)
    return reply
      .headers({
        'content-type': 'application/pdf',
        'content-disposition': contentDisposition(pdf.filename),
        'content-length': pdf.size,
        'x-content-type-options': 'nosniff',
        'content-security-policy': "sandbox; default-src 'none'",
        'cache-control': 'private, no-store',
        'referrer-policy': 'no-referrer',
      })
      .send(Readable.from(pdf.bytes, { highWaterMark: 1 }))
  })
  app.get('/p/c/*', { config, schema: { hide: true, params: LinkTokenParams } }, async (req, reply) =>
    sendPage(req, reply, await openConsentLink(deps, linkRequestOf(req))),
  )
  app.post(
    '/p/c/*',
    { config, schema: { hide: true, params: LinkTokenParams, body: AnswerForm } },
    async (req, reply) => {
      const form = req.body as { answer?: unknown; name?: unknown }
      const forwarded = req.headers['x-forwarded-for']
      const ip =
        (typeof forwarded === 'string' ? forwarded.split(',')[0]!.trim() : undefined) || req.ip || null
      return sendPage(
        req,
        reply,
        await answerConsentLink(deps, {
          ...linkRequestOf(req),
          answer: form.answer,
          name: form.name,
          ip,
          userAgent: req.headers['user-agent'] ?? null,
        }),
      )
    },
  )
}
